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
def _refine(groups: np.ndarray, n_groups: int, codes: np.ndarray, radix: int, weights: np.ndarray):
    """Split each of ``n_groups`` groups (``groups`` (n,) in 0..n_groups−1) by ``codes`` (n,) in 0..radix−1, by a
    counting sort on the code, then a stable one on the group. Returns (each member's new group (n,), the new
    groups' weight totals, each new group's member count), new groups numbered in (group, code) order."""
    n = len(groups)
    by_code = np.zeros(radix + 1, np.int64)
    for i in range(n):
        by_code[codes[i] + 1] += 1
    for r in range(radix):
        by_code[r + 1] += by_code[r]
    first = np.empty(n, np.int64)
    for i in range(n):
        first[by_code[codes[i]]] = i
        by_code[codes[i]] += 1
    by_group = np.zeros(n_groups + 1, np.int64)
    for i in range(n):
        by_group[groups[i] + 1] += 1
    for g in range(n_groups):
        by_group[g + 1] += by_group[g]
    order = np.empty(n, np.int64)
    for j in range(n):
        i = first[j]
        order[by_group[groups[i]]] = i
        by_group[groups[i]] += 1
    new_groups = np.empty(n, np.int64)
    totals = np.zeros(n, np.int64)
    members = np.zeros(n, np.int64)
    current = -1
    for j in range(n):
        i = order[j]
        if j == 0 or groups[i] != groups[order[j - 1]] or codes[i] != codes[order[j - 1]]:
            current += 1
        new_groups[i] = current
        totals[current] += weights[i]
        members[current] += 1
    return new_groups, totals[:current + 1], members[:current + 1]


def coassociation_distribution(rows: np.ndarray, counts: np.ndarray) -> CoassociationDistribution:
    """The distribution of the co-association over pairs of objects, from the microclusters: ``rows`` (Ñ, M)
    integer label rows in 0..k_m − 1 per column (distinct or not) and ``counts`` (Ñ,) objects per row."""
    rows = np.asarray(rows, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    n_columns = rows.shape[1]
    radices = rows.max(axis=0) + 1 if len(rows) else np.ones(n_columns, np.int64)
    agreeing = [0] * (n_columns + 1)  # Σ_{|S| = t} Σ_groups g², Python ints
    n_objects = int(counts.sum())
    agreeing[0] = n_objects * n_objects
    # A lone microcluster of count c, leaving the search at a subset of size t whose largest column leaves
    # `after` columns after it, adds c² to each superset formed with those columns: C(after, u) of size t + u.
    lone = [[0] * (n_columns + 1) for _ in range(n_columns + 1)]

    def visit(groups: np.ndarray, n_groups: int, members: np.ndarray, size: int, last: int) -> None:
        weights = counts[members]
        for column in range(last + 1, n_columns):
            new_groups, totals, per_group = _refine(groups, n_groups, np.ascontiguousarray(rows[members, column]),
                                                    int(radices[column]), weights)
            agreeing[size + 1] += int(np.dot(totals, totals))
            alone = per_group[new_groups] == 1
            after = n_columns - 1 - column
            if after and alone.any():
                lone[size + 1][after] += int(np.dot(weights[alone], weights[alone]))
            keep = ~alone
            if after and keep.any():
                shared = per_group > 1
                renumbered = np.cumsum(shared) - 1
                visit(renumbered[new_groups[keep]], int(shared.sum()), members[keep], size + 1, column)

    if len(rows):
        visit(np.zeros(len(rows), dtype=np.int64), 1, np.arange(len(rows)), 0, -1)
    for t in range(n_columns + 1):
        for after in range(n_columns + 1 - t):
            for extra in range(1, after + 1):
                agreeing[t + extra] += comb(after, extra) * lone[t][after]
    ordered = [a - n_objects * comb(n_columns, t) for t, a in enumerate(agreeing)]  # drop the pairs (i, i)
    exact = [sum((-1) ** (t - a) * comb(t, a) * ordered[t] for t in range(a, n_columns + 1)) // 2
             for a in range(n_columns + 1)]
    return CoassociationDistribution(tuple(exact))
