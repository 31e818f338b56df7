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
import scipy.sparse as sp

from lwec_tasks.core.column_runs import as_slice

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
    def q(self) -> int:
        return len(self.numeric)

    @property
    def level_columns(self) -> np.ndarray:
        """(L,) int64 the blocks' indicator columns, side by side."""
        return np.concatenate([np.arange(first, first + width) for first, width in self.blocks] +
                              [np.zeros(0, dtype=np.int64)]).astype(np.int64)

    def design(self, X: np.ndarray, gaps: np.ndarray | None) -> np.ndarray:
        """(n, 2q + L [+ q]) the rows as the model reads them: [z², z, level indicators, given], z the scaled
        numeric values (0 where ``gaps`` (n, q) bool marks an imputed value), each level's indicator (X's
        indicator columns, 0/1: an unseen value has none) and, only when ``gaps`` marks a value, given 1/0 (else
        every value was given). The scores are this times the model's coefficients; a cluster's sums are the
        sums of its rows of it."""
        q = self.q
        levels = self.level_columns
        gapped = gaps is not None and bool(gaps.any())
        out = np.empty((len(X), 2 * q + len(levels) + (q if gapped else 0)))
        z = out[:, q:2 * q]
        np.subtract(X[:, as_slice(self.numeric)], self.centre, out=z)
        z /= self.scale
        if gapped:
            given = out[:, 2 * q + len(levels):]
            np.logical_not(gaps, out=given, casting="unsafe")
            z *= given
        np.multiply(z, z, out=out[:, :q])
        out[:, 2 * q:2 * q + len(levels)] = X[:, as_slice(levels)]
        return out


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

    @classmethod
    def of_design(cls, design: np.ndarray, labels: np.ndarray, k: int, layout: BayesLayout) -> BayesSums:
        """The sums of rows given by their :meth:`BayesLayout.design` and ``labels`` (n,) in 0..k−1."""
        q, n_levels = layout.q, len(layout.level_columns)
        labels = np.asarray(labels, dtype=np.int64)
        members = sp.csr_matrix((np.ones(len(labels)), (labels, np.arange(len(labels)))), shape=(k, len(labels)))
        totals = np.asarray(members @ design)
        sizes = np.bincount(labels, minlength=k).astype(np.float64)
        given = totals[:, 2 * q + n_levels:] if design.shape[1] > 2 * q + n_levels else np.repeat(sizes[:, None], q, 1)
        return cls(sizes, given, totals[:, q:2 * q], totals[:, :q], totals[:, 2 * q:2 * q + n_levels])


def added_sums(*parts: BayesSums) -> BayesSums:
    """The sum of ``parts``, in the order given."""
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def bayes_sums(X: np.ndarray, gaps: np.ndarray | None, labels: np.ndarray, k: int, layout: BayesLayout) -> BayesSums:
    """The :class:`BayesSums` of rows X (n, width) with ``labels`` (n,) in 0..k−1 and numeric ``gaps`` (n, q) bool
    (None: none), :data:`SCORE_BLOCK_ROWS` rows at a time."""
    total = None
    for start in range(0, max(len(X), 1), SCORE_BLOCK_ROWS):
        stop = start + SCORE_BLOCK_ROWS
        part = BayesSums.of_design(layout.design(X[start:stop], None if gaps is None else gaps[start:stop]),
                                   labels[start:stop], k, layout)
        total = part if total is None else total + part
    return total


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

    @property
    def coefficients(self) -> np.ndarray:
        """(3q + L, k) what each column of a :meth:`BayesLayout.design` with its given columns adds to each
        cluster's score."""
        precision = 1.0 / self.variance
        return np.ascontiguousarray(np.vstack([
            -0.5 * precision.T, (self.mean * precision).T, self.log_shares.T,
            -0.5 * (self.mean ** 2 * precision + np.log(self.variance)).T]))

    def scores(self, X: np.ndarray, gaps: np.ndarray | None = None) -> np.ndarray:
        """(n, k) log posterior (up to a per-row constant) of rows X (n, width) with numeric ``gaps`` (n, q)."""
        return self.scores_of_design(self.layout.design(X, gaps), self.coefficients)

    def scores_of_design(self, design: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """(n, k) the scores of rows given by their :meth:`BayesLayout.design`; a design without given columns
        (every value given) gets their coefficients' sum."""
        width = design.shape[1]
        scores = design @ coefficients[:width]
        prior = self.log_prior
        if width < len(coefficients):
            prior = prior + coefficients[width:].sum(axis=0)
        scores += prior[None, :]
        return scores

    def step(self, X: np.ndarray, gaps: np.ndarray | None = None, sums: bool = True
             ) -> tuple[np.ndarray, BayesSums | None]:
        """((n,) int64 each row's most probable cluster, the first on a tie; with ``sums`` the
        :class:`BayesSums` of the rows under those labels, else None), :data:`SCORE_BLOCK_ROWS` rows at a time:
        one step and what the next step fits on, from one reading of the rows."""
        out = np.empty(len(X), dtype=np.int64)
        coefficients = self.coefficients
        total = None
        for start in range(0, max(len(X), 1), SCORE_BLOCK_ROWS):
            stop = start + SCORE_BLOCK_ROWS
            design = self.layout.design(X[start:stop], None if gaps is None else gaps[start:stop])
            labels = self.scores_of_design(design, coefficients).argmax(axis=1)
            out[start:stop] = labels
            if sums:
                part = BayesSums.of_design(design, labels, self.k, self.layout)
                total = part if total is None else total + part
        return out, total

    def assign(self, X: np.ndarray, gaps: np.ndarray | None = None) -> np.ndarray:
        """(n,) int64 each row's most probable cluster (the first on a tie)."""
        return self.step(X, gaps, sums=False)[0]

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
