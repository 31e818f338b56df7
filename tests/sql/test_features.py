"""Choosing and checking feature columns (no database, no Prefect)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.preprocessing import StandardScaler

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.features import ColumnPlan, plan_columns, prepare_features

COLUMNS = ["id", "f0", "f1", "note", "target"]
NUMERIC = ["id", "f0", "f1", "target"]


def test_default_features_are_numeric_columns_except_id_and_label():
    plan = plan_columns(COLUMNS, NUMERIC, ["id"], label_column="target")
    assert plan == ColumnPlan(("f0", "f1"), "id", "target")


def test_id_defaults_to_primary_key_then_column_named_id_then_row_position():
    assert plan_columns(COLUMNS, NUMERIC, ["f0"]).id_column == "f0"
    assert plan_columns(COLUMNS, NUMERIC, []).id_column == "id"
    assert plan_columns(["a", "b"], ["a", "b"], []).id_column is None


def test_unknown_columns_are_named_with_what_exists():
    with pytest.raises(LwecInputError, match=r"feature_columns: column\(s\) \['nope'\] not found.*'f0'"):
        plan_columns(COLUMNS, NUMERIC, ["id"], feature_columns=["f0", "nope"], table="t")
    with pytest.raises(LwecInputError, match="label_column"):
        plan_columns(COLUMNS, NUMERIC, ["id"], label_column="truth")
    with pytest.raises(LwecInputError, match="id_column"):
        plan_columns(COLUMNS, NUMERIC, ["id"], id_column="key")


def test_features_may_not_repeat_or_double_as_id_or_label():
    with pytest.raises(LwecInputError, match="more than once"):
        plan_columns(COLUMNS, NUMERIC, ["id"], feature_columns=["f0", "f0"])
    with pytest.raises(LwecInputError, match="also the id or label"):
        plan_columns(COLUMNS, NUMERIC, ["id"], feature_columns=["f0", "target"], label_column="target")


def frame(n=10):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"id": np.arange(n) + 5, "f0": rng.normal(size=n), "f1": rng.normal(size=n) * 10,
                         "note": ["x"] * n, "target": np.arange(n) % 2})


def test_prepare_standardises_like_scikit_learn_and_keeps_ids_and_truth():
    data = frame()
    plan = ColumnPlan(("f0", "f1"), "id", "target")
    prepared = prepare_features(data, plan, n_clusters=2)
    np.testing.assert_allclose(prepared.X, StandardScaler().fit_transform(data[["f0", "f1"]]))
    np.testing.assert_array_equal(prepared.ids, data["id"])
    np.testing.assert_array_equal(prepared.truth, data["target"])
    raw = prepare_features(data, plan, n_clusters=2, standardize=False)
    np.testing.assert_array_equal(raw.X, data[["f0", "f1"]].to_numpy())


def test_non_numeric_feature_column_is_named():
    with pytest.raises(LwecInputError, match=r"feature column 'note' is not numeric .*'x'"):
        prepare_features(frame(), ColumnPlan(("f0", "note"), "id", None), n_clusters=2)


def test_nonfinite_values_are_counted_per_column_and_can_be_dropped():
    data = frame()
    data.loc[[1, 2], "f0"] = np.nan
    data.loc[2, "f1"] = np.inf
    data.loc[3, "f1"] = -np.inf
    plan = ColumnPlan(("f0", "f1"), "id", None)
    with pytest.raises(LwecInputError) as error:
        prepare_features(data, plan, n_clusters=2)
    message = str(error.value)
    assert "3 row(s)" in message
    assert "column 'f0': 2 missing/NaN" in message
    assert "column 'f1': 2 infinite" in message
    assert "drop_nonfinite" in message
    kept = prepare_features(data, plan, n_clusters=2, drop_nonfinite=True)
    assert kept.n_rows_dropped == 3
    np.testing.assert_array_equal(kept.ids, data["id"].drop(index=[1, 2, 3]))


def test_duplicate_and_missing_ids_are_refused():
    data = frame()
    data.loc[4, "id"] = data.loc[7, "id"]
    with pytest.raises(LwecInputError, match=r"2 rows sharing 1 duplicate id value\(s\), e.g. \[12\]"):
        prepare_features(data, ColumnPlan(("f0",), "id", None), n_clusters=2)
    data = frame().astype({"id": float})
    data.loc[0, "id"] = np.nan
    with pytest.raises(LwecInputError, match="1 missing"):
        prepare_features(data, ColumnPlan(("f0",), "id", None), n_clusters=2)


def test_every_object_id_is_checked_and_duplicates_are_found_after_conversion():
    # Ids as read from a column without a declared type: Python objects.
    def with_ids(ids):
        return pd.DataFrame({"id": pd.Series(ids, dtype=object), "f0": np.arange(len(ids), dtype=float)})

    plan = ColumnPlan(("f0",), "id", None)
    prepared = prepare_features(with_ids(list(range(110))), plan, n_clusters=2)
    assert prepared.ids.dtype == np.int64
    with pytest.raises(LwecInputError, match=r"id column 'id' mixes value kinds \['integer', 'text'\].*'x1'"):
        prepare_features(with_ids([*range(105), "x1"]), plan, n_clusters=2)
    with pytest.raises(LwecInputError, match=r"id column 'id' mixes value kinds"):
        prepare_features(with_ids([*range(105), "5", "6", "7", "8", "9"]), plan, n_clusters=2)
    with pytest.raises(LwecInputError, match=r"id column 'id' has 2 rows sharing 1 duplicate"):
        prepare_features(with_ids([*range(105), np.int64(7)]), plan, n_clusters=2)
    text = prepare_features(with_ids([f"r{i}" for i in range(110)]), plan, n_clusters=2)
    assert text.ids[-1] == "r109"


def test_fewer_rows_than_twice_k_is_refused_after_dropping():
    data = frame(10)
    with pytest.raises(LwecInputError, match=r"10 usable rows, but n_clusters=6 needs at least 2·k = 12"):
        prepare_features(data, ColumnPlan(("f0",), "id", None), n_clusters=6)
    data.loc[0, "f0"] = np.nan
    with pytest.raises(LwecInputError, match="9 usable rows after dropping 1"):
        prepare_features(data, ColumnPlan(("f0",), "id", None), n_clusters=5, drop_nonfinite=True)
