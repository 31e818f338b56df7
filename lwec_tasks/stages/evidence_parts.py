"""What the evidence stage runs on each partition: plain functions of numpy arrays, as the workers run them.

Each partition holds its rows' features (``PartitionRows``, or None once released), base cluster codes (M, n)
and labels (n,) (the written ids). The flow sums the small results (:func:`evidence_sums`), then asks each
partition for its rows' confidences (:func:`partition_confidence`).
"""

from __future__ import annotations

import numba
import numpy as np

from lwec_tasks.core.confidence import ClusterSums, row_confidence
from lwec_tasks.core.confidence_level import ClusterGaussians, LevelCounts, gaussian_posterior, levelled


def evidence_sums(rows, codes_t: np.ndarray, labels: np.ndarray, k: int, offsets: np.ndarray) -> list:
    """[:class:`ClusterSums` of the partition's raw features by label (no columns without features), the
    (n_c, k) int64 counts of rows by (base cluster, label)]; ``labels`` in 0..k−1, ``offsets`` (M + 1,) the
    base clusterings' first global cluster code. Both sum over partitions."""
    labels = np.asarray(labels, dtype=np.int64)
    X = rows.X if rows is not None else np.zeros((len(labels), 0))
    return [ClusterSums.of(X, labels, k),
            _overlap(codes_t, np.asarray(offsets, dtype=np.int64), labels, int(offsets[-1]), k)]


@numba.njit(cache=True, nogil=True)
def _overlap(codes_t, offsets, labels, n_clusters_total, k):
    out = np.zeros((n_clusters_total, k), np.int64)
    for m in range(codes_t.shape[0]):
        for i in range(codes_t.shape[1]):
            out[codes_t[m, i] + offsets[m], labels[i]] += 1
    return out


def partition_confidence(rows, codes_t: np.ndarray, labels: np.ndarray, offsets: np.ndarray, mean: np.ndarray,
                         scale: np.ndarray, centres: np.ndarray | None, present: np.ndarray,
                         shares: np.ndarray) -> np.ndarray:
    """(n,) float32 the map's value for each row (:func:`lwec_tasks.core.confidence.row_confidence`), before
    its level (:func:`partition_level_counts`, :func:`levelled_confidence`): features standardised by
    ``mean``/``scale`` as they were clustered, ``centres`` (k, d) in that space (None: no features),
    ``present`` (k,) the ids some row has, ``shares`` (n_c, k) of the base clusters."""
    X = rows.X if rows is not None and centres is not None and rows.X.shape[1] > 0 else None
    return row_confidence(X, codes_t, labels, centres, shares, present, offsets[:-1], mean, scale)


def partition_level_counts(rows, labels: np.ndarray, score: np.ndarray, gaussians: ClusterGaussians) -> LevelCounts:
    """The partition's part of the level's histograms (:class:`~lwec_tasks.core.confidence_level.LevelCounts`):
    its rows' map values ``score`` (n,) and their posteriors under ``gaussians`` (fitted to the raw features'
    sums)."""
    posterior, own_likeliest = gaussian_posterior(rows.X, labels, gaussians)
    return LevelCounts.of(score, posterior, own_likeliest)


def levelled_confidence(rows, score: np.ndarray, level_map: np.ndarray | None) -> np.ndarray:
    """(n,) float32 each row's confidence: its map value ``score`` through the run's ``level_map`` (None: as it
    is), scaled by the share of its features observed (:func:`observed_share_scaled`)."""
    return observed_share_scaled(levelled(score, level_map), rows)


def observed_share_scaled(confidence: np.ndarray, rows) -> np.ndarray:
    """The confidences scaled by each row's share of feature columns not imputed (1 − imputed / columns): a row
    whose values were partly filled in is only as sure as what was observed of it."""
    imputed = getattr(rows, "imputed", None)
    if imputed is None or confidence is None or not getattr(rows, "n_sources", 0):
        return confidence
    return (confidence * (1.0 - imputed / rows.n_sources)).astype(confidence.dtype)


def confidence_sums(labels: np.ndarray, confidence: np.ndarray, k: int) -> np.ndarray:
    """(k,) the sum of the rows' confidences per label."""
    return np.bincount(np.asarray(labels, dtype=np.int64), weights=confidence, minlength=k)
