"""Clustering scores: NMI (with the paper's "max" normalisation) and ARI."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.errors import LwecInputError

NORMALIZATIONS = ("max", "geometric", "arithmetic", "min")


def _check_pair(labels_a, labels_b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(labels_a).ravel(), np.asarray(labels_b).ravel()
    if len(a) != len(b):
        raise LwecInputError(f"labelings differ in length: {len(a)} vs {len(b)}")
    if len(a) == 0:
        raise LwecInputError("cannot score empty labelings")
    return a, b


def nmi(labels_a, labels_b, normalization: str = "max") -> float:
    """Normalised mutual information of two labelings of the same objects.

    ``normalization`` divides MI by max (default; the paper's Tables and the
    authors' code), geometric or arithmetic mean, or min of the two entropies.
    Two single-cluster labelings score 1.
    """
    if normalization not in NORMALIZATIONS:
        raise LwecInputError(
            f"normalization must be one of {', '.join(NORMALIZATIONS)}; got {normalization!r}"
        )
    from sklearn.metrics import normalized_mutual_info_score

    a, b = _check_pair(labels_a, labels_b)
    return float(normalized_mutual_info_score(a, b, average_method=normalization))


def ari(labels_a, labels_b) -> float:
    """Adjusted Rand index of two labelings of the same objects."""
    from sklearn.metrics import adjusted_rand_score

    a, b = _check_pair(labels_a, labels_b)
    return float(adjusted_rand_score(a, b))


def partition_scores(labels_a: np.ndarray, labels_b: np.ndarray) -> tuple[float, float]:
    """(NMI with the "max" normalisation, ARI) of two labelings, from one contingency table.

    The values of :func:`nmi` and :func:`ari` (to rounding) without their checks
    and at a fraction of their time, for the many labelings the automatic choice
    of k and the reproduction protocol score. Two single-cluster labelings score (1, 1).
    """
    return coded_partition_scores(np.unique(labels_a, return_inverse=True)[1],
                                  np.unique(labels_b, return_inverse=True)[1])


def coded_partition_scores(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """:func:`partition_scores` of two labelings already coded 0..k−1, every code used (as ``np.unique`` codes)."""
    table = np.bincount(a * (int(b.max()) + 1) + b).astype(np.float64)
    return contingency_scores(table, np.bincount(a).astype(np.float64), np.bincount(b).astype(np.float64), len(a))


def contingency_scores(table: np.ndarray, sizes_a: np.ndarray, sizes_b: np.ndarray, n: int) -> tuple[float, float]:
    """:func:`partition_scores` of two labelings of ``n`` objects from the float64 cells of their contingency table
    (any shape) and their class sizes ``sizes_a``, ``sizes_b``; empty cells and classes count for nothing."""
    h_a, h_b = _entropy(sizes_a, n), _entropy(sizes_b, n)
    if max(h_a, h_b) <= 0.0:
        return 1.0, 1.0  # both labelings are a single cluster (scikit-learn's convention)
    mutual = max(0.0, (h_a - _entropy(table, n)) + h_b)
    pairs = lambda counts: float((counts * (counts - 1)).sum() / 2)  # noqa: E731
    both, in_a, in_b = pairs(table), pairs(sizes_a), pairs(sizes_b)
    expected = in_a * in_b / (n * (n - 1) / 2)
    denominator = (in_a + in_b) / 2 - expected
    return mutual / max(h_a, h_b), 1.0 if denominator == 0 else (both - expected) / denominator


def _entropy(counts: np.ndarray, n: int) -> float:
    """Entropy (nats) of the distribution counts / n; zero counts are skipped."""
    p = counts[counts > 0] / n
    return float(-(p * np.log(p)).sum())


@dataclass(frozen=True)
class CutScores:
    """Scores of one consensus method over several k against ground truth."""

    ks: tuple[int, ...]
    scores: tuple[float, ...]
    best_k: int
    best: float
    true_k: int
    true: float | None  # None when the true number of classes is not among ks


def score_cuts(cuts, ks, truth, metric: str = "nmi", normalization: str = "max") -> CutScores:
    """Score each column of an (N, len(ks)) labels-per-k matrix against ``truth``.

    best-k is the best score over ``ks`` (ties: the smallest k); true-k is the score
    at k = number of classes in ``truth``.
    """
    cuts = np.asarray(cuts)
    ks = tuple(int(k) for k in ks)
    if cuts.ndim != 2 or cuts.shape[1] != len(ks):
        raise LwecInputError(f"cuts must have shape (N, {len(ks)}), got {cuts.shape}")
    if metric == "nmi":
        scores = tuple(nmi(cuts[:, j], truth, normalization) for j in range(len(ks)))
    elif metric == "ari":
        scores = tuple(ari(cuts[:, j], truth) for j in range(len(ks)))
    else:
        raise LwecInputError(f"metric must be 'nmi' or 'ari', got {metric!r}")
    best_index = int(np.argmax(scores))
    true_k = len(np.unique(np.asarray(truth)))
    true = scores[ks.index(true_k)] if true_k in ks else None
    return CutScores(ks, scores, ks[best_index], scores[best_index], true_k, true)
