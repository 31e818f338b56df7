"""A table through ``lwec run``'s path, by library functions and without a database: what a run's labels would be,
and what they cost.

The path (as ``tests/helpers/pipeline.py``'s ``expected_labels``, which the flow tests hold the flow to): rows in
id order, z-scored per column (``StandardScaler``, the run's default), ``fit_base_clusterings(Z, M, seed,
generators)`` (M = the run's default ensemble size, k drawn from the library's ranges, sampled fits above
``LARGE_N`` rows), then ``lwea(ensemble, k, θ)`` and ``lwgp(ensemble, k, θ, random_state=seed)`` at the given k.
The row confidence is the run's (:mod:`lwec_tasks.core.confidence`, computed here in one process).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

METHODS = ("LWEA", "LWGP")


@dataclass
class PathResult:
    """One table through the run's path.

    nmi, ami : per method, against the truth (NMI with the run's "max" normalisation)
    confidence_auc : per method, ROC AUC of the row confidence for "the row's label agrees with its cluster's
        majority truth"
    microclusters : distinct rows of the (N, M) base label matrix
    seconds : "base" (base clusterings), "ensemble" (microclusters), "LWEA", "LWGP" (each with its ECI)
    """

    n: int
    d: int
    k: int
    nmi: dict[str, float] = field(default_factory=dict)
    ami: dict[str, float] = field(default_factory=dict)
    confidence_auc: dict[str, float] = field(default_factory=dict)
    microclusters: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class RunLabels:
    """The run's labels of one table: ``Z`` (N, d) the clustered (z-scored) features, ``base`` (N, M) the base
    clusterings, ``cuts`` per method (N,) the consensus at k, ``microclusters``, and ``seconds`` ("base",
    "ensemble" (finding the microclusters), "LWEA", "LWGP", each of the last two with its ECI)."""

    Z: np.ndarray
    base: np.ndarray
    cuts: dict[str, np.ndarray]
    microclusters: int
    seconds: dict[str, float]


def run_labels(X: np.ndarray, k: int, generators: str, seed: int = 0, ensemble_size: int | None = None,
               theta: float | None = None) -> RunLabels:
    """LWEA's and LWGP's labels of X (N, d) raw features at ``k``, by the run's path.

    ``generators`` is the mix; ``seed`` the run's (default 0, ``lwec run``'s); ``ensemble_size`` and ``theta``
    default to the run's. Base clusterings are fitted one at a time (``n_jobs=1``; the labels do not depend on
    it), so seconds are one core's when the numeric libraries' thread pools have one thread.
    """
    from sklearn.preprocessing import StandardScaler

    from lwec_tasks.core.base_clusterings import fit_base_clusterings
    from lwec_tasks.core.defaults import DEFAULT_ENSEMBLE_SIZE, DEFAULT_THETA
    from lwec_tasks.core.ensemble import Ensemble
    from lwec_tasks.core.lwea import lwea
    from lwec_tasks.core.lwgp import lwgp

    M = DEFAULT_ENSEMBLE_SIZE if ensemble_size is None else ensemble_size
    theta = DEFAULT_THETA if theta is None else theta
    Z = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))
    seconds = {}
    started = time.perf_counter()
    base = fit_base_clusterings(Z, M, random_state=seed, generators=generators, n_jobs=1).labels
    seconds["base"] = time.perf_counter() - started
    started = time.perf_counter()
    ensemble = Ensemble(base)
    microclusters = int(ensemble.n_microclusters)
    seconds["ensemble"] = time.perf_counter() - started
    cuts = {}
    for method, cut in (("LWEA", lambda: lwea(ensemble, k, theta=theta)),
                        ("LWGP", lambda: lwgp(ensemble, k, theta=theta, random_state=seed))):
        started = time.perf_counter()
        cuts[method] = np.asarray(cut()).ravel()
        seconds[method] = time.perf_counter() - started
    return RunLabels(Z, base, cuts, microclusters, seconds)


def run_path(X: np.ndarray, y: np.ndarray, generators: str, seed: int = 0, confidence: bool = True) -> PathResult:
    """Score the run's labels (:func:`run_labels`) of X (N, d) raw features at k = the number of classes of
    y (N,) int against y; with ``confidence`` also the row confidence's ROC AUC."""
    from sklearn.metrics import adjusted_mutual_info_score

    from lwec_tasks.core.metrics import nmi

    _, y = np.unique(np.asarray(y), return_inverse=True)
    k = int(y.max()) + 1
    run = run_labels(X, k, generators, seed)
    result = PathResult(len(X), X.shape[1], k, microclusters=run.microclusters, seconds=run.seconds)
    for method, labels in run.cuts.items():
        result.nmi[method] = nmi(y, labels)
        result.ami[method] = float(adjusted_mutual_info_score(y, labels))
        if confidence:
            result.confidence_auc[method] = confidence_auc(run.Z, run.base, labels, y)
    return result


def confidence_auc(Z: np.ndarray, base: np.ndarray, labels: np.ndarray, truth: np.ndarray) -> float:
    """ROC AUC of the run's row confidence (Z (N, d) the clustered features, base (N, M) labels, labels (N,) the
    consensus) for "the row's label agrees with its cluster's majority truth"; NaN when every row agrees or
    none does."""
    from sklearn.metrics import roc_auc_score

    from lwec_tasks.core.confidence import ClusterSums, base_shares, calibrated, centre_margin, ensemble_share

    _, labels = np.unique(labels, return_inverse=True)
    k = int(labels.max()) + 1
    sums = ClusterSums.of(Z, labels, k)
    offsets = np.concatenate([[0], np.cumsum(base.max(axis=0) + 1)]).astype(np.int64)
    codes = np.ascontiguousarray((base + offsets[:-1]).T)
    overlap = np.bincount((codes * k + labels).ravel(), minlength=int(offsets[-1]) * k).reshape(-1, k)
    shares = base_shares(overlap, overlap.sum(axis=1))
    margin = centre_margin(Z, labels, sums.means, sums.counts > 0)
    value = calibrated(margin, ensemble_share(codes, labels, shares))
    t = int(truth.max()) + 1
    joint = np.bincount(labels * t + truth, minlength=k * t).reshape(k, t)
    good = joint.argmax(axis=1)[labels] == truth
    return float(roc_auc_score(good, value)) if 0 < good.mean() < 1 else float("nan")
