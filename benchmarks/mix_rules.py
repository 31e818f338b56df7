"""Candidate default rules (a mix, or a mix by table size, and a method) and their choice by leaving one table out
across families of tables.

A *table* is one scored data set: its family ("battery", "pools", "synthetic"), name, row count and its score
per mix and method (``scores[mix][method]``; a pool's base clusterings are fixed, so its scores sit under the
mix ``None`` and only the method matters there). A rule scores a table by its method's score under the mix it
gives the table's row count.

The choice (:func:`leave_one_out`): for each table in turn, the rule with the best criterion on the *other*
tables — the mean over families of each family's mean score, every family weighted alike — is scored on the
held-out table; rules within :data:`TIE` of the best count as tied and the simplest of them is taken
(:attr:`Rule.complexity`). Each family's held-out figure is the mean of its tables' held-out scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations

import numpy as np

METHODS = ("LWEA", "LWGP")
#: Criteria closer than this count as a tie (the simpler rule is taken).
TIE = 1e-3
#: The library's own size threshold (``lwec_tasks.core.base_clusterings.LARGE_N``): above it base clusterings are
#: fitted on samples and a generator keeps at most 64 prototypes. A rule switching here adds no new size.
LIBRARY_LARGE_N = 100_000


@dataclass(frozen=True)
class Rule:
    """Mix ``small`` for tables of at most ``rows`` rows, ``large`` above (``rows`` None: ``small`` always);
    consensus by ``method``."""

    small: str
    method: str
    large: str | None = None
    rows: int | None = None

    def mix_for(self, n_rows: int) -> str:
        return self.small if self.rows is None or n_rows <= self.rows else self.large

    @property
    def name(self) -> str:
        mixes = self.small if self.rows is None else f"{self.small} up to {self.rows:,} rows, else {self.large}"
        return f"{mixes}; {self.method}"

    @property
    def complexity(self) -> tuple:
        """Smaller is simpler: one mix before a size rule, LWEA (the current default) before LWGP, a switch at the
        library's own threshold before a new one, fewer generators per mix before more."""
        generators = sum(len(mix.split(",")) for mix in (self.small, self.large) if mix)
        return (self.rows is not None, self.method != METHODS[0], self.rows not in (None, LIBRARY_LARGE_N),
                generators)


@dataclass
class Table:
    """One scored data set: ``scores[mix][method]`` (mix None: the same under every mix)."""

    family: str
    name: str
    n: int
    scores: dict = field(default_factory=dict)

    def score(self, rule: Rule) -> float | None:
        by_mix = self.scores.get(None) or self.scores.get(rule.mix_for(self.n))
        return None if by_mix is None else by_mix.get(rule.method)


def candidate_rules(mixes: list[str], thresholds: list[int]) -> list[Rule]:
    """Every mix alone, and every ordered pair of distinct mixes switched at each threshold, with each method."""
    rules = [Rule(mix, method) for method in METHODS for mix in mixes]
    rules += [Rule(small, method, large, rows) for method in METHODS for rows in thresholds
              for small, large in permutations(mixes, 2)]
    return rules


def family_means(rule: Rule, tables: list[Table], skip: int | None = None) -> dict[str, float]:
    """Per family: the mean score of ``rule`` over its tables (all but table index ``skip``)."""
    scores: dict[str, list[float]] = {}
    for i, table in enumerate(tables):
        if i != skip:
            scores.setdefault(table.family, []).append(table.score(rule))
    return {family: float(np.mean(values)) for family, values in scores.items()}


def criterion(rule: Rule, tables: list[Table], skip: int | None = None) -> float:
    """The mean over families of :func:`family_means` (families weighted alike)."""
    return float(np.mean(list(family_means(rule, tables, skip).values())))


def best_rule(rules: list[Rule], tables: list[Table], skip: int | None = None) -> Rule:
    """The rule with the highest :func:`criterion`; among those within :data:`TIE` of it, the simplest (then the
    first listed)."""
    values = np.array([criterion(rule, tables, skip) for rule in rules])
    tied = [i for i in np.flatnonzero(values >= values.max() - TIE)]
    return rules[min(tied, key=lambda i: (rules[i].complexity, i))]


def scorable(rules: list[Rule], tables: list[Table]) -> list[Rule]:
    """The rules every table has a score for."""
    return [rule for rule in rules if all(table.score(rule) is not None for table in tables)]


def leave_one_out(rules: list[Rule], tables: list[Table]) -> dict:
    """Held-out figures per family, the rule chosen for each held-out table, and the rule chosen on all tables.

    Returns ``{"held_out": {family: mean held-out score}, "chosen_per_table": [(family, name, rule name)],
    "chosen": rule chosen on every table, "tuned": its family means}``.
    """
    rules = scorable(rules, tables)
    held_out: dict[str, list[float]] = {}
    chosen = []
    for i, table in enumerate(tables):
        rule = best_rule(rules, tables, skip=i)
        held_out.setdefault(table.family, []).append(table.score(rule))
        chosen.append((table.family, table.name, rule.name))
    overall = best_rule(rules, tables)
    return {"held_out": {family: float(np.mean(values)) for family, values in held_out.items()},
            "chosen_per_table": chosen, "chosen": overall, "tuned": family_means(overall, tables),
            "rules": rules}
