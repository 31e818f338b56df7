"""Which columns are clustered on, which are left out and why, and which look like keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers.pipeline import read_stage, unique
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import describe_source, open_engine
from lwec_tasks.io.columns import ColumnStats, looks_like_key, plan_columns, unique_integer_columns
from lwec_tasks.io.names import parse_table_name


@pytest.mark.parametrize("name", ["key", "customer_key", "order_id", "orderId", "CustomerKey", "pk", "uuid",
                                  "row_uuid", "index", "id"])
def test_key_like_names_are_recognised(name):
    assert looks_like_key(name)


@pytest.mark.parametrize("name", ["f0", "valid", "paid", "keyboard_hits", "key_count", "width", "identity_score"])
def test_feature_like_names_are_not_flagged(name):
    assert not looks_like_key(name)


def test_the_plan_says_why_each_column_is_left_out(db_url):
    engine = open_engine(db_url)
    table = unique("roles")
    with engine.begin() as connection:
        connection.exec_driver_sql(
            f"CREATE TABLE {table} (id integer primary key, customer_key integer, f0 float, flag boolean, note text, "
            "seen date, truth integer, empty float)")
    try:
        source = describe_source(engine, parse_table_name(table))
        # booleans and low-cardinality text are clustered on (one-hot); high-cardinality text is left out
        stats = {"note": ColumnStats(distinct=900, non_null=1000)}
        plan = plan_columns(source.columns, source.numeric_columns, source.primary_key, label_column="truth",
                            table=table, kinds=source.kinds, all_null=["empty"], stats=stats)
        assert plan.feature_columns == ("customer_key", "f0", "flag")
        assert plan.categorical_features == ["flag"]
        assert dict(plan.left_out) == {"id": "id column", "truth": "label column",
                                       "note": "high-cardinality text (900 distinct values)", "seen": "date/time",
                                       "empty": "all NULL"}
        assert plan.key_like_features == ["customer_key"]
        assert plan.describe() == ("clustering on 3 column(s) ['customer_key', 'f0', 'flag']; left out: "
                                   "id (id column), note (high-cardinality text (900 distinct values)), "
                                   "seen (date/time), truth (label column), empty (all NULL)")
        explicit = plan_columns(source.columns, source.numeric_columns, source.primary_key, feature_columns=["f0"],
                                table=table, kinds=source.kinds)
        assert dict(explicit.left_out)["customer_key"] == "not in feature_columns"
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(f"DROP TABLE {table}")
        engine.dispose()


def test_unique_integer_columns_are_found_from_the_values():
    frame = pd.DataFrame({"serial": [10, 11, 12, 13], "count": [1, 1, 2, 3], "f0": [0.1, 0.2, 0.3, 0.4]})
    assert unique_integer_columns(frame, ["serial", "count", "f0"]) == ["serial"]
    assert unique_integer_columns(frame.head(1), ["serial"]) == []


def plan_of(*names):
    return plan_columns(["id", *names], list(names), ["id"])


def test_a_column_without_a_finite_value_is_refused_with_the_columns_to_keep(tmp_path):
    # Infinite, not NULL, in every row: the checks before reading let it through, the read stage does not.
    frame = pd.DataFrame({"id": [1, 2, 3, 4], "f0": [1.0, 2.0, 3.0, 4.0], "bad": [np.inf, np.inf, -np.inf, -np.inf],
                          "f1": [0.0, 1.0, 0.0, 1.0]})
    with pytest.raises(LwecInputError, match=r"^feature column 'bad' has no finite value in any row of table 't' "
                                             r"\(all NULL, NaN or infinite\); leave it out: feature_columns="
                                             r"\['f0', 'f1'\]$"):
        read_stage(frame, tmp_path, "t", feature_columns=["f0", "bad", "f1"], drop_nonfinite=True)


def test_empty_and_small_tables_are_named(tmp_path):
    frame = pd.DataFrame({"id": [1, 2, 3, 4], "f0": [1.0, 2.0, 3.0, np.inf]})
    with pytest.raises(LwecInputError, match=r"^table 't' is empty$"):
        read_stage(frame.head(0), tmp_path, "t", feature_columns=["f0"])
    with pytest.raises(LwecInputError, match=r"^table 't' has only 3 usable rows after dropping 1 rows with "
                                             r"missing values, but n_clusters=2 needs at least 2·k = 4 rows$"):
        read_stage(frame, tmp_path, "t", feature_columns=["f0"], drop_nonfinite=True)
