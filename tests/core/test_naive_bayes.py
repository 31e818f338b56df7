"""The naive-Bayes steps' model against a row-by-row reference written from the definitions."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lwec_tasks.core.naive_bayes import VARIANCE_FLOOR, BayesLayout, BayesModel, bayes_sums

LAYOUT_WIDTH = 8  # numeric at 0 and 3, a 3-level block at 1..2 and 4, a 3-level block at 5..7


def layout_of(centre, scale) -> BayesLayout:
    return BayesLayout(np.array([0, 4]), np.asarray(centre, float), np.asarray(scale, float), ((1, 3), (5, 3)))


@st.composite
def tables(draw):
    """(X (n, 8), gaps (n, 2), labels (n,), k, layout) with rows whose blocks hold one level or none."""
    n = draw(st.integers(4, 40))
    k = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = np.zeros((n, LAYOUT_WIDTH))
    X[:, 0] = rng.normal(5.0, 3.0, n)
    X[:, 4] = rng.normal(-2.0, 0.5, n)
    for first in (1, 5):
        level = rng.integers(-1, 3, n)  # −1: an unseen value, no indicator
        has = level >= 0
        X[np.flatnonzero(has), first + level[has]] = 1.0
    gaps = rng.random((n, 2)) < draw(st.sampled_from([0.0, 0.2]))
    labels = rng.integers(0, k, n)
    centre, scale = rng.normal(0, 2, 2), rng.uniform(0.5, 3, 2)
    return X, gaps, labels, k, layout_of(centre, scale)


def reference_scores(X, gaps, labels, k, layout) -> np.ndarray:
    """(n, k) the log posterior of every row, each number from its definition, one row and cluster at a time."""
    z = (X[:, layout.numeric] - layout.centre) / layout.scale
    given_all = [(i, j) for i in range(len(X)) for j in range(z.shape[1]) if not gaps[i, j]]
    overall = []
    for j in range(z.shape[1]):
        values = [z[i, j] for i, jj in given_all if jj == j]
        mean = sum(values) / max(len(values), 1)
        overall.append((mean, sum((v - mean) ** 2 for v in values) / max(len(values), 1)))
    scores = np.empty((len(X), k))
    for c in range(k):
        members = [i for i in range(len(X)) if labels[i] == c]
        prior = math.log(len(members) / len(X)) if members else -math.inf
        params = []
        for j in range(z.shape[1]):
            values = [z[i, j] for i in members if not gaps[i, j]]
            if values:
                mean = sum(values) / len(values)
                variance = sum((v - mean) ** 2 for v in values) / len(values)
            else:
                mean, variance = overall[j]
            floor = VARIANCE_FLOOR * (overall[j][1] if overall[j][1] > 0 else 1.0)
            params.append((mean, max(variance, floor)))
        for i in range(len(X)):
            total = prior
            for j, (mean, variance) in enumerate(params):
                if not gaps[i, j]:
                    total -= 0.5 * ((z[i, j] - mean) ** 2 / variance + math.log(variance))
            for first, width in layout.blocks:
                for level in range(width):
                    if X[i, first + level] > 0:
                        having = sum(1 for m in members if X[m, first + level] > 0)
                        total += math.log((having + 1) / (len(members) + width))
            scores[i, c] = total
    return scores


@settings(max_examples=60, deadline=None)
@given(tables())
def test_scores_equal_the_definition_row_by_row(table):
    X, gaps, labels, k, layout = table
    model = BayesModel.fit(bayes_sums(X, gaps, labels, k, layout), layout)
    expected = reference_scores(X, gaps, labels, k, layout)
    got = model.scores(X, gaps)
    finite = np.isfinite(expected)
    assert (np.isfinite(got) == finite).all()
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-7, atol=1e-7)
    best = got.argmax(axis=1)
    np.testing.assert_allclose(expected[np.arange(len(X)), best], expected.max(axis=1), rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(tables(), st.integers(1, 39))
def test_sums_add_over_any_split_of_the_rows(table, cut):
    X, gaps, labels, k, layout = table
    cut = min(cut, len(X) - 1)
    whole = bayes_sums(X, gaps, labels, k, layout)
    parts = bayes_sums(X[:cut], gaps[:cut], labels[:cut], k, layout) + \
        bayes_sums(X[cut:], gaps[cut:], labels[cut:], k, layout)
    for name in ("sizes", "given", "sums", "squares", "levels"):
        np.testing.assert_allclose(getattr(parts, name), getattr(whole, name), rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(tables(), st.integers(0, 2**31 - 1))
def test_renumbered_then_restricted_scores_rows_as_before(table, seed):
    X, gaps, labels, k, layout = table
    model = BayesModel.fit(bayes_sums(X, gaps, labels, k, layout), layout)
    n_ids = k + 3
    ids = np.random.default_rng(seed).permutation(n_ids)[:k]
    renamed = model.renumbered(ids, n_ids)
    expected = model.scores(X, gaps)
    scores = renamed.scores(X, gaps)
    np.testing.assert_allclose(scores[:, ids], expected, rtol=1e-12, atol=1e-9)
    others = np.setdiff1d(np.arange(n_ids), ids)
    assert (scores[:, others] == -np.inf).all()  # an id no cluster takes gets no row
    kept = np.sort(ids)
    restricted = renamed.restricted(kept)
    np.testing.assert_allclose(restricted.scores(X, gaps), scores[:, kept], rtol=1e-12, atol=1e-9)
    again = BayesModel.from_arrays(restricted.arrays())
    np.testing.assert_array_equal(again.assign(X, gaps), restricted.assign(X, gaps))


def test_an_imputed_value_adds_nothing_to_a_rows_scores():
    rng = np.random.default_rng(0)
    X = np.zeros((60, LAYOUT_WIDTH))
    X[:, 0] = rng.normal(0, 1, 60)
    X[:, 4] = rng.normal(0, 1, 60)
    X[np.arange(60), 1 + rng.integers(0, 3, 60)] = 1.0
    labels = rng.integers(0, 3, 60)
    layout = layout_of([0.0, 0.0], [1.0, 1.0])
    model = BayesModel.fit(bayes_sums(X, None, labels, 3, layout), layout)
    row = X[:1].copy()
    with_gap = np.array([[True, False]])
    base = model.scores(row, with_gap)
    for value in (-50.0, 0.0, 1e6):  # whatever was filled in
        row[0, 0] = value
        np.testing.assert_allclose(model.scores(row, with_gap), base)


def test_steps_recover_clusters_a_text_column_tells_apart():
    """Two clusters with one numeric distribution, told apart only by a text column: a consensus that split
    them at random is put right by the steps."""
    rng = np.random.default_rng(1)
    n = 400
    y = rng.integers(0, 2, n)
    X = np.zeros((n, LAYOUT_WIDTH))
    X[:, 0] = rng.normal(0, 1, n)
    X[:, 4] = rng.normal(0, 1, n)
    X[np.arange(n), 1 + np.where(rng.random(n) < 0.9, y, 2)] = 1.0
    X[np.arange(n), 5 + rng.integers(0, 3, n)] = 1.0  # noise
    labels = np.where(rng.random(n) < 0.7, y, 1 - y)
    layout = layout_of([0.0, 0.0], [1.0, 1.0])
    for _ in range(3):
        labels = BayesModel.fit(bayes_sums(X, None, labels, 2, layout), layout).assign(X)
    assert np.mean(labels == y) > 0.85 or np.mean(labels == 1 - y) > 0.85
