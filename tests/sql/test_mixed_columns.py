"""Typed columns: the column plan's reasons, the one-hot encoding against a straightforward reference, NULLs as
levels and imputed numerics in the read stage (SQLite, no Prefect)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.pipeline import read_stage
from lwec_tasks.core.encoding import TableEncoding, category_code, column_weight, numeric_code
from lwec_tasks.io.columns import MAX_LEVEL_SHARE, MAX_LEVELS, ColumnStats, plan_columns

COLUMNS = ["id", "amount (€)", "size/weight", "colour", "active", "code", "seen", "flat", "target"]
KINDS = {"id": "integer", "amount (€)": "float", "size/weight": "integer", "colour": "text", "active": "boolean",
         "code": "text", "seen": "date/time", "flat": "float", "target": "integer"}
NUMERIC = [name for name, kind in KINDS.items() if kind in ("integer", "float")]


def test_the_default_plan_uses_numeric_boolean_and_low_cardinality_text_and_says_why_others_are_left_out():
    stats = {"colour": ColumnStats(4, 90), "active": ColumnStats(2, 100), "code": ColumnStats(95, 100),
             "flat": ColumnStats(None, 100, constant=True), "amount (€)": ColumnStats(None, 80),
             "size/weight": ColumnStats(None, 100)}
    plan = plan_columns(COLUMNS, NUMERIC, ["id"], label_column="target", kinds=KINDS, stats=stats)
    assert plan.feature_columns == ("amount (€)", "size/weight", "colour", "active")
    assert plan.categorical_features == ["colour", "active"]
    assert dict(plan.left_out) == {"id": "id column", "target": "label column", "seen": "date/time",
                                   "code": "high-cardinality text (95 distinct values)", "flat": "constant"}


def test_feature_columns_may_name_text_and_boolean_columns_with_any_name():
    plan = plan_columns(COLUMNS, NUMERIC, ["id"], feature_columns=["code", "active", "size/weight"], kinds=KINDS,
                        stats={"code": ColumnStats(95, 100)})
    assert plan.feature_columns == ("code", "active", "size/weight")
    assert plan.categorical_features == ["code", "active"]


@settings(max_examples=60, deadline=None)
@given(distinct=st.integers(0, 400), non_null=st.integers(0, 2000), nulls=st.booleans())
def test_a_text_column_is_left_out_exactly_when_it_is_constant_or_high_cardinality(distinct, non_null, nulls):
    distinct = min(distinct, non_null)
    constant = distinct + nulls <= 1
    stats = {"t": ColumnStats(distinct, non_null, constant)}
    plan = plan_columns(["id", "x", "t"], ["id", "x"], ["id"], kinds={"id": "integer", "x": "float", "t": "text"},
                        stats=stats)
    reasons = dict(plan.left_out)
    high = distinct > MAX_LEVELS or (distinct > 2 and distinct > MAX_LEVEL_SHARE * non_null)
    if constant:
        assert reasons["t"] == "constant"
    elif high:
        assert reasons["t"] == f"high-cardinality text ({distinct} distinct values)"
    else:
        assert "t" in plan.feature_columns and "t" not in reasons


def reference_encoding(frame: pd.DataFrame, numeric, categorical, relevance=None):
    """Straightforward: numerics with NaN/inf → mean of the finite values, z-scored; each text/boolean column
    one-hot over its sorted levels (NULL last, as a level), every indicator × 1/sqrt(1 − Σ p²)
    (× √((relevance − 0.1) / 0.9), at least 0)."""
    blocks, names = [], []
    for name in numeric:
        values = frame[name].to_numpy(dtype=float)
        finite = np.isfinite(values)
        values = np.where(finite, values, values[finite].mean())
        blocks.append(((values - values.mean()) / values.std())[:, None])
        names.append(name)
    for name in categorical:
        column = frame[name].astype(object).where(frame[name].notna(), None)
        levels = sorted({v for v in column if v is not None}, key=lambda v: (str(type(v)), v))
        if column.isna().any():
            levels.append(None)
        shares = np.array([np.mean([(v is None if lv is None else v == lv) for v in column]) for lv in levels])
        gated = 1.0 if relevance is None else max(0.0, relevance[name] - 0.1) / 0.9  # relevance ≤ 0.1 is chance
        weight = 1.0 / np.sqrt(1.0 - np.sum(shares ** 2)) * np.sqrt(gated)
        for level in levels:
            blocks.append(np.array([(v is None if level is None else v == level) for v in column],
                                   dtype=float)[:, None] * weight)
            names.append(f"{name}={'NULL' if level is None else level}")
    return np.hstack(blocks), names


def reference_relevance(frame: pd.DataFrame, numeric, categorical) -> dict:
    """Straightforward: per categorical column the largest chance-corrected η² (pandas groupby over its levels,
    NULL a level) with a numeric column and Cramér's V² (crosstab) with another categorical column, at least 0."""
    def levels(name):
        return frame[name].astype(object).where(frame[name].notna(), "NULL").astype(str)

    n, out = len(frame), {}
    for c in categorical:
        lv, best = levels(c), 0.0
        for x in numeric:
            v = frame[x].astype(float)
            ok = np.isfinite(v)
            groups, m = v[ok].groupby(lv[ok]), v[ok].mean()
            eta = float((groups.count() * (groups.mean() - m) ** 2).sum() / ((v[ok] - m) ** 2).sum())
            chance = (lv[ok].nunique() - 1) / (ok.sum() - 1)
            best = max(best, (eta - chance) / (1 - chance))
        for d in categorical:
            if d != c:
                t = pd.crosstab(lv, levels(d)).to_numpy(dtype=float)
                e = t.sum(1, keepdims=True) * t.sum(0, keepdims=True) / n
                r = min(t.shape) - 1
                v2, chance = ((t - e) ** 2 / e).sum() / (n * r), (t.shape[0] - 1) * (t.shape[1] - 1) / (n * r)
                best = max(best, (v2 - chance) / (1 - chance))
        out[c] = max(best, 0.0)
    return out


def test_relevance_is_high_for_a_column_that_goes_with_the_rest_and_about_zero_for_noise():
    rng = np.random.default_rng(1)
    n = 600
    y = rng.integers(0, 3, n)
    frame = pd.DataFrame({"x": rng.normal(size=n) + 2.0 * y, "tied": np.array(["a", "b", "c"])[y],
                          "noise": rng.choice(list("pqrstuvw"), n)})
    codes = [numeric_code("x")] + [category_code(c, "text", list(frame[c].value_counts().items()))
                                   for c in ("tied", "noise")]
    from lwec_tasks.core.encoding import association_sums, column_relevance

    encoding = TableEncoding(tuple(codes))
    X, _, _ = encoding.transform(frame)
    relevance = column_relevance(association_sums(X, encoding), encoding)
    assert relevance == pytest.approx(reference_relevance(frame, ["x"], ["tied", "noise"]))
    assert relevance["tied"] > 0.6 and relevance["noise"] < 0.02


def mixed(n=40, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"id": np.arange(n) + 1, "amount (€)": rng.normal(size=n),
                          "colour": rng.choice(["red", "green", "blue"], n).astype(object),
                          "active": rng.random(n) < 0.3})
    frame.loc[[1, 5, 9], "amount (€)"] = np.nan
    frame.loc[[2, 3], "colour"] = None
    frame["active"] = frame["active"].astype(object)
    frame.loc[[4], "active"] = None
    return frame


def fitted_encoding(frame: pd.DataFrame) -> TableEncoding:
    codes = [numeric_code("amount (€)")]
    for name, kind in (("colour", "text"), ("active", "boolean")):
        counts = frame[name].astype(object).where(frame[name].notna(), None).value_counts(dropna=False)
        codes.append(category_code(name, kind, [(None if pd.isna(v) else v, c) for v, c in counts.items()]))
    encoding = TableEncoding(tuple(codes))
    X, _, _ = encoding.transform(frame, impute=False)
    return encoding.with_fill({"amount (€)": float(np.nanmean(X[:, 0]))})


def test_the_encoding_equals_a_straightforward_reference():
    frame = mixed()
    encoding = fitted_encoding(frame)
    X, imputed, missing = encoding.transform(frame)
    mean, scale = encoding.scales(X[:, :1].mean(axis=0), X[:, :1].std(axis=0))
    expected, names = reference_encoding(frame, ["amount (€)"], ["colour", "active"])
    assert list(encoding.encoded_names) == names
    np.testing.assert_allclose((X - mean) / scale, expected, rtol=1e-12, atol=1e-12)
    assert imputed.tolist() == [1 if i in (1, 5, 9) else 0 for i in range(len(frame))]
    assert np.flatnonzero(missing).tolist() == [1, 2, 3, 4, 5, 9]
    assert TableEncoding.from_json(encoding.to_json()).to_json() == encoding.to_json()


def test_unseen_categories_and_nulls_of_new_rows_are_encoded_not_refused():
    encoding = fitted_encoding(mixed().dropna(subset=["active"]))  # this table had no NULL in 'active'
    new = pd.DataFrame({"amount (€)": [np.nan, 1.0], "colour": ["purple", None], "active": [None, True]})
    X, imputed, _ = encoding.transform(new)
    names = encoding.encoded_names
    assert X[0, names.index("amount (€)")] == encoding.columns[0].fill  # imputed with the run's mean
    assert X[0, [j for j, n in enumerate(names) if n.startswith("colour=")]].sum() == 0  # unseen: all zeros
    assert X[1, names.index("colour=NULL")] == 1  # the table's NULL level
    assert imputed.tolist() == [3, 0]  # a gap, an unseen colour, an unseen NULL in 'active'


def test_weights_make_each_categorical_column_count_like_one_numeric_column():
    for shares in ([0.5, 0.5], [0.1, 0.9], [1 / 30] * 30):
        p = np.array(shares)
        w = column_weight(p)
        assert 2 * w**2 * (1 - np.sum(p**2)) == pytest.approx(2.0)  # E‖a − b‖² of a z-scored column
    assert column_weight([1.0]) == 0.0  # constant: no weight


def test_the_read_stage_encodes_text_and_booleans_imputes_numerics_and_keeps_every_row(tmp_path):
    frame = mixed()
    table, ids, _, X = read_stage(frame, tmp_path, "t", feature_columns=["amount (€)", "colour", "active"])
    assert table.n_rows == len(frame) and table.imputed_counts == {"amount (€)": 3}
    assert table.feature_names[0] == "amount (€)" and "colour=NULL" in table.feature_names
    relevance = {code.name: code.relevance for code in table.encoding.columns if code.kind == "category"}
    assert relevance == pytest.approx(reference_relevance(frame, ["amount (€)"], ["colour", "active"]))
    expected, _ = reference_encoding(frame.set_index("id").loc[ids].reset_index(), ["amount (€)"],
                                     ["colour", "active"], relevance)
    np.testing.assert_allclose((X - table.mean) / table.scale, expected, rtol=1e-9, atol=1e-9)
    dropped, *_ = read_stage(frame, tmp_path, "t", feature_columns=["amount (€)", "colour", "active"],
                             drop_nonfinite=True)
    assert dropped.n_rows == len(frame) - 6 and dropped.n_dropped == 6


VALUES = st.one_of(st.none(), st.just(float("nan")), st.sampled_from(["red", "blue", " true", "True", "1", ""]),
                   st.booleans(), st.integers(-2, 2))


@settings(max_examples=80, deadline=None)
@given(values=st.lists(VALUES, max_size=30), kind=st.sampled_from(["text", "boolean"]),
       only_text=st.booleans(), arrow=st.booleans())
def test_level_positions_equal_normalising_value_by_value(values, kind, only_text, arrow):
    from lwec_tasks.core.encoding import level_positions, normalise_level

    if only_text:  # a column as a database gives it: text or NULL only (read as object or as Arrow strings)
        values = [v if v is None or isinstance(v, str) else None for v in values]
        series = pd.Series(values, dtype="string[pyarrow]" if arrow else object)
    else:
        series = pd.Series(values, dtype=object)
    index = {level: position for position, level in enumerate(["red", "True", True, False, None, "1", "-1"])}
    expected = [normalise_level(value, kind) for value in series.tolist()]
    positions, missing = level_positions(series, kind, index)
    assert positions.tolist() == [index.get(level, -1) for level in expected]
    assert missing.tolist() == [level is None for level in expected]
