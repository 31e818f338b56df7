"""Views of a typed table's columns (lwec_tasks.core.views): which columns each base clustering sees, the same
for the same seed, each row placed by its nearest centre in the view's columns; and the ``even`` weighting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwec_tasks.core.base_clusterings import fit_base_clusterings, generate_base_clusterings
from lwec_tasks.core.encoding import TableEncoding, category_code, column_weight, numeric_code
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.mixes import RUN_DEFAULT_MIX
from lwec_tasks.core.views import DEFAULT_VIEWS, clustering_views, parse_views, view_k

RELEVANT, GATED = 0.6, 0.0


def encoding_of(numeric: int, categorical) -> TableEncoding:
    """``numeric`` numeric columns n0.., then one text column per (levels, relevance) of ``categorical``."""
    codes = [numeric_code(f"n{j}") for j in range(numeric)]
    relevance = {}
    for i, (levels, r) in enumerate(categorical):
        codes.append(category_code(f"c{i}", "text", [(f"l{v}", 10 + v) for v in range(levels)]))
        relevance[f"c{i}"] = r
    return TableEncoding(tuple(codes)).with_relevance(relevance)


def reference_views(encoding: TableEncoding, names, n_clusterings: int):
    """The views by their definition, column by column: each view's weighted columns; empty and repeated
    views dropped; None when ``all`` alone (or nothing) is left."""
    weighted, kinds, column = [], [], 0
    for code in encoding.columns:
        for j in range(code.width):
            kinds.append(code.kind)
            weighted.append(code.kind == "numeric" or code.weight[j] > 0)
            column += 1
    kept, seen = [], []
    for name in names:
        if name == "all":
            columns = {j for j in range(column) if weighted[j]}
        else:
            kind = "numeric" if name == "numeric" else "category"
            columns = {j for j in range(column) if weighted[j] and kinds[j] == kind}
        if columns and columns not in seen:
            kept.append(name)
            seen.append(columns)
    if kept in ([], ["all"]):
        return None
    out = np.zeros((n_clusterings, column), dtype=bool)
    for m in range(n_clusterings):
        name = kept[m % len(kept)]
        for j in range(column):
            out[m, j] = name == "all" or (weighted[j] and kinds[j] == ("numeric" if name == "numeric" else
                                                                       "category"))
    return out


def test_the_default_views_of_a_table_in_round_robin():
    encoding = encoding_of(2, [(3, RELEVANT), (2, GATED)])  # columns n0 n1 | c0 ×3 | c1 ×2 (weight 0)
    views = clustering_views(encoding, 5)
    every, numeric, categorical = [True] * 7, [True, True] + [False] * 5, [False, False, True, True, True, False,
                                                                           False]
    np.testing.assert_array_equal(views, [every, numeric, categorical, every, numeric])
    assert DEFAULT_VIEWS == ("all", "numeric", "categorical")


def test_all_numeric_and_fully_gated_tables_have_no_views():
    assert clustering_views(None, 4) is None
    assert clustering_views(encoding_of(3, []), 4) is None
    assert clustering_views(encoding_of(2, [(4, GATED), (2, GATED)]), 4) is None  # every view is the numerics
    only_text = encoding_of(0, [(3, RELEVANT)])  # all = categorical, no numeric view
    assert clustering_views(only_text, 4) is None
    with pytest.raises(LwecInputError, match="unknown view"):
        parse_views("all,colours")


@settings(max_examples=60, deadline=None)
@given(numeric=st.integers(0, 3), categorical=st.lists(st.tuples(st.integers(2, 4), st.sampled_from([RELEVANT,
                                                                                                     GATED])),
                                                        max_size=3),
       names=st.lists(st.sampled_from(["all", "numeric", "categorical"]), min_size=1, max_size=4),
       n_clusterings=st.integers(1, 8))
def test_views_match_their_definition(numeric, categorical, names, n_clusterings):
    encoding = encoding_of(numeric, categorical)
    if encoding.width == 0:
        return
    expected = reference_views(encoding, names, n_clusterings) if encoding.has_categories else None
    got = clustering_views(encoding, n_clusterings, ",".join(names))
    if expected is None:
        assert got is None
    else:
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([0.0, 2.0])), min_size=1,
                     max_size=30),
       k=st.integers(2, 40))
def test_view_k_is_k_capped_at_the_distinct_rows(rows, k):
    assert view_k(np.array(rows), k) == min(k, max(2, len(set(rows))))


def test_subset_views_draw_whole_weighted_columns_from_the_seed():
    encoding = encoding_of(3, [(3, RELEVANT), (2, GATED), (2, RELEVANT)])
    blocks = [[0], [1], [2], [3, 4, 5], [8, 9]]  # source columns of positive weight; 6, 7 are gated
    draws = [clustering_views(encoding, 8, "subset", seed) for seed in range(3)]
    np.testing.assert_array_equal(draws[0], clustering_views(encoding, 8, "subset", 0))
    assert not all(np.array_equal(draws[0], other) for other in draws[1:])
    for views in draws:
        assert not views[:, [6, 7]].any()
        for row in views:
            assert all(row[b].all() or not row[b].any() for b in blocks)
            assert sum(row[b].all() for b in blocks) >= 3  # at least half of the five


@pytest.fixture(scope="module")
def mixed():
    """(X (N, width) standardised as a run standardises, encoding): two numerics separate the clusters in pairs,
    a relevant text column tells a pair apart."""
    rng = np.random.default_rng(0)
    n = 400
    y = rng.integers(0, 4, n)
    frame = pd.DataFrame({"n0": rng.normal(0, 1, n) + 3.0 * (y // 2), "n1": rng.normal(0, 1, n)})
    frame["colour"] = np.array(["red", "green", "blue", "grey"], dtype=object)[y]
    counts = frame["colour"].value_counts()
    encoding = TableEncoding((numeric_code("n0"), numeric_code("n1"),
                              category_code("colour", "text", list(counts.items())))).with_relevance({"colour": 0.8})
    X, _, _ = encoding.transform(frame)
    numeric = encoding.numeric_positions
    mean, scale = encoding.scales(X[:, numeric].mean(axis=0), X[:, numeric].std(axis=0))
    return (X - mean) / scale, encoding


def test_a_view_ensemble_is_the_same_for_the_same_seed_and_each_view_is_its_columns_alone(mixed):
    X, encoding = mixed
    views = clustering_views(encoding, 6)
    first = fit_base_clusterings(X, 6, random_state=4, generators=RUN_DEFAULT_MIX, views=views)
    again = fit_base_clusterings(X, 6, random_state=4, generators=RUN_DEFAULT_MIX, views=views)
    np.testing.assert_array_equal(first.labels, again.labels)
    for a, b in zip(first.centres, again.centres):
        np.testing.assert_array_equal(a, b)
    every = generate_base_clusterings(X, 6, random_state=4, generators=RUN_DEFAULT_MIX)
    numeric = generate_base_clusterings(np.ascontiguousarray(X[:, :2]), 6, random_state=4, generators=RUN_DEFAULT_MIX)
    for m in (0, 3):  # the `all` view: today's clustering m
        np.testing.assert_array_equal(first.labels[:, m], every[:, m])
    for m in (1, 4):  # the numeric view: clustering m of the numerics alone
        np.testing.assert_array_equal(first.labels[:, m], numeric[:, m])
        assert not first.centres[m][:, 2:].any()
    assert first.labels[:, 2].max() < 4  # the categorical view: four distinct rows, k capped at 4


def test_view_clusterings_place_every_row_by_its_nearest_centre_in_the_view(mixed):
    X, encoding = mixed
    views = clustering_views(encoding, 6)
    base = fit_base_clusterings(X, 6, random_state=3, generators="kmeans:1,gmm:1", views=views)
    for m in range(6):
        columns = np.flatnonzero(views[m])
        centres = base.centres[m]
        assert not centres[:, ~views[m]].any()
        distances = ((X[:, None, columns] - centres[None, :, columns]) ** 2).sum(axis=2)
        np.testing.assert_array_equal(base.centre_labels[m][np.argmin(distances, axis=1)], base.labels[:, m])


def test_views_of_the_wrong_shape_are_refused(mixed):
    X, _ = mixed
    with pytest.raises(LwecInputError, match="views must be"):
        fit_base_clusterings(X, 3, random_state=0, views=np.ones((3, 2), dtype=bool))
    with pytest.raises(LwecInputError, match="views must be"):
        fit_base_clusterings(X, 2, random_state=0, views=np.zeros((2, X.shape[1]), dtype=bool))


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(0, 50), min_size=1, max_size=8), factor=st.sampled_from([0.5, 1.0, 2.0]))
def test_the_even_weight_is_the_indicator_scale_of_equally_common_levels(counts, factor):
    total = sum(counts)
    if total == 0:
        return
    shares = [c / total for c in counts]
    q = sum(p * p for p in shares)  # two rows share a level
    expected = factor / (q * (1 - q)) ** 0.5 if 1e-12 < q < 1 - 1e-12 else 0.0
    assert column_weight(shares, "even", factor) == pytest.approx(expected, rel=1e-12)
