"""``count_values``: the preflight's counts of rows, non-NULL values, rows with a NULL feature and id bounds,
against the same counts taken by pandas; the features are counted one by one only when some row lacks one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lwec_tasks.io.catalog import count_values, describe_source
from lwec_tasks.io.names import parse_table_name

FEATURES = ["f0", "f1", "f2"]


def write(engine: sa.Engine, frame: pd.DataFrame) -> None:
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE IF EXISTS t")
        connection.exec_driver_sql("CREATE TABLE t (id integer, f0 float, f1 float, f2 float)")
        if len(frame):
            connection.execute(sa.text("INSERT INTO t VALUES (:id, :f0, :f1, :f2)"),
                               frame.astype(object).where(frame.notna(), None).to_dict("records"))


def counted_statements(engine: sa.Engine, run) -> tuple[object, int]:
    """``run()``'s result and how many SELECT statements it sent."""
    sent = []
    listener = lambda *args: sent.append(args[2])  # noqa: E731 - (conn, cursor, statement, ...)
    sa.event.listen(engine, "before_cursor_execute", listener)
    try:
        return run(), sum(statement.lstrip().upper().startswith("SELECT") for statement in sent)
    finally:
        sa.event.remove(engine, "before_cursor_execute", listener)


values = st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False))
rows = st.lists(st.tuples(st.one_of(st.none(), st.integers(-50, 50)), values, values, values), max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows, null_free=st.booleans())
def test_counts_equal_those_of_a_straightforward_reference(tmp_path, rows, null_free):
    if null_free:  # the usual table: no NULL anywhere
        rows = [(i, *(0.5 if v is None else v for v in row[1:])) for i, row in enumerate(rows)]
    frame = pd.DataFrame(rows, columns=["id", *FEATURES], dtype=object)
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'counts.db'}")
    try:
        write(engine, frame)
        source = describe_source(engine, parse_table_name("t"))
        counts, selects = counted_statements(engine, lambda: count_values(
            engine, source, [*FEATURES, "id"], any_null_of=FEATURES, bounds_of="id"))
    finally:
        engine.dispose()
    features = frame[FEATURES]
    with_null = int(features.isna().any(axis=1).sum())
    assert counts.rows == len(frame) and counts.rows_with_null == with_null
    assert counts.non_null == {name: int(frame[name].notna().sum()) for name in [*FEATURES, "id"]}
    ids = frame["id"].dropna()
    assert (counts.low, counts.high) == ((int(ids.min()), int(ids.max())) if len(ids) else (None, None))
    assert selects == (2 if with_null else 1)  # the features one by one only when some row lacks one


def test_without_null_checks_every_column_is_counted_in_one_pass(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'counts.db'}")
    try:
        write(engine, pd.DataFrame({"id": [1, 2, 3], "f0": [1.0, None, 2.0], "f1": [None] * 3, "f2": np.ones(3)}))
        source = describe_source(engine, parse_table_name("t"))
        counts, selects = counted_statements(engine, lambda: count_values(engine, source, ["f0", "f1", "id"]))
    finally:
        engine.dispose()
    assert counts.non_null == {"f0": 2, "f1": 0, "id": 3} and counts.rows == 3 and selects == 1
    assert counts.rows_with_null == 0 and (counts.low, counts.high) == (None, None)


def test_non_null_rows_counted_already_are_not_counted_again(tmp_path):
    """With every feature's non-NULL rows given (column_stats counted them), a table with NULLs takes one pass."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'counts.db'}")
    frame = pd.DataFrame({"id": [1, 2, 3], "f0": [1.0, None, 2.0], "f1": [None] * 3, "f2": np.ones(3)})
    try:
        write(engine, frame)
        source = describe_source(engine, parse_table_name("t"))
        known = {name: int(frame[name].notna().sum()) for name in FEATURES}
        counts, selects = counted_statements(engine, lambda: count_values(
            engine, source, [*FEATURES, "id"], any_null_of=FEATURES, bounds_of="id", known_non_null=known))
        plain = count_values(engine, source, [*FEATURES, "id"], any_null_of=FEATURES, bounds_of="id")
    finally:
        engine.dispose()
    assert selects == 1 and counts == plain and counts.rows_with_null == 3
