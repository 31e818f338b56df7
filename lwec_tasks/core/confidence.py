"""Row confidence: how surely a labelled row belongs to its cluster, a number in [0, 1].

What the number means: among rows given a confidence of about p, about a share p have a label that agrees with
the majority truth of their cluster (had the truth been known): 0.9 reads "about 9 in 10 such rows are where
they belong". It is a rate estimated from the ensemble and the features alone, with constants fitted offline on
other data; it ranks rows as the margin and the share do.

For a row x with label j, in the clustered feature space (the z-scored features when the run standardises):

    margin(x) = d_other / (d_own + d_other)
    share(x)  = (1/M) Σ_m |b_m(x) ∩ C_j| / |b_m(x)|
    confidence(x) = σ(a · logit(margin(x)) + b · logit(share(x)) + c),   σ(z) = 1 / (1 + e^−z)

d_own is the distance from x to the mean of its cluster's rows, d_other to the nearest mean of another cluster
(margin 1 at its own centre, 1/2 halfway, below 1/2 nearer another cluster than its own: LWEA's and LWGP's
clusters are not nearest-centre cells); b_m(x) is the row's cluster in base clustering m and C_j its consensus
cluster, so share is how much of the row's base clusters the consensus kept with it. logit(p) = log(p/(1 − p))
with p clipped to [LOGIT_FLOOR, 1 − LOGIT_FLOOR]; a, b ≥ 0 and c are :data:`CALIBRATION`. Without features (a
run on base label columns) the confidence is σ(b' · logit(share) + c'), :data:`SHARE_CALIBRATION`.

Everything it needs is a sum over rows: per-cluster counts and feature sums (the centres) and the
base-by-consensus overlap counts (the shares); partitions compute their part and one more pass over each
partition gives its rows' confidences: exact at any N, O(N·(k·d + M)); the map is a few operations per row.

Why this map (``python -m benchmarks.confidence_calibration``): the earlier margin × share ranked rows well
(``python -m benchmarks.confidence_choice``) but read as doubt (mean 0.35 on the 1M-row acceptance blobs where
84–92 % of rows agree). Candidates were fitted leave-one-data-set-out (each data set × method weighted alike)
and scored on the data set left out by ten-bin expected calibration error (ECE) and ROC AUC, on the clustering
battery's development half (33 sets) and synthetic tables (overlapping blobs, 20k rows, 16 features, 20 centres,
std 5 and 6; anisotropic clusters, 40 of 50 features pure noise, very unequal sizes, 30k rows each), LWEA and
LWGP at the true k, ``lwec run``'s default generator mix:

    held-out mean ECE / mean ROC AUC      battery (33 sets)     synthetic (5 sets)
                                          LWEA       LWGP       LWEA       LWGP
    margin × share (before)               0.299/.764 0.311/.793 0.451/.837 0.382/.888
    σ(a·logit margin + b·logit share + c) 0.109/.779 0.108/.802 0.149/.854 0.214/.897

It does not reach ECE ≤ 0.05 everywhere: it does on data sets the consensus gets mostly right (FCPS atom,
engytime, hepta, lsun, target, tetra, twodiamonds, wingnut; SIPU jain, s1, s2, unbalance; anisotropic blobs:
0.01–0.05), is 0.05–0.11 on SIPU a1–a3, d31, r15, s3, s4 and wdbc, and stays far off where the consensus
itself disagrees with the truth (UCI glass, sonar, statlog, ionosphere: 49–64 % of rows agree, the map says
about 0.85; ECE 0.26–0.38), on 40 noise features (LWGP: 20 % agree; ECE 0.30–0.55) and on non-convex shapes the
margin reads as doubt (spiral: all agree, ECE 0.38). On the overlapping blobs (73–95 % agree) it still reads
low: mean about 0.7, ECE 0.12–0.21 (margin × share: 0.41–0.55). Run-level terms estimated from the overlap counts (the
rows' mean share, the mean fraction of base clusters whose majority is the row's cluster) lowered the battery's
mean ECE to 0.083–0.101 but raised the synthetic one (0.21–0.23 against 0.18) and lowered the battery's AUC;
not kept. A fixed map
keeps the ranking of the margin and the share: the ROC AUC is that of a monotone combination of the two.
Not measured yet: overlapping blobs at 100k rows (their default-mix base clusterings did not finish in the time
on a loaded machine; the script lists them) and the 1M-row acceptance table.

The run's stored confidence is this map's value given the level of the clusters' Gaussian posterior when that
mixture fits the clusters (:mod:`lwec_tasks.core.confidence_level`): the map orders the rows, the posterior says
how many of them sit at each value (1M overlapping blobs: ECE 0.016 against the map's 0.199).

Numpy and numba.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

#: The logit's clip: terms are taken to [LOGIT_FLOOR, 1 − LOGIT_FLOOR] first.
LOGIT_FLOOR = 1e-3
#: The map's constants with features (``python -m benchmarks.confidence_calibration``, fitted on all its data
#: sets): confidence = σ(margin · logit(margin) + share · logit(share) + intercept).
CALIBRATION = {"margin": 1.2055, "share": 0.3692, "intercept": 0.4979}
#: The map's constants without features (a run on base label columns): σ(share · logit(share) + intercept).
SHARE_CALIBRATION = {"share": 0.4392, "intercept": 1.1410}


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


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 − p)) with p clipped to [LOGIT_FLOOR, 1 − LOGIT_FLOOR]."""
    p = np.clip(p, LOGIT_FLOOR, 1.0 - LOGIT_FLOOR)
    return np.log(p) - np.log1p(-p)


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
    """(n,) float32 in [0, 1]: the calibrated confidence, :func:`calibrated` of margin and share (the share's
    own map when ``Z`` or ``centres`` is None or has no columns); arguments as :func:`centre_margin` and
    :func:`ensemble_share`, ``codes`` (M, n) made global by adding ``offsets`` (M,) per column (default: global
    already)."""
    codes = np.asarray(codes)
    offsets = np.zeros(len(codes), np.int64) if offsets is None else np.asarray(offsets, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    share = _share(codes, offsets, labels, np.ascontiguousarray(shares, dtype=np.float64))
    margin = None
    if Z is not None and centres is not None and Z.shape[1] > 0:
        margin = centre_margin(Z, labels, centres, present, mean, scale)
    return np.clip(calibrated(margin, share), 0.0, 1.0).astype(np.float32)


def calibrated(margin: np.ndarray | None, share: np.ndarray) -> np.ndarray:
    """(n,) float64 in (0, 1): the fixed logistic map of the module's docstring from the rows' ``margin`` (None: a
    run without features, the share's own map) and ``share``; rises with each."""
    share = np.asarray(share, dtype=np.float64)
    if margin is None:
        c = SHARE_CALIBRATION
        z = c["share"] * logit(share) + c["intercept"]
    else:
        c = CALIBRATION
        z = c["margin"] * logit(np.asarray(margin, dtype=np.float64)) + c["share"] * logit(share) + c["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def _share(codes, offsets, labels, shares):
    n_columns, n = codes.shape
    out = np.zeros(n)
    for m in range(n_columns):
        for i in range(n):
            out[i] += shares[codes[m, i] + offsets[m], labels[i]]
    return out / max(n_columns, 1)


@numba.njit(cache=True, nogil=True)
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
