"""The default-rule choice of ``python -m benchmarks.mix_choice``: rules by size, held-out figures per family,
ties to the simpler rule."""

from __future__ import annotations

import pytest

from benchmarks.mix_rules import Rule, Table, best_rule, candidate_rules, criterion, leave_one_out


def test_a_size_rule_switches_above_its_rows():
    rule = Rule("small", "LWEA", "large", 100)
    assert [rule.mix_for(n) for n in (1, 100, 101)] == ["small", "small", "large"]
    assert Rule("only", "LWGP").mix_for(10**9) == "only"


def tables() -> list[Table]:
    """Small tables prefer mix a, large ones mix b; pools only know the method (LWGP better there)."""
    small = [Table("battery", f"s{i}", 1000, {"a": {"LWEA": 0.9, "LWGP": 0.9}, "b": {"LWEA": 0.5, "LWGP": 0.5}})
             for i in range(3)]
    large = [Table("synthetic", f"l{i}", 10**6, {"a": {"LWEA": 0.4, "LWGP": 0.6}, "b": {"LWEA": 0.8, "LWGP": 0.8}})
             for i in range(2)]
    pools = [Table("pools", f"p{i}", 5000, {None: {"LWEA": 0.6, "LWGP": 0.7}}) for i in range(2)]
    return small + large + pools


def test_families_weigh_alike_and_the_size_rule_wins_held_out():
    rules = candidate_rules(["a", "b"], [20_000, 100_000])
    every = tables()
    assert criterion(Rule("a", "LWGP"), every) == pytest.approx((0.9 + 0.6 + 0.7) / 3)
    result = leave_one_out(rules, every)
    # the two thresholds tie on these tables: the library's own is the simpler rule
    assert result["chosen"] == Rule("a", "LWGP", "b", 100_000)
    assert result["held_out"] == pytest.approx({"battery": 0.9, "synthetic": 0.8, "pools": 0.7})


def test_a_tie_goes_to_the_simpler_rule():
    flat = [Table("battery", "s", 1000, {"a": {"LWEA": 0.8, "LWGP": 0.8}, "b": {"LWEA": 0.8, "LWGP": 0.8}})]
    rules = [Rule("a", "LWGP", "b", 20_000), Rule("b", "LWGP"), Rule("b", "LWEA")]
    assert best_rule(rules, flat) == Rule("b", "LWEA")
