"""The labels storage (a runs table, a rows table, the views ``<labels>`` and ``<labels>_latest``) on SQLite files and
the PostgreSQL test server: queries of the wide table of earlier releases give the same rows after its conversion,
which keeps every row in one transaction; runs are replaced, pruned and tagged with MLflow ids."""

from __future__ import annotations

import datetime as dt
import uuid

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lwec_tasks.io.storage_setup as storage_setup
from helpers.pipeline import drop_labels_table, unique
from helpers.wide_labels import label_table_schema, latest_wide_query, replace_run_key
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import LabelRows, check_label_table, ensure_latest_view, write_labels
from lwec_tasks.io.catalog import NARROW, WIDE, labels_layout
from lwec_tasks.io.history import (
    WIDE as HISTORY_WIDE,
)
from lwec_tasks.io.history import (
    create_view,
    prune_runs,
    record_mlflow_run,
)
from lwec_tasks.io.label_storage import VIEW_COLUMNS, storage_names
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.staging import begin_run

assert HISTORY_WIDE == WIDE

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def tables(engine):
    """``tables()`` → a fresh labels table name; its storage (or wide table) is dropped afterwards."""
    made: list[str] = []
    yield lambda: made.append(unique("stored_labels")) or made[-1]
    with engine.begin() as connection:
        for name in made:
            drop_labels_table(connection, name)


def rows_for(key, ids, labels, source="features", seed=7, flow_run_id=None, k=3):
    return LabelRows(run_key=key, ids=np.asarray(ids), labels=np.asarray(labels), k=k, method="lwea", theta=0.4,
                     ensemble_size=10, seed=seed, source_table=source, flow_run_id=flow_run_id)


def write_wide(engine, name, runs, id_type=None) -> None:
    """A wide labels table as earlier releases wrote it (their DDL and their one-transaction insert), with its
    ``<name>_latest`` view; ``runs``: (LabelRows, written_at) pairs."""
    table = label_table_schema(name, id_type if id_type is not None else sa.BigInteger())
    for rows, written_at in runs:
        constants = {**rows.column_values(), "written_at": written_at}

        def insert(connection, rows=rows, constants=constants):
            if len(rows.ids):
                connection.execute(sa.insert(table), [{**constants, "id": i, "label": int(label)}
                                                      for i, label in zip(rows.ids.tolist(), rows.labels)])

        replace_run_key(engine, table, rows.run_key, rows.source_table, None, insert)
    with engine.begin() as connection:
        create_view(connection, parse_table_name(f"{name}_latest"), latest_wide_query(name))


def query(engine, sql_name, run_key=None):
    """What users query: every row of a relation (ordered), or ``id, label`` of one run key."""
    relation = sa.table(sql_name, *(sa.column(c) for c in VIEW_COLUMNS))
    with engine.connect() as connection:
        if run_key is not None:
            return connection.execute(sa.select(relation.c.id, relation.c.label)
                                      .where(relation.c.run_key == run_key).order_by(relation.c.id)).all()
        rows = connection.execute(sa.select(relation).order_by(relation.c.run_key, relation.c.id)).all()
    return [normal(row) for row in rows]


def normal(row) -> tuple:
    """A row with ``written_at`` as an aware UTC datetime (SQLite gives back text)."""
    values = list(row)
    stamp = values[-1]
    if isinstance(stamp, str):
        stamp = dt.datetime.fromisoformat(stamp)
    values[-1] = stamp.astimezone(dt.UTC) if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)
    return tuple(values)


def relation_kind_of(engine, name):
    from lwec_tasks.io.catalog import relation_kind
    from lwec_tasks.io.names import parse_table_name

    with engine.connect() as connection:
        return relation_kind(connection, parse_table_name(name))


# ----------------------------------------------------------------------------- converting a wide table

run_strategy = st.lists(
    st.tuples(st.sampled_from(["features", "other"]),  # source table
              st.lists(st.integers(0, 40), min_size=0, max_size=25, unique=True),  # ids
              st.integers(0, 3),  # label offset
              st.one_of(st.none(), st.integers(0, 2**40)),  # seed
              st.sampled_from([None, "flow-1"]),  # flow run id
              st.integers(0, 3)),  # minutes after T0 (ties happen)
    min_size=1, max_size=5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=run_strategy)
def test_old_queries_give_the_same_rows_after_the_conversion(engine, tables, runs):
    name = tables()
    wide_runs = [(rows_for(f"run-{i}", ids, (np.arange(len(ids)) + offset) % 3, source, seed, flow),
                  T0 + dt.timedelta(minutes=minutes))
                 for i, (source, ids, offset, seed, flow, minutes) in enumerate(runs)]
    write_wide(engine, name, wide_runs)
    before = query(engine, name)
    before_latest = query(engine, f"{name}_latest")
    before_by_key = {rows.run_key: query(engine, name, rows.run_key) for rows, _ in wide_runs}
    # Independently: every (key, id, label) written, and the latest run per source.
    assert {(r[0], r[1], r[2]) for r in before} == {(rows.run_key, i, int(label)) for rows, _ in wide_runs
                                                    for i, label in zip(rows.ids.tolist(), rows.labels)}
    newest = {}
    for rows, stamp in wide_runs:
        if len(rows.ids):
            newest[rows.source_table] = max(newest.get(rows.source_table, (stamp, rows.run_key)), (stamp, rows.run_key))
    assert {(r[8], r[0]) for r in before_latest} == {(source, key) for source, (_, key) in newest.items()}

    # The next write (of a third source, which leaves the others' latest runs alone) converts the table.
    write_labels(engine, parse_table_name(name), rows_for("new", [1, 2], [0, 1], source="third"))
    with engine.connect() as connection:
        assert labels_layout(connection, parse_table_name(name)) == NARROW
    assert relation_kind_of(engine, name) == "view" and relation_kind_of(engine, f"{name}_latest") == "view"
    after = query(engine, name)
    assert [row for row in after if row[0] != "new"] == before
    assert [row for row in query(engine, f"{name}_latest") if row[0] != "new"] == before_latest
    for key, pairs in before_by_key.items():
        assert query(engine, name, key) == pairs
    assert query(engine, name, "new") == [(1, 0), (2, 1)]
    runs_table = storage_names(parse_table_name(name)).runs.name
    with engine.connect() as connection:  # one run per run key, counted, published
        stored_runs = connection.execute(sa.text(f"select run_key, row_count, published from {runs_table}")).all()
    kept = {rows.run_key: len(rows.ids) for rows, _ in wide_runs if len(rows.ids)}
    assert sorted((key, count, bool(published)) for key, count, published in stored_runs) == \
        sorted([(key, count, True) for key, count in kept.items()] + [("new", 2, True)])


@pytest.mark.parametrize("kind", ["int", "text", "uuid"])
def test_the_conversion_keeps_every_row_and_the_id_type(engine, tables, kind):
    name = tables()
    n = 3000
    ids = {"int": np.arange(n) * 7 + 2**33,
           "text": np.array([f"row-{i}'%" for i in range(n)], dtype=object),
           "uuid": np.array([uuid.UUID(int=i * 2**70 + 5) for i in range(n)], dtype=object)}[kind]
    id_type = {"int": sa.BigInteger(), "text": sa.String(255), "uuid": sa.Uuid()}[kind]
    write_wide(engine, name, [(rows_for("a", ids, np.arange(n) % 5), T0),
                              (rows_for("b", ids[::2], np.arange(0, n, 2) % 3, seed=None), T0)], id_type)
    before = query(engine, name)
    assert len(before) == n + n // 2
    with engine.connect() as connection:
        wide_type = sa.Table(name, sa.MetaData(), autoload_with=connection).c.id.type
    write_labels(engine, parse_table_name(name), rows_for("b", ids[:10], np.zeros(10, dtype=int), seed=None),
                 id_type=id_type)
    after = query(engine, name)
    assert [row for row in after if row[0] == "a"] == [row for row in before if row[0] == "a"]
    as_stored = (lambda i: i.hex) if kind == "uuid" and engine.dialect.name == "sqlite" else (lambda i: i)
    assert [row[1:3] for row in after if row[0] == "b"] == sorted((as_stored(i), 0) for i in ids[:10].tolist())
    rows = storage_names(parse_table_name(name)).rows
    with engine.connect() as connection:
        stored_type = sa.Table(rows.name, sa.MetaData(), autoload_with=connection).c.id.type
    assert stored_type.compile(engine.dialect) == wide_type.compile(engine.dialect)


def test_a_failed_conversion_changes_nothing(engine, tables, monkeypatch):
    name = tables()
    write_wide(engine, name, [(rows_for("a", [1, 2, 3], [0, 1, 2]), T0)])
    before, before_latest = query(engine, name), query(engine, f"{name}_latest")

    def fail(*args, **kwargs):
        raise RuntimeError("injected failure at the end of the conversion")

    monkeypatch.setattr(storage_setup, "create_latest_view", fail)
    with pytest.raises(RuntimeError, match="injected"):
        write_labels(engine, parse_table_name(name), rows_for("b", [1], [0]))
    assert relation_kind_of(engine, name) == "table"
    assert relation_kind_of(engine, storage_names(parse_table_name(name)).runs.name) is None
    assert relation_kind_of(engine, storage_names(parse_table_name(name)).rows.name) is None
    assert query(engine, name) == before and query(engine, f"{name}_latest") == before_latest
    monkeypatch.undo()
    write_labels(engine, parse_table_name(name), rows_for("b", [1], [0]))
    assert [row for row in query(engine, name) if row[0] == "a"] == before


# ----------------------------------------------------------------------------- runs

def stored_runs(engine, name):
    runs = storage_names(parse_table_name(name)).runs.name
    with engine.connect() as connection:
        return connection.execute(sa.text(f"select run, run_key, row_count, mlflow_run_id from {runs} "
                                          "order by run")).all()


def stored_rows(engine, name):
    rows = storage_names(parse_table_name(name)).rows.name
    with engine.connect() as connection:
        return connection.execute(sa.text(f"select run, id, label from {rows} order by run, id")).all()


def test_a_rerun_replaces_its_run_and_pruning_leaves_no_rows_behind(engine, tables):
    name = tables()
    write_labels(engine, parse_table_name(name), rows_for("a", [1, 2, 3], [0, 1, 1]))
    write_labels(engine, parse_table_name(name), rows_for("b", [1, 2], [1, 0]))
    write_labels(engine, parse_table_name(name), rows_for("a", [4], [2]))  # replaces run a
    runs = stored_runs(engine, name)
    assert [(key, count) for _, key, count, _ in runs] == [("b", 2), ("a", 1)]
    assert {run for run, _, _ in stored_rows(engine, name)} == {run for run, *_ in runs}
    assert query(engine, name, "a") == [(4, 2)]
    assert prune_runs(engine, parse_table_name(name), "features", keep=1) == ["b"]
    assert [key for _, key, _, _ in stored_runs(engine, name)] == ["a"]
    assert [(id_, label) for _, id_, label in stored_rows(engine, name)] == [(4, 2)]


def test_an_unpublished_run_is_invisible(engine, tables):
    name = tables()
    write_labels(engine, parse_table_name(name), rows_for("a", [1, 2], [0, 1]))
    ensure_latest_view(engine, parse_table_name(name))
    before, before_latest = query(engine, name), query(engine, f"{name}_latest")
    rows = rows_for("b", [5, 6, 7], [2, 2, 2])
    pending = begin_run(engine, parse_table_name(name), sa.BigInteger(), rows)
    from lwec_tasks.io.staging import append_to, discard_run

    append_to(engine, pending.target, rows.ids, rows.labels, pending.append_run)
    assert query(engine, name) == before and query(engine, f"{name}_latest") == before_latest
    discard_run(engine, pending)
    assert len(stored_rows(engine, name)) == 2 and len(stored_runs(engine, name)) == 1


def test_a_run_abandoned_by_a_killed_writer_goes_when_its_key_is_written_again(engine, tables):
    name = tables()
    rows = rows_for("b", [5, 6, 7], [2, 2, 2])
    abandoned = begin_run(engine, parse_table_name(name), sa.BigInteger(), rows)  # never finished nor discarded
    from lwec_tasks.io.staging import append_to

    append_to(engine, abandoned.target, rows.ids, rows.labels, abandoned.append_run)
    # another key: the run, whose writer lives, stays
    write_labels(engine, parse_table_name(name), rows_for("a", [1], [0]))
    assert abandoned.run in {run for run, *_ in stored_runs(engine, name)}
    if abandoned.lock is not None:
        abandoned.lock.release()  # as the server does when the writer's process dies
    write_labels(engine, parse_table_name(name), rows_for("b", [5, 6], [1, 1]))
    assert [key for _, key, _, _ in stored_runs(engine, name)] == ["a", "b"]
    assert abandoned.run not in {run for run, _, _ in stored_rows(engine, name)}
    assert query(engine, name, "b") == [(5, 1), (6, 1)]


def test_record_mlflow_run(engine, tables):
    name = tables()
    write_labels(engine, parse_table_name(name), rows_for("a", [1], [0]))
    write_labels(engine, parse_table_name(name), rows_for("b", [1], [0]))
    record_mlflow_run(engine, parse_table_name(name), "b", "0123abcd")
    assert [(key, mlflow) for _, key, _, mlflow in stored_runs(engine, name)] == [("a", None), ("b", "0123abcd")]
    with pytest.raises(LwecInputError, match=rf"{name}.*no run with run_key 'c'"):
        record_mlflow_run(engine, parse_table_name(name), "c", "0123abcd")
    with pytest.raises(LwecInputError, match="does not exist"):
        record_mlflow_run(engine, parse_table_name(unique("missing")), "a", "0123abcd")


# ----------------------------------------------------------------------------- names

def test_tables_of_other_shapes_under_the_storage_names_are_refused(engine, tables):
    name = tables()
    with engine.begin() as connection:
        connection.exec_driver_sql(f"create table {name}_runs (x integer)")
    for call in (lambda: check_label_table(engine, parse_table_name(name), parse_table_name("features")),
                 lambda: write_labels(engine, parse_table_name(name), rows_for("a", [1], [0]))):
        with pytest.raises(LwecInputError, match=rf"table '{name}_runs' lacks the columns .*not the lwec labels "
                                                 rf"storage of output_table '{name}'"):
            call()
    with engine.begin() as connection:
        connection.exec_driver_sql(f"drop table {name}_runs")
        connection.exec_driver_sql(f"create table {name}_rows (run integer, id integer, label integer)")
    with pytest.raises(LwecInputError, match=rf"table '{name}_rows' exists without its other half"):
        check_label_table(engine, parse_table_name(name), parse_table_name("features"))
    with engine.begin() as connection:
        connection.exec_driver_sql(f"drop table {name}_rows")


def test_storage_names_fit_postgres_identifiers():
    names = storage_names(parse_table_name("analytics." + "l" * 58))
    assert (names.runs.schema, names.runs.name, names.rows.name) == \
        ("analytics", "l" * 58 + "_runs", "l" * 58 + "_rows")
    with pytest.raises(LwecInputError, match=r"output_table \(--output-table\)='l{59}' is too long: the table lwec "
                                             r"makes beside it, 'l{59}_runs', would be 64 bytes.*at most 58 bytes"):
        storage_names(parse_table_name("l" * 59))
