"""The base clusterings' k range: the paper's [2, ⌊√N⌋] for numeric tables (the run's draws unchanged), and
[2, max(∛N, 2k)] on a table with a weighted text or boolean column (``categorical_k_max``), wired from the read
stage's encoding to the plan the executors fit."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.pipeline import read_stage
from lwec_tasks.core.base_clusterings import categorical_k_max, nearest_cube_root, paper_k_max
from lwec_tasks.core.seeds import base_seed
from lwec_tasks.stages import generate
from lwec_tasks.stages.base_clusterings import base_plan


@settings(max_examples=300, deadline=None)
@given(n=st.one_of(st.integers(0, 10**6), st.integers(0, 10**18)))
def test_nearest_cube_root_is_the_integer_nearest_the_cube_root(n):
    c = nearest_cube_root(n)
    # c is nearest ∛n exactly when c − ½ ≤ ∛n < c + ½, i.e. (2c − 1)³ ≤ 8n < (2c + 1)³
    assert (2 * c - 1) ** 3 <= 8 * n < (2 * c + 1) ** 3


@pytest.mark.parametrize(("n", "k", "expected"), [
    (900, 4, 10),          # ∛900 = 9.65 → 10 beats 2k = 8
    (900, 6, 12),          # 2k = 12 beats 10
    (1200, None, 11),      # k chosen by the run: ∛1200 = 10.63 → 11
    (1000, None, 10),      # an exact cube
    (100, 8, 10),          # 2k = 16 capped at ⌊√100⌋ = 10
    (3, None, 2),          # never below 2
    (10_000_000, 20, 50),  # ∛N = 215 capped at the paper's 50 above 100,000 rows: large tables keep the paper's range
    (200_000, None, 50),
])
def test_categorical_k_max_examples(n, k, expected):
    assert categorical_k_max(n, k) == expected


@settings(max_examples=200, deadline=None)
@given(n=st.integers(4, 10**8), k=st.one_of(st.none(), st.integers(2, 200)))
def test_categorical_k_max_lies_between_the_requested_range_and_the_papers(n, k):
    paper = math.isqrt(n) if n <= 100_000 else min(math.isqrt(n), 50)
    got = categorical_k_max(n, k)
    assert paper_k_max(n) == paper
    assert 2 <= got <= paper
    assert got >= min(round(n ** (1 / 3)), paper)
    if k is not None:
        assert got >= min(2 * k, paper)
    if n > 125_000:
        assert got == paper  # ∛N ≥ 50


@pytest.mark.parametrize("n", [3, 50, 999, 100_000, 100_001, 4_000_000])
def test_the_default_plan_draws_the_papers_ks(n):
    # a numeric table's run draws its ks exactly as before the categorical range existed
    seed, m = 7, 12
    top = math.isqrt(n) if n <= 100_000 else min(math.isqrt(n), 50)
    expected = np.random.default_rng(base_seed(seed)).integers(2, max(top, 2) + 1, size=m)
    np.testing.assert_array_equal(base_plan(n, m, seed, "kmeans").ks, expected)
    np.testing.assert_array_equal(base_plan(n, m, seed, "kmeans", None).ks, expected)


def test_a_plan_given_k_max_draws_from_two_to_it():
    plan = base_plan(900, 40, 3, "kmeans", 10)
    assert plan.ks.min() >= 2 and plan.ks.max() <= 10
    np.testing.assert_array_equal(plan.ks, np.random.default_rng(base_seed(3)).integers(2, 11, size=40))
    with pytest.raises(Exception, match="k_max"):
        base_plan(900, 4, 3, "kmeans", 1)


def grouped(n=400, seed=0) -> pd.DataFrame:
    """A numeric column and a text and a boolean column that go with its three groups."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    colour = np.array(["red", "green", "blue"])[np.where(rng.random(n) < 0.9, group, rng.integers(0, 3, n))]
    return pd.DataFrame({"id": np.arange(n) + 1, "amount": rng.normal(size=n) + 3.0 * group,
                         "colour": colour.astype(object), "active": (group == 1) ^ (rng.random(n) < 0.1)})


@pytest.mark.parametrize(("features", "n_clusters", "expected"), [
    (["amount", "colour", "active"], 3, categorical_k_max(400, 3)),  # max(∛400 = 7, 6) = 7
    (["amount", "colour", "active"], "auto", 7),                     # ∛400 = 7.37 → 7
    (["amount"], 3, None),                                           # numeric: the paper's range
])
def test_the_generate_stage_narrows_k_only_on_a_table_with_a_weighted_text_or_boolean_column(
        tmp_path, monkeypatch, features, n_clusters, expected):
    table, *_ = read_stage(grouped(), tmp_path, "t", feature_columns=features, n_clusters=n_clusters)
    assert bool(table.encoding.weighted_categories) == (len(features) > 1)
    seen = []

    def recording_plan(*args):
        seen.append(args[4] if len(args) > 4 else None)
        return base_plan(*args)

    monkeypatch.setattr(generate, "base_plan", recording_plan)
    ensemble = generate.base_clusterings(table, 12, 5, logging.getLogger("test"), "kmeans",
                                         None if n_clusters == "auto" else n_clusters)
    assert seen == [expected]
    top = expected if expected is not None else math.isqrt(400)
    assert ensemble.ks.max() <= top and ensemble.ks.min() >= 1
    if expected is None:
        # a numeric table's ks are the paper's draws: some above ∛N
        assert base_plan(400, 12, 5, "kmeans").ks.max() > 7
