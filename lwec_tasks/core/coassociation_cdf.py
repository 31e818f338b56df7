"""The consensus CDF of the co-association and PAC, exactly, from microcluster counts (no N × N matrix).

The co-association of objects i ≠ j is the fraction of the M base clusterings that put them in one cluster, so
it takes one of the M + 1 values a/M. Over the N(N − 1)/2 pairs of objects its distribution is a histogram of
M + 1 counts; its CDF and PAC (the proportion of ambiguous clustering: the share of pairs whose
co-association lies in (0.1, 0.9); Şenbabaoğlu et al. 2014) follow exactly.

The counts come by inclusion–exclusion over subsets S of the columns. With P(S) the ordered pairs (i ≠ j)
that agree on every column of S — Σ over the groups of objects with equal labels on S of g(g − 1) — the pairs
agreeing on exactly a columns number

    E(a) = Σ_{|S| ≥ a} (−1)^{|S| − a} C(|S|, a) P(S) / 2.

P(S) is summed over the Ñ microclusters (distinct label rows, with their object counts). The subsets are
visited depth first, each refining its parent's groups by one column; a group holding one microcluster stays
one group in every superset, so it leaves the search and its contribution to the supersets below is added in
closed form: the cost follows the groups that still hold several microclusters, not 2^M · Ñ.
Numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numba
import numpy as np

#: The interval of ambiguous co-association that PAC measures, open at both ends.
PAC_INTERVAL = (0.1, 0.9)


@dataclass(frozen=True)
class CoassociationDistribution:
    """``pairs`` (M + 1,) Python ints: unordered pairs of distinct objects whose co-association is a/M."""

    pairs: tuple[int, ...]

    @property
    def n_columns(self) -> int:
        return len(self.pairs) - 1

    @property
    def values(self) -> np.ndarray:
        """(M + 1,) the co-association values a/M."""
        return np.arange(len(self.pairs)) / max(self.n_columns, 1)

    @property
    def cdf(self) -> np.ndarray:
        """(M + 1,) share of pairs whose co-association is at most each value."""
        total = sum(self.pairs)
        return np.cumsum([p / total for p in self.pairs]) if total else np.zeros(len(self.pairs))

    def pac(self, low: float = PAC_INTERVAL[0], high: float = PAC_INTERVAL[1]) -> float:
        """Share of pairs with co-association in (low, high)."""
        total = sum(self.pairs)
        inside = sum(p for p, v in zip(self.pairs, self.values) if low < v < high)
        return inside / total if total else 0.0


@numba.njit(cache=True)
def _subset_sums(rows: np.ndarray, weights: np.ndarray):
    """The depth-first search over column subsets (module docstring), with an explicit stack.

    ``rows`` (Ñ, M) int64 label rows, ``weights`` (Ñ,) int64 objects per row. Returns ``agreeing`` (M + 1,): for
    each subset size t ≥ 1, Σ over the subsets S of size t visited and their groups of (objects in the group)²,
    and ``lone`` (M + 1, M + 1): [t, after] Σ weight² of microclusters left alone in their group at a subset of
    size t whose largest column has ``after`` columns after it. Level buffers hold each level's groups as
    contiguous runs of member indices.
    """
    m, n_columns = rows.shape
    agreeing = np.zeros(n_columns + 1, np.int64)
    lone = np.zeros((n_columns + 1, n_columns + 1), np.int64)
    members = np.empty((n_columns + 1, m), np.int64)
    starts = np.empty((n_columns + 1, m + 1), np.int64)
    n_groups = np.zeros(n_columns + 1, np.int64)
    next_column = np.zeros(n_columns + 1, np.int64)
    for i in range(m):
        members[0, i] = i
    starts[0, 0], starts[0, 1], n_groups[0] = 0, m, 1
    scratch = np.empty(m, np.int64)
    keys = np.empty(m, np.int64)
    sorted_members = np.empty(m, np.int64)
    sorted_keys = np.empty(m, np.int64)
    radices = np.zeros(n_columns, np.int64)
    for i in range(m):
        for c in range(n_columns):
            radices[c] = max(radices[c], rows[i, c] + 1)
    tally = np.zeros(radices.max() + 1 if n_columns else 1, np.int64)
    level = 0
    while level >= 0:
        column = next_column[level]
        if column >= n_columns:
            level -= 1
            continue
        next_column[level] = column + 1
        child = level + 1
        after = n_columns - 1 - column
        filled, groups = 0, 0
        for g in range(n_groups[level]):
            start, stop = starts[level, g], starts[level, g + 1]
            size = stop - start
            for j in range(size):
                scratch[j] = members[level, start + j]
                keys[j] = rows[scratch[j], column]
            if size <= 16:  # insertion sort by code
                for j in range(1, size):
                    key, member = keys[j], scratch[j]
                    i = j - 1
                    while i >= 0 and keys[i] > key:
                        keys[i + 1], scratch[i + 1] = keys[i], scratch[i]
                        i -= 1
                    keys[i + 1], scratch[i + 1] = key, member
                order_members = scratch[:size]
                order_keys = keys[:size]
            else:  # counting sort by code
                radix = radices[column]
                tally[:radix + 1] = 0
                for j in range(size):
                    tally[keys[j] + 1] += 1
                for r in range(radix):
                    tally[r + 1] += tally[r]
                for j in range(size):
                    place = tally[keys[j]]
                    sorted_members[place] = scratch[j]
                    sorted_keys[place] = keys[j]
                    tally[keys[j]] += 1
                order_members = sorted_members[:size]
                order_keys = sorted_keys[:size]
            run_start = 0
            for j in range(1, size + 1):
                if j == size or order_keys[j] != order_keys[run_start]:
                    total = 0
                    for i in range(run_start, j):
                        total += weights[order_members[i]]
                    agreeing[child] += total * total
                    if j - run_start == 1:
                        lone[child, after] += total * total
                    elif after > 0:
                        starts[child, groups] = filled
                        for i in range(run_start, j):
                            members[child, filled] = order_members[i]
                            filled += 1
                        groups += 1
                    run_start = j
        if groups > 0:
            starts[child, groups] = filled
            n_groups[child] = groups
            next_column[child] = column + 1
            level = child
    return agreeing, lone


def coassociation_distribution(rows: np.ndarray, counts: np.ndarray) -> CoassociationDistribution:
    """The distribution of the co-association over pairs of objects, from the microclusters: ``rows`` (Ñ, M)
    integer label rows in 0..k_m − 1 per column (distinct or not) and ``counts`` (Ñ,) objects per row."""
    rows = np.asarray(rows, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n_columns = rows.shape[1]
    n_objects = int(counts.sum())
    agreeing = [0] * (n_columns + 1)  # Σ_{|S| = t} Σ_groups g², Python ints
    agreeing[0] = n_objects * n_objects
    lone = [[0] * (n_columns + 1) for _ in range(n_columns + 1)]
    if len(rows):
        sums, alone = _subset_sums(np.ascontiguousarray(rows), np.ascontiguousarray(counts))
        for t in range(1, n_columns + 1):
            agreeing[t] = int(sums[t])
            lone[t] = [int(v) for v in alone[t]]
    # A microcluster alone in its group at a subset of size t, with `after` columns after the subset's largest,
    # adds its weight² to each superset formed with those columns: C(after, u) of size t + u.
    for t in range(n_columns + 1):
        for after in range(n_columns + 1 - t):
            for extra in range(1, after + 1):
                agreeing[t + extra] += comb(after, extra) * lone[t][after]
    ordered = [a - n_objects * comb(n_columns, t) for t, a in enumerate(agreeing)]  # drop the pairs (i, i)
    exact = [sum((-1) ** (t - a) * comb(t, a) * ordered[t] for t in range(a, n_columns + 1)) // 2
             for a in range(n_columns + 1)]
    return CoassociationDistribution(tuple(exact))
