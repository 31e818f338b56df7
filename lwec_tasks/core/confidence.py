"""Row confidence: how surely a labelled row belongs to its cluster, a number in [0, 1].

For a row x with label j, in the clustered feature space (the z-scored features when the run standardises):

    margin(x) = d_other / (d_own + d_other)
    share(x)  = (1/M) Σ_m |b_m(x) ∩ C_j| / |b_m(x)|
    confidence(x) = margin(x) · share(x)

d_own is the distance from x to the mean of its cluster's rows, d_other to the nearest mean of another cluster
(margin 1 at its own centre, 1/2 halfway, below 1/2 nearer another cluster than its own: LWEA's and LWGP's
clusters are not nearest-centre cells); b_m(x) is the row's cluster in base clustering m and C_j its consensus
cluster, so share is how much of the row's base clusters the consensus kept with it. Without features (a run
on base label columns) the confidence is the share alone.

Everything it needs is a sum over rows: per-cluster counts and feature sums (the centres) and the
base-by-consensus overlap counts (the shares); partitions compute their part and one more pass over each
partition gives its rows' confidences: exact at any N, O(N·(k·d + M)).

Why this definition (``python -m benchmarks.confidence_choice``; data other than the 1M-row acceptance blobs,
split into a selection half and a held-out half before looking): ranked by ROC AUC for "the row's label agrees
with the majority truth of its cluster", margin × share had the best mean on the selection half (18 data set ×
method pairs: 0.893, against 0.880 for a Gaussian-mixture posterior, 0.876 for the margin alone and 0.861 for
the share alone). On the held-out half it scored 0.825; the margin alone scored 0.855 there and the share
alone 0.728: the share is weak where the consensus has many more clusters than the base clusterings (SIPU
a2/a3, k = 35/50), and the product carries some of that weakness.

Numpy and numba.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np


@dataclass(frozen=True)
class ClusterSums:
    """Per-cluster sums over a set of rows: ``counts`` (k,), ``sums`` (k, d) of the rows' features, ``squares``
    (k, d) of their squared features; adding two gives the sums over both sets."""

    counts: np.ndarray
    sums: np.ndarray
    squares: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray, labels: np.ndarray, k: int) -> ClusterSums:
        """Sums of the rows of X (n, d) by their ``labels`` (n,) in 0..k−1 (one compiled pass)."""
        counts, sums, squares = _label_sums(np.asarray(X, dtype=np.float64), np.asarray(labels, dtype=np.int64), k)
        return cls(counts, sums, squares)

    def __add__(self, other: ClusterSums) -> ClusterSums:
        return ClusterSums(self.counts + other.counts, self.sums + other.sums, self.squares + other.squares)

    @property
    def means(self) -> np.ndarray:
        """(k, d) each cluster's feature means (0 for an empty cluster)."""
        return self.sums / np.maximum(self.counts, 1)[:, None]


def base_shares(overlap: np.ndarray, base_sizes: np.ndarray) -> np.ndarray:
    """(n_c, k) the share of each base cluster's rows in each consensus cluster, from the (n_c, k) overlap
    counts and the (n_c,) base cluster sizes."""
    return np.asarray(overlap, dtype=np.float64) / np.maximum(np.asarray(base_sizes, dtype=np.float64), 1)[:, None]


def ensemble_share(codes: np.ndarray, labels: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """(n,) share(x) of the module's docstring: ``codes`` (M, n) the rows' global base cluster ids, ``labels``
    (n,) their consensus clusters, ``shares`` (n_c, k) of :func:`base_shares`."""
    codes = np.asarray(codes)
    return _share(codes, np.zeros(len(codes), np.int64), np.asarray(labels, dtype=np.int64),
                  np.ascontiguousarray(shares, dtype=np.float64))


def centre_margin(Z: np.ndarray, labels: np.ndarray, centres: np.ndarray, present: np.ndarray | None = None,
                  mean: np.ndarray | None = None, scale: np.ndarray | None = None) -> np.ndarray:
    """(n,) margin(x) of the module's docstring for the rows of Z (n, d) with ``labels`` (n,) in 0..k−1 and the
    clusters' ``centres`` (k, d); with ``mean`` and ``scale`` the rows are first taken to (z − mean) / scale, the
    centres' space. ``present`` (k,) bool leaves empty clusters out (default: all count). 1 when there is no
    other cluster; 1/2 when the row sits on both centres."""
    Z = np.asarray(Z, dtype=np.float64)
    centres = np.ascontiguousarray(centres, dtype=np.float64)
    d = Z.shape[1]
    present = np.ones(len(centres), bool) if present is None else np.asarray(present, bool)
    mean = np.zeros(d) if mean is None else np.asarray(mean, dtype=np.float64)
    scale = np.ones(d) if scale is None else np.asarray(scale, dtype=np.float64)
    return _margins(Z, np.asarray(labels, dtype=np.int64), centres, present, mean, scale)


def row_confidence(Z: np.ndarray | None, codes: np.ndarray, labels: np.ndarray, centres: np.ndarray | None,
                   shares: np.ndarray, present: np.ndarray | None = None, offsets: np.ndarray | None = None,
                   mean: np.ndarray | None = None, scale: np.ndarray | None = None) -> np.ndarray:
    """(n,) float32 in [0, 1]: margin × share (share alone when ``Z`` or ``centres`` is None or has no
    columns); arguments as :func:`centre_margin` and :func:`ensemble_share`, ``codes`` (M, n) made global by
    adding ``offsets`` (M,) per column (default: global already)."""
    codes = np.asarray(codes)
    offsets = np.zeros(len(codes), np.int64) if offsets is None else np.asarray(offsets, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    confidence = _share(codes, offsets, labels, np.ascontiguousarray(shares, dtype=np.float64))
    if Z is not None and centres is not None and Z.shape[1] > 0:
        confidence *= centre_margin(Z, labels, centres, present, mean, scale)
    return np.clip(confidence, 0.0, 1.0).astype(np.float32)


@numba.njit(cache=True)
def _label_sums(X, labels, k):
    n, d = X.shape
    counts = np.zeros(k, np.int64)
    sums = np.zeros((k, d))
    squares = np.zeros((k, d))
    for i in range(n):
        c = labels[i]
        counts[c] += 1
        for j in range(d):
            value = X[i, j]
            sums[c, j] += value
            squares[c, j] += value * value
    return counts, sums, squares


@numba.njit(cache=True)
def _share(codes, offsets, labels, shares):
    n_columns, n = codes.shape
    out = np.zeros(n)
    for m in range(n_columns):
        for i in range(n):
            out[i] += shares[codes[m, i] + offsets[m], labels[i]]
    return out / max(n_columns, 1)


@numba.njit(cache=True)
def _margins(X, labels, centres, present, mean, scale):
    """Blocks of rows transposed (features × rows) so that each centre's squared distances are summed over
    contiguous rows: the exact differences, no ‖x‖² − 2x·c + ‖c‖² cancellation."""
    n, d = X.shape
    k = centres.shape[0]
    block = 1024
    rows = np.empty((d, block))
    total = np.empty(block)
    own = np.empty(block)
    other = np.empty(block)
    out = np.empty(n)
    inverse = 1.0 / scale
    for start in range(0, n, block):
        size = min(block, n - start)
        for i in range(size):
            for j in range(d):
                rows[j, i] = (X[start + i, j] - mean[j]) * inverse[j]
            own[i] = 0.0
            other[i] = np.inf
        for c in range(k):
            if not present[c]:
                continue
            total[:size] = 0.0
            for j in range(d):
                centre = centres[c, j]
                for i in range(size):
                    difference = rows[j, i] - centre
                    total[i] += difference * difference
            for i in range(size):
                if labels[start + i] == c:
                    own[i] = total[i]
                elif total[i] < other[i]:
                    other[i] = total[i]
        for i in range(size):
            if other[i] == np.inf:
                out[start + i] = 1.0
            else:
                near, far = np.sqrt(own[i]), np.sqrt(other[i])
                out[start + i] = 0.5 if near + far == 0 else far / (near + far)
    return out
