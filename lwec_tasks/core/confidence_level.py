"""The confidence's level: how many rows the run's confidence puts at each value, taken from the clusters'
Gaussian posterior when that mixture describes the clusters.

The map of :mod:`lwec_tasks.core.confidence` (margin and share through fixed constants) ranks rows well, but
its level is the same on every table: on 1M overlapping blobs where 93 % of rows agree with their cluster's
majority truth it reads 0.73 on average. The level has to come from the table itself. Each consensus cluster is
taken as a Gaussian with its rows' share, means and per-feature variances (from the sums the evidence stage
already has, :class:`~lwec_tasks.core.confidence.ClusterSums`); a row's *posterior* is that mixture's
probability of the row's own cluster. Where the clusters are such Gaussians the posterior is close to the
chance that the row is where it belongs (ECE 0.004 on those blobs), but where they are not (rings, spirals) it
is far off. So the posterior gives the level and the map keeps the order:

    confidence(x) = Q_post(F_map(map(x)))

F_map is the distribution of the map's values over the run's rows and Q_post the quantile function of the
posteriors: the row whose map value is at the run's u-quantile gets the posteriors' u-quantile. Rows keep their
order (ROC AUC as the map's); the confidences have the posteriors' distribution. Both distributions are
histograms of :data:`LEVEL_BINS` equal-width bins over [0, 1], summed over partitions (exact at any N, the same
for every partitioning), interpolated linearly within a bin.

The level is taken only when the mixture *fits*: its likeliest cluster is the row's own for at least
:data:`GAUSSIAN_FIT_FLOOR` of the rows (0.34 on a spiral, 0.86–1.0 on the battery's other sets and on the
synthetic tables); otherwise the map's values are kept as they are. The floor was chosen leaving one data set out
(``python -m benchmarks.confidence_calibration``: the clustering battery's development half and five synthetic
tables, families weighted alike; 0.85 in 37 of the 38 folds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from lwec_tasks.core.confidence import ClusterSums

#: Bins of the two histograms (equal widths over [0, 1]).
LEVEL_BINS = 1000
#: The posterior gives the level only when the mixture's likeliest cluster is the row's own for this share of
#: rows at least.
GAUSSIAN_FIT_FLOOR = 0.85
#: A cluster's variance of a feature is taken as at least this share of the whole table's (a cluster constant in
#: a feature would otherwise have a density without bound).
VARIANCE_FLOOR = 1e-3


@dataclass(frozen=True)
class ClusterGaussians:
    """The clusters as axis-aligned Gaussians: ``log_weights`` (k,) log of each cluster's share of rows (−inf
    for an empty one), ``means`` (k, d), ``inverse_variances`` (k, d), ``log_norms`` (k,) the log weight plus
    −½ Σ log variance (the constant 2π cancels in a posterior)."""

    log_weights: np.ndarray
    means: np.ndarray
    inverse_variances: np.ndarray
    log_norms: np.ndarray

    @classmethod
    def of(cls, sums: ClusterSums) -> ClusterGaussians:
        """From per-cluster sums of the features the posterior is computed on (any per-feature scaling of them
        gives the same posteriors)."""
        counts = sums.counts.astype(np.float64)
        total = max(counts.sum(), 1.0)
        means = sums.means
        variances = sums.squares / np.maximum(counts, 1.0)[:, None] - means**2
        table_mean = sums.sums.sum(axis=0) / total
        table_variance = np.clip(sums.squares.sum(axis=0) / total - table_mean**2, 0.0, None)
        floor = np.maximum(VARIANCE_FLOOR * table_variance, 1e-12)
        variances = np.maximum(variances, floor[None, :])
        with np.errstate(divide="ignore"):
            log_weights = np.where(counts > 0, np.log(counts / total), -np.inf)
        return cls(log_weights, np.ascontiguousarray(means), np.ascontiguousarray(1.0 / variances),
                   log_weights - 0.5 * np.log(variances).sum(axis=1))


def gaussian_posterior(X: np.ndarray, labels: np.ndarray, gaussians: ClusterGaussians) -> tuple[np.ndarray,
                                                                                              np.ndarray]:
    """((n,) each row's posterior probability of its own cluster, (n,) bool whether its own cluster is the
    mixture's likeliest) for the rows of X (n, d) with ``labels`` (n,) in 0..k−1."""
    return _posterior(np.ascontiguousarray(X, dtype=np.float64), np.asarray(labels, dtype=np.int64),
                      gaussians.means, gaussians.inverse_variances, gaussians.log_norms)


@dataclass(frozen=True)
class LevelCounts:
    """Rows per bin of the map's values (``scores``) and of the posteriors (``posteriors``), both
    (:data:`LEVEL_BINS`,) int64, and how many rows' own cluster is the mixture's likeliest (``own_likeliest``);
    adding two gives the counts over both sets of rows."""

    scores: np.ndarray
    posteriors: np.ndarray
    own_likeliest: int

    @classmethod
    def of(cls, score: np.ndarray, posterior: np.ndarray, own_likeliest: np.ndarray) -> LevelCounts:
        return cls(_histogram(score), _histogram(posterior), int(np.count_nonzero(own_likeliest)))

    def __add__(self, other: LevelCounts) -> LevelCounts:
        return LevelCounts(self.scores + other.scores, self.posteriors + other.posteriors,
                           self.own_likeliest + other.own_likeliest)

    @property
    def rows(self) -> int:
        return int(self.scores.sum())

    @property
    def gaussian_fit(self) -> float:
        """The share of rows whose own cluster is the mixture's likeliest (1.0 without rows)."""
        return self.own_likeliest / self.rows if self.rows else 1.0

    def level_map(self, fit_floor: float = GAUSSIAN_FIT_FLOOR) -> np.ndarray | None:
        """(LEVEL_BINS + 1,) the confidence at each bin edge of the map's values (edges 0, 1/LEVEL_BINS, …, 1),
        non-decreasing: Q_post(F_map(edge)); None when the mixture fits fewer than ``fit_floor`` of the rows
        (the map's values are kept)."""
        if not self.rows or self.gaussian_fit < fit_floor:
            return None
        edges = np.linspace(0.0, 1.0, LEVEL_BINS + 1)
        score_cdf = np.concatenate([[0.0], np.cumsum(self.scores)]) / self.scores.sum()
        posterior_cdf = np.concatenate([[0.0], np.cumsum(self.posteriors)]) / self.posteriors.sum()
        return _quantiles(posterior_cdf, edges, score_cdf)


def levelled(score: np.ndarray, level_map: np.ndarray | None) -> np.ndarray:
    """(n,) float32: the map's values ``score`` (n,) through :meth:`LevelCounts.level_map` (as they are for
    None)."""
    score = np.asarray(score, dtype=np.float64)
    if level_map is None:
        return score.astype(np.float32)
    edges = np.linspace(0.0, 1.0, len(level_map))
    return np.clip(np.interp(score, edges, level_map), 0.0, 1.0).astype(np.float32)


def _histogram(values: np.ndarray) -> np.ndarray:
    which = np.clip((np.asarray(values, dtype=np.float64) * LEVEL_BINS).astype(np.int64), 0, LEVEL_BINS - 1)
    return np.bincount(which, minlength=LEVEL_BINS).astype(np.int64)


def _quantiles(cdf: np.ndarray, edges: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The quantile function of the piecewise-linear distribution through (``edges``, ``cdf``) (cdf
    non-decreasing from 0 to 1) at ``u``: the smallest x with F(x) ≥ u, and for u = 0 the largest x with
    F(x) = 0 (where the values begin)."""
    u = np.asarray(u, dtype=np.float64)
    above = np.clip(np.searchsorted(cdf, u, side="left"), 1, len(cdf) - 1)
    low, high = cdf[above - 1], cdf[above]
    step = np.where(high > low, (u - low) / np.where(high > low, high - low, 1.0), 1.0)
    x = edges[above - 1] + np.clip(step, 0.0, 1.0) * (edges[above] - edges[above - 1])
    start = edges[np.searchsorted(cdf, 0.0, side="right") - 1]
    return np.where(u <= 0.0, start, x)


@numba.njit(cache=True, nogil=True)
def _posterior(X, labels, means, inverse_variances, log_norms):
    """Blocks of rows transposed (features × rows), as in :func:`~lwec_tasks.core.confidence._margins`, so that
    each cluster's weighted squared distances are summed over contiguous rows (vectorised across rows); each
    row's sum runs over its features in the same order as a row-by-row loop, so the values are the same."""
    n, d = X.shape
    k = means.shape[0]
    block = 512
    rows = np.empty((d, block))
    scores = np.empty((k, block))
    posterior = np.empty(n)
    own_likeliest = np.empty(n, np.bool_)
    for start in range(0, n, block):
        size = min(block, n - start)
        for i in range(size):
            for j in range(d):
                rows[j, i] = X[start + i, j]
        for c in range(k):
            total = scores[c]
            if log_norms[c] == -np.inf:
                total[:size] = -np.inf
                continue
            total[:size] = 0.0
            for j in range(d):
                centre = means[c, j]
                weight = inverse_variances[c, j]
                for i in range(size):
                    difference = rows[j, i] - centre
                    total[i] += difference * difference * weight
            for i in range(size):
                total[i] = log_norms[c] - 0.5 * total[i]
        for i in range(size):
            best = -np.inf
            best_cluster = -1
            for c in range(k):
                if scores[c, i] > best:
                    best = scores[c, i]
                    best_cluster = c
            normaliser = 0.0
            for c in range(k):
                if scores[c, i] > -np.inf:
                    normaliser += np.exp(scores[c, i] - best)
            own = labels[start + i]
            posterior[start + i] = np.exp(scores[own, i] - best) / normaliser if scores[own, i] > -np.inf else 0.0
            own_likeliest[start + i] = best_cluster == own
    return posterior, own_likeliest
