"""Naive-Bayes reassignment of a consensus over typed columns: the run's last step on a table whose text or
boolean columns move the rows.

The consensus keeps its clusters; each step weighs every column by what it tells about them. Per cluster c:
a share π_c of the rows, a Gaussian per numeric column (mean μ_cj and variance σ²_cj over the rows whose value
was given; an imputed value adds nothing) and the level shares p_cl of each weighted text or boolean column
(add-one smoothing). A row joins the cluster of highest

    log π_c − ½ Σ_j given_ij ((z_ij − μ_cj)² / σ²_cj + log σ²_cj) + Σ_l [row has level l] log p_cl

with z the numeric values centred and scaled by the whole table's moments (so the variance floor,
:data:`VARIANCE_FLOOR` of a column's own variance, means the same on every column). Why steps from the
consensus and not a mixture model fitted from scratch: docs/decisions.md ("Naive-Bayes steps after the
consensus").

Everything here works on a block of rows and on per-cluster sums that add over blocks, so a run computes it
partition by partition and the sums reduce in a fixed order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A cluster's variance of a (scaled) numeric column is at least this share of the column's whole-table variance.
VARIANCE_FLOOR = 1e-3
#: Rows scored at a time (bounds the (rows, k) temporaries).
SCORE_BLOCK_ROWS = 65_536


@dataclass(frozen=True, eq=False)
class BayesLayout:
    """Which matrix columns the model reads.

    Attributes
    ----------
    numeric : (q,) int64 matrix column of each numeric source column
    centre, scale : (q,) float64 the whole table's mean and scale of those columns (z = (x − centre) / scale)
    blocks : ((first, width), …) each weighted text or boolean column's indicator columns
    """

    numeric: np.ndarray
    centre: np.ndarray
    scale: np.ndarray
    blocks: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, encoding, mean: np.ndarray, scale: np.ndarray) -> BayesLayout:
        """The layout of a :class:`~lwec_tasks.core.encoding.TableEncoding` given the whole matrix's column
        ``mean`` and ``scale`` (width,); a text or boolean column joins when one of its levels has weight > 0."""
        numeric = np.asarray(encoding.numeric_positions, dtype=np.int64)
        blocks = tuple((int(start), int(code.width)) for code, start in zip(encoding.columns, encoding.starts)
                       if code.kind != "numeric" and max(code.weight, default=0.0) > 0)
        return cls(numeric, np.asarray(mean, dtype=np.float64)[numeric],
                   np.asarray(scale, dtype=np.float64)[numeric], blocks)

    @property
    def n_levels(self) -> int:
        return sum(width for _, width in self.blocks)

    def numeric_values(self, X: np.ndarray, gaps: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """(z (n, q) scaled numeric values, 0 where ``gaps`` (n, q) bool marks an imputed value; given (n, q)
        float64 1/0, or None when every value was given)."""
        z = (X[:, self.numeric] - self.centre) / self.scale
        if gaps is None or not gaps.any():
            return z, None
        z[gaps] = 0.0
        return z, (~gaps).astype(np.float64)

    def level_positions(self, X: np.ndarray) -> list[np.ndarray]:
        """Per block, (n,) int64 each row's level (its indicator's position in the block), −1 for none (an unseen
        value)."""
        positions = []
        for first, width in self.blocks:
            indicators = X[:, first:first + width] > 0
            level = indicators.argmax(axis=1)
            level[~indicators.any(axis=1)] = -1
            positions.append(level.astype(np.int64))
        return positions


@dataclass(frozen=True, eq=False)
class BayesSums:
    """Per-cluster sums over a set of rows; they add over disjoint sets of rows.

    Attributes
    ----------
    sizes : (k,) rows per cluster
    given : (k, q) numeric values given (not imputed) per cluster
    sums, squares : (k, q) Σ z and Σ z² over the given values
    levels : (k, L) rows per cluster having each level of the blocks, blocks side by side
    """

    sizes: np.ndarray
    given: np.ndarray
    sums: np.ndarray
    squares: np.ndarray
    levels: np.ndarray

    def __add__(self, other: BayesSums) -> BayesSums:
        return BayesSums(self.sizes + other.sizes, self.given + other.given, self.sums + other.sums,
                         self.squares + other.squares, self.levels + other.levels)


def added_sums(*parts: BayesSums) -> BayesSums:
    """The sum of ``parts``, in the order given."""
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def bayes_sums(X: np.ndarray, gaps: np.ndarray | None, labels: np.ndarray, k: int, layout: BayesLayout) -> BayesSums:
    """The :class:`BayesSums` of rows X (n, width) with ``labels`` (n,) in 0..k−1 and numeric ``gaps`` (n, q) bool
    (None: none)."""
    labels = np.asarray(labels, dtype=np.int64)
    z, given = layout.numeric_values(X, gaps)
    q = len(layout.numeric)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    counted = np.empty((k, q))
    sums = np.empty((k, q))
    squares = np.empty((k, q))
    for j in range(q):
        counted[:, j] = sizes if given is None else np.bincount(labels, weights=given[:, j], minlength=k)
        sums[:, j] = np.bincount(labels, weights=z[:, j], minlength=k)
        squares[:, j] = np.bincount(labels, weights=z[:, j] * z[:, j], minlength=k)
    levels = []
    for (_, width), level in zip(layout.blocks, layout.level_positions(X)):
        has = level >= 0
        levels.append(np.bincount(labels[has] * width + level[has], minlength=k * width).reshape(k, width))
    return BayesSums(sizes, counted, sums, squares,
                     np.hstack(levels).astype(np.float64) if levels else np.zeros((k, 0)))


@dataclass(frozen=True, eq=False)
class BayesModel:
    """The fitted model of one step: what scoring a row needs.

    Attributes
    ----------
    layout : the columns read (:class:`BayesLayout`)
    log_prior : (k,) log π_c (a cluster without rows: −inf, it takes no row)
    mean, variance : (k, q) μ_cj, σ²_cj of the scaled numeric values
    log_shares : (k, L) log p_cl, blocks side by side
    """

    layout: BayesLayout
    log_prior: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    log_shares: np.ndarray

    @classmethod
    def fit(cls, sums: BayesSums, layout: BayesLayout) -> BayesModel:
        """The model the sums give: shares, means, variances (floored at :data:`VARIANCE_FLOOR` of the column's
        whole-table variance; a cluster without a given value of a column takes the whole table's mean and
        variance there), add-one level shares."""
        sizes = sums.sizes
        with np.errstate(divide="ignore"):
            log_prior = np.log(sizes / sizes.sum())
        total_given = np.maximum(sums.given.sum(axis=0), 1.0)
        overall_mean = sums.sums.sum(axis=0) / total_given
        overall_variance = np.maximum(sums.squares.sum(axis=0) / total_given - overall_mean ** 2, 0.0)
        seen = sums.given > 0
        counted = np.where(seen, sums.given, 1.0)
        mean = np.where(seen, sums.sums / counted, overall_mean)
        variance = np.where(seen, sums.squares / counted - mean ** 2, overall_variance)
        floor = VARIANCE_FLOOR * np.where(overall_variance > 0, overall_variance, 1.0)
        variance = np.maximum(variance, floor)
        shares = []
        start = 0
        for _, width in layout.blocks:
            counts = sums.levels[:, start:start + width]
            shares.append(np.log((counts + 1.0) / (sizes[:, None] + width)))
            start += width
        log_shares = np.hstack(shares) if shares else np.zeros((len(sizes), 0))
        return cls(layout, log_prior, mean, variance, log_shares)

    @property
    def k(self) -> int:
        return len(self.log_prior)

    def scores(self, X: np.ndarray, gaps: np.ndarray | None = None) -> np.ndarray:
        """(n, k) log posterior (up to a per-row constant) of rows X (n, width) with numeric ``gaps`` (n, q)."""
        z, given = self.layout.numeric_values(X, gaps)
        precision = 1.0 / self.variance
        # Σ_j g (z − μ)² / σ² + g log σ², expanded: z is 0 where g is 0, so only the last term needs g.
        constant = (self.mean ** 2 * precision + np.log(self.variance))
        scores = (z * z) @ precision.T - 2.0 * (z @ (self.mean * precision).T)
        scores += constant.sum(axis=1)[None, :] if given is None else given @ constant.T
        scores *= -0.5
        scores += self.log_prior[None, :]
        start = 0
        for (_, width), level in zip(self.layout.blocks, self.layout.level_positions(X)):
            has = level >= 0
            scores[has] += self.log_shares[:, start:start + width].T[level[has]]
            start += width
        return scores

    def assign(self, X: np.ndarray, gaps: np.ndarray | None = None) -> np.ndarray:
        """(n,) int64 each row's most probable cluster (the first on a tie), :data:`SCORE_BLOCK_ROWS` rows at a
        time."""
        out = np.empty(len(X), dtype=np.int64)
        for start in range(0, len(X), SCORE_BLOCK_ROWS):
            stop = start + SCORE_BLOCK_ROWS
            out[start:stop] = self.scores(X[start:stop], None if gaps is None else gaps[start:stop]).argmax(axis=1)
        return out

    def renumbered(self, ids: np.ndarray, n_ids: int) -> BayesModel:
        """The model with its cluster j named ``ids[j]`` (distinct, in 0..n_ids−1) among ``n_ids`` clusters; an id
        no cluster takes has no rows (log prior −inf)."""
        ids = np.asarray(ids, dtype=np.int64)

        def spread(values: np.ndarray, fill: float) -> np.ndarray:
            out = np.full((n_ids, *values.shape[1:]), fill)
            out[ids] = values
            return out

        return BayesModel(self.layout, spread(self.log_prior, -np.inf), spread(self.mean, 0.0),
                          spread(self.variance, 1.0), spread(self.log_shares, 0.0))

    def restricted(self, clusters: np.ndarray) -> BayesModel:
        """The model over ``clusters`` only (cluster i of the result is ``clusters[i]``)."""
        clusters = np.asarray(clusters, dtype=np.int64)
        return BayesModel(self.layout, self.log_prior[clusters], self.mean[clusters], self.variance[clusters],
                          self.log_shares[clusters])

    def arrays(self) -> dict[str, np.ndarray]:
        """The model as named arrays (a labelling model's state), read back by :meth:`from_arrays`."""
        layout = self.layout
        return {"bayes_numeric": layout.numeric, "bayes_centre": layout.centre, "bayes_scale": layout.scale,
                "bayes_blocks": np.array(layout.blocks, dtype=np.int64).reshape(-1, 2),
                "bayes_log_prior": self.log_prior, "bayes_mean": self.mean, "bayes_variance": self.variance,
                "bayes_log_shares": self.log_shares}

    @classmethod
    def from_arrays(cls, arrays) -> BayesModel:
        layout = BayesLayout(np.asarray(arrays["bayes_numeric"], dtype=np.int64), arrays["bayes_centre"],
                             arrays["bayes_scale"],
                             tuple((int(a), int(b)) for a, b in np.asarray(arrays["bayes_blocks"]).reshape(-1, 2)))
        return cls(layout, arrays["bayes_log_prior"], arrays["bayes_mean"], arrays["bayes_variance"],
                   arrays["bayes_log_shares"])
