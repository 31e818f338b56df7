"""Earlier runs in a labels table: the previous run, pruning, the latest-run view (SQLite and PostgreSQL)."""

import functools
import threading
import time

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from helpers.pipeline import EarlierRun, drop_labels_table, latest_earlier_run, read_labels, unique
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import (
    DatabaseRefusedError,
    LabelRows,
    ensure_latest_view,
    latest_labels_query,
    latest_view_name,
    prune_runs,
    write_labels,
)
from lwec_tasks.io.bulk_read import FAST_PATH_ENV, unescape_percents
from lwec_tasks.io.names import TableName, parse_table_name


@pytest.fixture
def tables(engine):
    """A factory of fresh labels-table names (``prefix`` + suffix); they and their views are dropped after."""
    made = []

    def fresh(prefix="labels"):
        made.append(unique(prefix))
        return made[-1]

    yield fresh
    quote = engine.dialect.identifier_preparer.quote
    with engine.begin() as connection:
        for name in made:
            cursor = connection.connection.cursor()  # no parameters: a "%" in a name stays one "%"
            cursor.execute(unescape_percents(f"DROP VIEW IF EXISTS {quote(name + '_latest')}", engine.dialect))
            cursor.close()
            drop_labels_table(connection, name)


def rows_for(key, ids, labels, source="features"):
    return LabelRows(run_key=key, ids=np.asarray(ids), labels=np.asarray(labels), k=2, method="lwea",
                     theta=0.4, ensemble_size=10, seed=0, source_table=source)


def write_runs(engine, table, runs):
    """Write ``(key, source, ids, labels)`` runs in order, a little apart so their written_at differ."""
    for key, source, ids, labels in runs:
        write_labels(engine, parse_table_name(table), rows_for(key, ids, labels, source))
        time.sleep(0.002)


def stored_keys(url, table):
    frame = read_labels(url, table)
    return {source: sorted(set(group.run_key)) for source, group in frame.groupby("source_table")}


# ----------------------------------------------------------------------------- latest_earlier_run


def test_latest_earlier_run_is_the_newest_other_run_of_the_same_source(engine, tables):
    table = tables()
    write_runs(engine, table, [
        ("a", "features", [3, 1, 2], [0, 0, 1]),
        ("b", "features", [1, 2, 4], [1, 1, 0]),
        ("c", "other", [1, 2], [5, 5]),
    ])
    earlier = latest_earlier_run(engine, table, "features", exclude_run_key="b")
    assert isinstance(earlier, EarlierRun) and earlier.run_key == "a"
    assert earlier.ids.tolist() == [1, 2, 3] and earlier.labels.tolist() == [0, 1, 0]
    assert earlier.labels.dtype == np.int64
    newest = latest_earlier_run(engine, table, "features", exclude_run_key="new")
    assert newest.run_key == "b" and newest.ids.tolist() == [1, 2, 4] and newest.labels.tolist() == [1, 1, 0]
    assert latest_earlier_run(engine, table, "other", exclude_run_key="x").run_key == "c"
    assert latest_earlier_run(engine, table, "other", exclude_run_key="c") is None
    assert latest_earlier_run(engine, table, "missing", exclude_run_key="x") is None


def test_a_rewritten_run_becomes_the_newest(engine, tables):
    table = tables()
    write_runs(engine, table, [("a", "features", [1], [0]), ("b", "features", [1], [1]),
                               ("a", "features", [1, 2], [1, 0])])
    assert latest_earlier_run(engine, table, "features", exclude_run_key="new").run_key == "a"


def test_latest_earlier_run_without_a_table_is_none(engine, tables):
    assert latest_earlier_run(engine, tables(), "features", exclude_run_key="a") is None


def test_a_table_that_is_not_a_labels_table_is_refused(engine, tables):
    table = tables()
    with engine.begin() as connection:
        sa.Table(table, sa.MetaData(), sa.Column("id", sa.Integer)).create(connection)
    with pytest.raises(LwecInputError, match="not an lwec labels table"):
        latest_earlier_run(engine, table, "features", exclude_run_key="a")
    with pytest.raises(LwecInputError, match="not an lwec labels table"):
        prune_runs(engine, parse_table_name(table), "features", keep=1)


# ----------------------------------------------------------------------------- prune_runs


def test_prune_keeps_the_newest_runs_of_one_source_table_only(db_url, engine, tables):
    table = tables()
    write_runs(engine, table, [
        ("a1", "features", [1, 2], [0, 1]), ("b1", "other", [1], [0]), ("a2", "features", [1], [1]),
        ("b2", "other", [1], [1]), ("a3", "features", [1, 2, 3], [0, 0, 1]),
    ])
    assert prune_runs(engine, parse_table_name(table), "features", keep=2) == ["a1"]
    assert stored_keys(db_url, table) == {"features": ["a2", "a3"], "other": ["b1", "b2"]}
    assert prune_runs(engine, parse_table_name(table), "features", keep=2) == []
    assert prune_runs(engine, parse_table_name(table), "features", keep=1) == ["a2"]
    assert prune_runs(engine, parse_table_name(table), "other", keep=5) == []
    assert stored_keys(db_url, table) == {"features": ["a3"], "other": ["b1", "b2"]}
    assert prune_runs(engine, parse_table_name(tables()), "features", keep=1) == []  # no table: nothing to do


def test_prune_on_a_connection_follows_the_callers_transaction(db_url, engine, tables):
    table = tables()
    write_runs(engine, table, [(f"a{i}", "features", [1, 2], [0, 1]) for i in range(4)])
    with engine.connect() as connection:
        transaction = connection.begin()
        assert prune_runs(connection, parse_table_name(table), "features", keep=1) == ["a2", "a1", "a0"]
        transaction.rollback()
    assert stored_keys(db_url, table) == {"features": ["a0", "a1", "a2", "a3"]}
    with engine.begin() as connection:
        assert prune_runs(connection, parse_table_name(table), "features", keep=2, keep_run_key="a0") == ["a2", "a1"]
    assert stored_keys(db_url, table) == {"features": ["a0", "a3"]}


@pytest.mark.parametrize("keep", [0, -1, 1.5, True, "2", None])
def test_prune_needs_a_positive_integer(engine, tables, keep):
    with pytest.raises(LwecInputError, match="keep="):
        prune_runs(engine, parse_table_name(tables()), "features", keep=keep)


# ----------------------------------------------------------------------------- write_labels(keep_runs=)


@pytest.mark.parametrize("fast", ["1", "0"], ids=["adbc", "executemany"])
def test_write_labels_prunes_in_the_same_transaction(db_url, engine, tables, monkeypatch, fast):
    monkeypatch.setenv(FAST_PATH_ENV, fast)
    table = tables()
    write = functools.partial(write_labels, engine, parse_table_name(table))
    write_runs(engine, table, [("a1", "features", [1, 2], [0, 1]), ("a2", "features", [1, 2], [1, 1]),
                               ("b1", "other", [1], [0]), ("a3", "features", [1, 2], [0, 0])])
    assert write(rows_for("a4", [1, 2, 3], [1, 0, 1]), keep_runs=2) == 3
    assert stored_keys(db_url, table) == {"features": ["a3", "a4"], "other": ["b1"]}
    before = read_labels(db_url, table)
    # The prune runs before the insert; the duplicate id fails the insert and must undo the prune too.
    with pytest.raises(DatabaseRefusedError, match="duplicate|UNIQUE"):
        write(rows_for("a5", [7, 8, 8], [1, 1, 1]), keep_runs=1)
    pd.testing.assert_frame_equal(read_labels(db_url, table), before)
    # Rewriting a kept run keeps it even with keep_runs=1.
    write(rows_for("a3", [5], [0]), keep_runs=1)
    assert stored_keys(db_url, table) == {"features": ["a3"], "other": ["b1"]}


def test_write_labels_refuses_a_bad_keep_runs_before_writing(db_url, engine, tables):
    table = tables()
    with pytest.raises(LwecInputError, match="keep_runs=0"):
        write_labels(engine, parse_table_name(table), rows_for("a", [1], [0]), keep_runs=0)
    assert not sa.inspect(engine).has_table(table)


def test_keep_runs_on_a_new_table(db_url, engine, tables):
    table = tables()
    assert write_labels(engine, parse_table_name(table), rows_for("a", [1, 2], [0, 1]), keep_runs=1) == 2
    assert stored_keys(db_url, table) == {"features": ["a"]}


# ----------------------------------------------------------------------------- the latest-run view


def view_rows(engine, view):
    with engine.connect() as connection:
        frame = pd.read_sql(sa.select(sa.table(view, sa.column("run_key"), sa.column("id"), sa.column("label"),
                                               sa.column("source_table"))), connection)
    return sorted(frame[["source_table", "run_key", "id", "label"]].itertuples(index=False, name=None))


def test_the_view_holds_each_source_tables_latest_run_and_follows_new_writes(engine, tables):
    table = tables()
    write_runs(engine, table, [("a1", "features", [1, 2], [0, 1]), ("b1", "other", [1], [3]),
                               ("a2", "features", [1, 2], [1, 1])])
    view = ensure_latest_view(engine, parse_table_name(table))
    assert view == f"{table}_latest" == str(latest_view_name(parse_table_name(table)))
    assert view in sa.inspect(engine).get_view_names()
    assert view_rows(engine, view) == [("features", "a2", 1, 1), ("features", "a2", 2, 1), ("other", "b1", 1, 3)]
    write_runs(engine, table, [("b2", "other", [4, 5], [0, 0])])
    assert view_rows(engine, view) == [("features", "a2", 1, 1), ("features", "a2", 2, 1),
                                       ("other", "b2", 4, 0), ("other", "b2", 5, 0)]
    assert ensure_latest_view(engine, parse_table_name(table)) == view  # idempotent
    with engine.connect() as connection:
        query_rows = connection.execute(latest_labels_query(parse_table_name(table))).mappings().all()
    assert sorted((r["source_table"], r["run_key"], r["id"], r["label"]) for r in query_rows) == \
        view_rows(engine, view)
    assert set(query_rows[0].keys()) >= {"written_at", "k", "method", "theta", "seed", "flow_run_id"}


def test_the_view_breaks_written_at_ties_by_the_larger_run_key(engine, tables):
    table = tables()
    write_runs(engine, table, [("a", "features", [1], [0]), ("b", "features", [1], [7])])
    with engine.begin() as connection:  # run b stamped with run a's very written_at
        runs = sa.table(f"{table}_runs", sa.column("run_key"), sa.column("written_at"))
        stamp = sa.select(runs.c.written_at).where(runs.c.run_key == "a").scalar_subquery()
        connection.execute(sa.update(runs).where(runs.c.run_key == "b").values(written_at=stamp))
    view = ensure_latest_view(engine, parse_table_name(table))
    assert view_rows(engine, view) == [("features", "b", 1, 7)]
    assert latest_earlier_run(engine, table, "features", exclude_run_key="x").run_key == "b"
    assert prune_runs(engine, parse_table_name(table), "features", keep=1) == ["a"]


def test_concurrent_view_creation_is_safe(engine, tables):
    table = tables()
    write_runs(engine, table, [("a", "features", [1], [0])])
    errors, names = [], []

    def create():
        try:
            names.append(ensure_latest_view(engine, parse_table_name(table)))
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=create) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert names == [f"{table}_latest"] * 6


def test_view_errors_name_the_problem(engine, tables):
    with pytest.raises(LwecInputError, match="does not exist"):
        ensure_latest_view(engine, parse_table_name(tables()))
    long_name = "l" * 57
    with pytest.raises(LwecInputError, match=f"the view lwec makes beside it, '{long_name}_latest', would be 64 bytes"):
        ensure_latest_view(engine, parse_table_name(long_name))
    assert latest_view_name(TableName("l" * 56)) == TableName("l" * 56 + "_latest")
    with pytest.raises(LwecInputError, match="bytes"):
        latest_view_name(TableName("é" * 30))  # 60 characters' worth of bytes + suffix
    table = tables()
    write_runs(engine, table, [("a", "features", [1], [0])])
    with engine.begin() as connection:
        sa.Table(f"{table}_latest", sa.MetaData(), sa.Column("x", sa.Integer)).create(connection)
    try:
        with pytest.raises(LwecInputError, match="exists as a table"):
            ensure_latest_view(engine, parse_table_name(table))
    finally:
        with engine.begin() as connection:
            sa.Table(f"{table}_latest", sa.MetaData()).drop(connection)


# ----------------------------------------------------------------------------- odd names


@pytest.mark.parametrize("prefix", ['My "Labels"; DROP TABLE sentinel; --', "labels with spaces", "UPPER",
                                    "per%cent's"])
def test_odd_names_and_values_are_quoted_or_bound_never_pasted(db_url, engine, tables, prefix):
    table = tables(prefix)
    sentinel = tables("sentinel")
    with engine.begin() as connection:
        sa.Table(sentinel, sa.MetaData(), sa.Column("x", sa.Integer)).create(connection)
    source = "src'; DELETE FROM x; --"
    write_runs(engine, table, [("r'1", source, [1, 2], [0, 1]), ("r\"2", source, [1, 2], [1, 0]),
                               ("r3", "plain", [9], [4])])
    assert latest_earlier_run(engine, table, source, exclude_run_key="r\"2").run_key == "r'1"
    view = ensure_latest_view(engine, parse_table_name(table))
    assert view == f"{table}_latest" and view in sa.inspect(engine).get_view_names()
    assert view_rows(engine, view) == [("plain", "r3", 9, 4), (source, 'r"2', 1, 1), (source, 'r"2', 2, 0)]
    assert write_labels(engine, parse_table_name(table), rows_for("r4", [1], [0], source), keep_runs=1) == 1
    assert stored_keys(db_url, table) == {"plain": ["r3"], source: ["r4"]}
    assert prune_runs(engine, parse_table_name(table), "plain", keep=1) == []
    assert view_rows(engine, view) == [("plain", "r3", 9, 4), (source, "r4", 1, 0)]
    assert sa.inspect(engine).has_table(sentinel)
