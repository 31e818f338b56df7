"""Choosing and checking feature columns, and the read stage's checks of their values (SQLite, no Prefect)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.preprocessing import StandardScaler

from helpers.pipeline import read_stage
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.columns import ColumnPlan, plan_columns

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


def test_the_read_standardises_like_scikit_learn_and_keeps_ids_and_truth(tmp_path):
    data = frame()
    table, ids, truth, X = read_stage(data, tmp_path, feature_columns=["f0", "f1"], label_column="target")
    scaler = StandardScaler().fit(data[["f0", "f1"]])
    np.testing.assert_allclose(table.mean, scaler.mean_, rtol=1e-12)
    np.testing.assert_allclose(table.scale, scaler.scale_, rtol=1e-12)
    np.testing.assert_array_equal(X, data[["f0", "f1"]].to_numpy())  # raw; standardised where clustered
    np.testing.assert_array_equal(ids, data["id"])
    np.testing.assert_array_equal(truth, data["target"])
    raw, *_ = read_stage(data, tmp_path, feature_columns=["f0", "f1"], standardize=False)
    assert raw.mean.tolist() == [0.0, 0.0] and raw.scale.tolist() == [1.0, 1.0]


def test_a_text_feature_column_is_one_hot_over_its_levels(tmp_path):
    data = frame().assign(note=["x", "y"] * 5)
    table, _, _, X = read_stage(data, tmp_path, feature_columns=["f0", "note"])
    assert table.feature_names == ("f0", "note=x", "note=y")
    np.testing.assert_array_equal(X[:, 1:], np.column_stack([data["note"] == "x", data["note"] == "y"]))


def test_nonfinite_values_are_counted_per_column_and_can_be_dropped(tmp_path):
    data = frame()
    data.loc[[1, 2], "f0"] = np.nan
    data.loc[2, "f1"] = np.inf
    data.loc[3, "f1"] = -np.inf
    # by default every row is kept: a missing or infinite value is imputed with its column's mean of finite values
    filled, _, _, X = read_stage(data, tmp_path, feature_columns=["f0", "f1"])
    assert filled.imputed_counts == {"f0": 2, "f1": 2} and filled.n_rows == len(data)
    f1 = data["f1"].to_numpy()
    np.testing.assert_allclose(X[[1, 2], 0], np.nanmean(data["f0"]))
    np.testing.assert_allclose(X[[2, 3], 1], f1[np.isfinite(f1)].mean())
    kept, ids, _, _ = read_stage(data, tmp_path, feature_columns=["f0", "f1"], drop_nonfinite=True)
    assert kept.n_dropped == 3 and kept.n_rows == len(data) - 3
    np.testing.assert_array_equal(ids, data["id"].drop(index=[1, 2, 3]))


def test_duplicate_ids_are_refused(tmp_path):
    data = frame()
    data.loc[4, "id"] = data.loc[7, "id"]
    with pytest.raises(LwecInputError, match=r"2 rows sharing 1 duplicate id value\(s\), e.g. \[12\]"):
        read_stage(data, tmp_path, feature_columns=["f0"], id_column="id")


def test_every_object_id_is_checked_and_duplicates_are_found_after_conversion():
    from lwec_tasks.io.features import id_values

    # Ids as read from a column without a declared type: Python objects.
    def ids(values):
        return id_values(pd.Series(values, dtype=object), "id")

    assert ids(list(range(110))).dtype == np.int64
    with pytest.raises(LwecInputError, match=r"id column 'id' mixes value kinds \['integer', 'text'\].*'x1'"):
        ids([*range(105), "x1"])
    with pytest.raises(LwecInputError, match=r"id column 'id' mixes value kinds"):
        ids([*range(105), "5", "6", "7", "8", "9"])
    with pytest.raises(LwecInputError, match=r"id column 'id' has 2 rows sharing 1 duplicate"):
        ids([*range(105), np.int64(7)])
    assert ids([f"r{i}" for i in range(110)])[-1] == "r109"


def test_fewer_rows_than_twice_k_is_refused_after_dropping(tmp_path):
    data = frame(10)
    with pytest.raises(LwecInputError, match=r"10 usable rows, but n_clusters=6 needs at least 2·k = 12"):
        read_stage(data, tmp_path, feature_columns=["f0"], n_clusters=6)
    data.loc[0, "f0"] = np.inf
    with pytest.raises(LwecInputError, match="9 usable rows after dropping 1"):
        read_stage(data, tmp_path, feature_columns=["f0"], n_clusters=5, drop_nonfinite=True)
