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
    one-hot over its sorted levels (NULL last, as a level), every indicator × 1/sqrt(q (1 − q)), q = Σ p²
    (× (relevance − 0.1) / 0.9, at least 0)."""
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
        q = np.sum(shares ** 2)
        weight = 1.0 / np.sqrt(q * (1.0 - q)) * gated
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


def city_table(informative: bool, n: int = 600, seed: int = 2) -> pd.DataFrame:
    """A numeric column and a text column naming each of three groups; its NULLs fall on 15 % of the rows at
    random, or (``informative``) on every row of the third group and nowhere else."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    city = np.array(["Oslo", "Lima", "Pune"], dtype=object)[y]
    city[(y == 2) if informative else (rng.random(n) < 0.15)] = None
    return pd.DataFrame({"x": rng.normal(size=n) + 3.0 * y, "city": city, "noise": rng.choice(list("pqrs"), n)})


def city_encoding(frame: pd.DataFrame) -> tuple[TableEncoding, list[np.ndarray]]:
    """The table's encoding (levels counted, relevance not yet measured) and its association sums."""
    from lwec_tasks.core.encoding import association_sums

    codes = [numeric_code("x")]
    for name in ("city", "noise"):
        counts = frame[name].value_counts(dropna=False)
        codes.append(category_code(name, "text", [(None if pd.isna(v) else v, int(c)) for v, c in counts.items()]))
    encoding = TableEncoding(tuple(codes))
    X, _, _ = encoding.transform(frame)
    return encoding, association_sums(X, encoding)


@pytest.mark.parametrize("informative", [False, True])
def test_a_null_indicators_relevance_is_that_of_the_column_null_or_not(informative):
    from lwec_tasks.core.encoding import null_relevance

    frame = city_table(informative)
    encoding, sums = city_encoding(frame)
    indicator = frame.assign(city_is_null=np.where(frame["city"].isna(), "yes", "no"))
    expected = reference_relevance(indicator, ["x"], ["city_is_null", "noise"])["city_is_null"]
    assert null_relevance(sums, encoding) == {"city": pytest.approx(expected)}
    assert (expected > 0.5) if informative else (expected < 0.02)


@pytest.mark.parametrize("informative", [False, True])
def test_nulls_missing_at_random_are_unknown_values_and_informative_ones_a_level(informative):
    from lwec_tasks.core.encoding import column_relevance, null_relevance

    frame = city_table(informative)
    encoding, sums = city_encoding(frame)
    weighted = encoding.with_relevance(column_relevance(sums, encoding), nulls=null_relevance(sums, encoding))
    city = weighted.columns[1]
    assert city.levels[-1] is None and city.null_imputed is (not informative)
    assert (city.weight[-1] == 0) is (not informative) and all(w > 0 for w in city.weight[:-1])
    _, imputed, _ = weighted.transform(frame)
    # a NULL missing at random is counted as imputed (the row's confidence is scaled down), a level is not
    np.testing.assert_array_equal(imputed, frame["city"].isna().to_numpy() & (not informative))
    np.testing.assert_array_equal(weighted.imputed_null_positions, [] if informative else [1 + 3])
    restored = TableEncoding.from_json(weighted.to_json())
    assert restored.columns[1] == city
    # a model stored before NULLs were measured has no null_relevance: its NULL level keeps its weight
    older = [{key: value for key, value in column.items() if key != "null_relevance"} for column in encoding.to_json()]
    assert not TableEncoding.from_json(older).columns[1].null_imputed


def test_the_read_stage_counts_nulls_missing_at_random_as_imputed_unless_their_rows_are_dropped(tmp_path):
    frame = city_table(informative=False, n=300)
    nulls = frame["city"].isna().to_numpy()
    table, ids, _, _ = read_stage(frame.assign(id=np.arange(300)), tmp_path, "t", feature_columns=["x", "city"])
    assert table.imputed_counts == {"city": int(nulls.sum())}
    imputed = np.concatenate([handle.result().imputed for handle in table.rows])
    np.testing.assert_array_equal(imputed, nulls[ids])
    dropped, *_ = read_stage(frame.assign(id=np.arange(300)), tmp_path, "t", feature_columns=["x", "city"],
                             drop_nonfinite=True)
    assert dropped.n_rows == int((~nulls).sum()) and dropped.imputed_counts == {}


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


def test_one_numeric_weights_make_each_categorical_column_count_like_one_numeric_column():
    for shares in ([0.5, 0.5], [0.1, 0.9], [1 / 30] * 30):
        p = np.array(shares)
        w = column_weight(p, "one_numeric")
        assert 2 * w**2 * (1 - np.sum(p**2)) == pytest.approx(2.0)  # E‖a − b‖² of a z-scored column
    assert column_weight([1.0], "one_numeric") == 0.0  # constant: no weight


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


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n=st.integers(0, 40), block_bytes=st.sampled_from([8, 64, 1 << 20]))
def test_fill_matrix_equals_column_by_column_filling(data, n, block_bytes):
    """The blockwise fill gives the matrix that writing one column after the other into zeros gives."""
    import lwec_tasks.core.encoding as encoding

    widths = data.draw(st.lists(st.one_of(st.just(0), st.integers(1, 4)), min_size=1, max_size=6))  # 0: numeric
    numeric, indicators, start = [], [], 0
    floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
    for width in widths:
        if width == 0:
            numeric.append((start, np.array(data.draw(st.lists(floats, min_size=n, max_size=n)), dtype=np.float64)))
            start += 1
        else:
            positions = data.draw(st.lists(st.integers(-1, width - 1), min_size=n, max_size=n))
            indicators.append((start, np.array(positions, dtype=np.int64)))
            start += width
    expected = np.zeros((n, start))
    for column, values in numeric:
        expected[:, column] = values
    for first, positions in indicators:
        for row, position in enumerate(positions):
            if position >= 0:
                expected[row, first + position] = 1.0
    saved = encoding.FILL_BLOCK_BYTES
    encoding.FILL_BLOCK_BYTES = block_bytes
    try:
        X = encoding.fill_matrix(n, start, numeric, indicators)
    finally:
        encoding.FILL_BLOCK_BYTES = saved
    assert X.shape == (n, start)
    np.testing.assert_array_equal(X, expected)


@pytest.mark.postgres
def test_postgres_levels_of_one_grouped_scan_equal_a_group_by_per_column():
    """column_stats' one scan (joint GROUP BY, then GROUPING SETS) gives each text and boolean column the distinct
    values and levels that count(DISTINCT ...) and a GROUP BY per column give, and level_counts reuses them."""
    import sqlalchemy as sa

    import lwec_tasks.io.levels as levels
    from helpers.pipeline import postgres_url_or_skip, unique
    from lwec_tasks.io import TableName, describe_source, open_engine

    engine = open_engine(postgres_url_or_skip())
    name = unique("pglevels")
    rng = np.random.default_rng(3)
    n = 3000
    records = [{"id": i, "colour": [None, "red", "blue", "été", ""][int(c)], "ok": None if b == 2 else bool(b),
                "code": f"c{i}", "flat": "same", "empty": None, "x": float(x)}
               for i, (c, b, x) in enumerate(zip(rng.integers(0, 5, n), rng.integers(0, 3, n), rng.normal(size=n)))]
    table = sa.Table(name, sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True), sa.Column("colour", sa.Text),
                     sa.Column("ok", sa.Boolean), sa.Column("code", sa.Text), sa.Column("flat", sa.Text),
                     sa.Column("empty", sa.Text), sa.Column("x", sa.Double))
    with engine.begin() as connection:
        table.create(connection)
        connection.execute(sa.insert(table), records)
    try:
        source = describe_source(engine, TableName(name))
        columns = ["colour", "ok", "code", "flat", "empty", "x"]
        stats = levels.column_stats(engine, source, columns)
        found = levels.level_counts(engine, source, ["colour", "ok", "flat", "empty"], stats)
        assert stats["code"].levels is None and stats["colour"].levels is not None
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(levels, "grouping_sets_supported", lambda engine: False)
            plain = levels.column_stats(engine, source, columns)
            per_column = levels.level_counts(engine, source, ["colour", "ok", "flat", "empty"])
        assert stats == plain  # distinct, non-NULL rows, constant (levels are not compared)
        assert stats["code"].distinct == n and stats["empty"].distinct == 0 and stats["flat"].constant
        assert {k: sorted(v, key=repr) for k, v in found.items()} == \
            {k: sorted(v, key=repr) for k, v in per_column.items()}
        assert sum(count for _, count in found["ok"]) == n
        with engine.begin() as connection:  # an empty table: no combinations at all
            connection.execute(sa.delete(table))
        empty = levels.column_stats(engine, source, columns)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(levels, "grouping_sets_supported", lambda engine: False)
            assert empty == levels.column_stats(engine, source, columns)
        assert empty["colour"].distinct == 0 and empty["x"].constant
    finally:
        with engine.begin() as connection:
            table.drop(connection)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(0, 30), gaps=st.booleans())
def test_association_sums_equal_the_cross_products_of_their_definition(data, n, gaps):
    """[IᵀI, Iᵀ·finite, Iᵀ·values, Iᵀ·values²] (gaps as 0) of a matrix of numerics and one-hot blocks, exactly: the
    whole-number sums taken as column sums when no numeric value is missing, the others by the same products."""
    from lwec_tasks.core.encoding import association_sums

    encoding = TableEncoding((numeric_code("a"), category_code("c", "text", [("x", 1), ("y", 1), (None, 1)]),
                              numeric_code("b"), category_code("d", "boolean", [(True, 1), (False, 1)])))
    numbers = st.floats(-1e6, 1e6, allow_nan=False) if not gaps else \
        st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(float("nan")), st.just(float("inf")))
    X = np.zeros((n, encoding.width))
    for row in range(n):
        X[row, 0], X[row, 4] = data.draw(numbers), data.draw(numbers)
        X[row, 1 + data.draw(st.integers(0, 2))] = 1.0
        level = data.draw(st.integers(-1, 1))  # −1: an unseen value, all zeros
        if level >= 0:
            X[row, 5 + level] = 1.0
    I, N = X[:, [1, 2, 3, 5, 6]], X[:, [0, 4]]
    finite = np.isfinite(N)
    values = np.where(finite, N, 0.0)
    expected = [I.T @ I, I.T @ finite.astype(np.float64), I.T @ values, I.T @ (values * values)]
    for got, want in zip(association_sums(X, encoding), expected):
        np.testing.assert_array_equal(got, want)


def test_a_table_without_an_id_column_is_told_which_column_could_be_it(tmp_path, caplog):
    frame = mixed().drop(columns=["id"]).assign(customer_id=[f"c-{i:03d}" for i in range(40)])
    with caplog.at_level("WARNING", logger="test"):
        table, ids, _, _ = read_stage(frame, tmp_path, "t")  # the default features: the planning counted them
    assert table.plan.id_column is None and sorted(ids) == list(range(40))  # row positions, as before
    warning = next(r.getMessage() for r in caplog.records if "has no id column" in r.getMessage())
    assert warning.endswith("('customer_id' named like a key, with a distinct value in every row: "
                            "id_column='customer_id', CLI --id-column customer_id)")


def test_text_and_boolean_columns_going_with_nothing_give_a_clear_error_and_no_labels_table(tmp_path):
    from lwec_tasks.core.errors import LwecInputError

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(200), "region": rng.choice(["n", "s", "e"], 200),
                          "amount": [f"{v:.2f}" for v in rng.normal(size=200)]})  # numbers stored as text
    with pytest.raises(LwecInputError, match=r"^table 't' gives nothing to cluster on: no feature column is numeric, "
                       r"and the text and boolean ones go with no other column \(relevance at most 0.1: 'region' "
                       r"0.000\); text columns holding numbers were left out: \['amount'\]"):
        read_stage(frame, tmp_path, "t")
    import sqlalchemy as sa

    assert sa.inspect(sa.create_engine(f"sqlite:///{tmp_path / 'features.db'}")).get_table_names() == ["t"]
