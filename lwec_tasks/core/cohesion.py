"""Cluster cohesion: how much the base clusterings keep a consensus cluster together, a number in [0, 1] per
cluster, and the "mixed?" flag read from it.

For consensus cluster i with n_i rows, of which n_ij lie in base cluster j of base clustering m:

    cohesion(i) = (1/M) Σ_m Σ_{j ∈ m} (n_ij / n_i)²

the chance that two of the cluster's rows drawn at random (with replacement) share a base cluster, averaged over
the M base clusterings: the cluster's mean co-association. 1 when every base clustering keeps the cluster in one
piece; a cluster the base clusterings cut into two halves scores half. A cluster made of two groups that the base
clusterings keep apart (a mixed cluster) therefore scores low — but so does a pure cluster that fine-grained base
clusterings cut into pieces, and how finely they cut depends on the table and the ensemble. So a cluster is
flagged "mixed?" against its own run: when its cohesion is below :data:`MIXED_BELOW` × the run's mean cohesion
(weighted by cluster size, :func:`relative_cohesion`).

It needs only the (n_c, k) counts of rows per (base cluster, consensus cluster), which the evidence stage sums
over partitions anyway: exact at any N, O(n_c · k) once those counts exist. Numpy only.

How it was chosen (``python -m benchmarks.cluster_cohesion``; docs/pipeline.md has the table): per-cluster
candidates from the run alone were scored by how well they tell mixed clusters (majority truth below 80 % of the
rows) from pure ones, ROC AUC over clusters, on the clustering battery's development half and the authors' pools
(LWEA and LWGP at the true k and k − 2); scikit-learn's digits and iris and three synthetic tables were held out.
The flag's threshold is the largest that flags at most 5 % of the pure clusters of the choice set.
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.errors import LwecInputError

#: A cluster whose cohesion is below this × the run's size-weighted mean cohesion is flagged "mixed?"
#: (``python -m benchmarks.cluster_cohesion``).
MIXED_BELOW = 0.87


def cluster_cohesion(overlap: np.ndarray, columns: np.ndarray, n_columns: int) -> np.ndarray:
    """(k,) float64 cohesion of each consensus cluster (module docstring); NaN for a cluster without rows.

    ``overlap`` (n_c, k) counts rows per (base cluster, consensus cluster); ``columns`` (n_c,) the base
    clustering (0..M−1) each base cluster belongs to; ``n_columns`` M. Every row lies in one base cluster of each
    base clustering, so each base clustering's block of ``overlap`` sums to the cluster sizes."""
    overlap = np.asarray(overlap, dtype=np.float64)
    columns = np.asarray(columns, dtype=np.int64)
    if overlap.ndim != 2 or len(columns) != len(overlap):
        raise LwecInputError(f"overlap of shape {overlap.shape} does not match {len(columns)} base cluster columns")
    if n_columns < 1 or (len(columns) and (columns.min() < 0 or columns.max() >= n_columns)):
        raise LwecInputError(f"base cluster columns must lie in 0..{n_columns - 1}")
    sizes = np.zeros(overlap.shape[1])
    squares = np.zeros(overlap.shape[1])
    for m in range(n_columns):
        block = overlap[columns == m]
        sizes += block.sum(axis=0)
        squares += (block**2).sum(axis=0)
    sizes /= n_columns
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sizes > 0, squares / (n_columns * np.maximum(sizes, 1e-300) ** 2), np.nan)


def relative_cohesion(cohesion: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(k,) each cluster's cohesion over the run's mean cohesion weighted by the clusters' ``sizes`` (k,) (clusters
    without rows or with a NaN cohesion left out of the mean; NaN for them)."""
    cohesion = np.asarray(cohesion, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    counted = (sizes > 0) & np.isfinite(cohesion)
    mean = float(np.dot(sizes[counted], cohesion[counted]) / sizes[counted].sum()) if counted.any() else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted, cohesion / mean, np.nan)


def mixed_clusters(cohesion: np.ndarray, sizes: np.ndarray, threshold: float = MIXED_BELOW) -> np.ndarray:
    """(k,) bool: clusters whose :func:`relative_cohesion` is below ``threshold`` (NaN: not flagged)."""
    return np.nan_to_num(relative_cohesion(cohesion, sizes), nan=np.inf) < threshold
