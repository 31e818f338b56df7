"""Making the labels storage of an output table: created on the first write, converted from a wide table.

:func:`prepare_storage` runs inside the writer's transaction: it creates the
runs and rows tables and the view ``<output_table>``
(:mod:`lwec_tasks.io.label_storage`) when nothing is there, and converts a wide
labels table of an earlier release (:func:`migrate_wide_table`) or, on
PostgreSQL, an earlier release's rows table that is not partitioned by run
(:func:`partition_rows_table`) — every row kept — so all happen entirely or not
at all. SQLite runs DDL inside transactions only when one is open;
:func:`begin_writing` opens it.
"""

from __future__ import annotations

import logging
import time

import sqlalchemy as sa

from lwec_tasks.io.catalog import NARROW, WIDE, labels_layout, relation_kind
from lwec_tasks.io.cleanup import run_tables_of
from lwec_tasks.io.duckdb_dialect import is_duckdb, runs_sequence
from lwec_tasks.io.history import create_latest_view, create_view, drop_view, latest_labels_query
from lwec_tasks.io.label_storage import (
    CONFIDENCE_COLUMN,
    HELD_COLUMN,
    StorageNames,
    has_confidence,
    has_held,
    labels_query,
    rows_clause,
    rows_table,
    runs_clause,
    runs_table,
    storage_names,
)
from lwec_tasks.io.locks import bound_lock_waits
from lwec_tasks.io.names import TableName
from lwec_tasks.io.run_tables import (
    drop_run_rows,
    execute_ddl,
    partition_every_run,
    partitioned,
    quoted,
    run_rows_name,
    unpartitioned,
)
from lwec_tasks.stopping import RunStopped, stop_requested

_log = logging.getLogger(__name__)

#: Seconds between two tries for the writers' lock of an output table another run holds.
WRITERS_POLL_SECONDS = 0.1


def begin_writing(connection: sa.Connection, output_table: StorageNames) -> None:
    """Start the connection's transaction as one that writes ``output_table``'s storage; call it first.

    SQLite: ``BEGIN IMMEDIATE`` (Python's sqlite3 opens no transaction before DDL, which would then commit at
    once; IMMEDIATE takes the write lock now, waiting as long as the connection's timeout). PostgreSQL: a
    transaction-level advisory lock on the output table's name, so writers of one table publish in turn (a
    wait for it, logged, holds no reader up); then every other lock wait of the transaction is bounded
    (:func:`~lwec_tasks.io.locks.bound_lock_waits`), so readers of the storage never queue behind it for long.

    The wait for the writers' lock is a try every :data:`WRITERS_POLL_SECONDS`, not a blocking request, so a
    run asked to stop while it waits (:func:`lwec_tasks.stopping.stop_requested`) gives up at once:
    :class:`~lwec_tasks.stopping.RunStopped`, nothing changed.
    """
    dialect = connection.dialect.name
    if dialect == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    elif dialect == "postgresql":
        view = str(output_table.view)
        lock = sa.select(sa.func.pg_try_advisory_xact_lock(sa.func.hashtext(view)))
        if not connection.execute(lock).scalar_one():
            _log.info("Waiting for another run writing to table %r to finish its transaction", view)
            while not connection.execute(lock).scalar_one():
                if stop_requested() is not None:
                    raise RunStopped(f"nothing was written to table {view!r}: the run was stopped while it "
                                     "waited for another run writing to it")
                time.sleep(WRITERS_POLL_SECONDS)
        bound_lock_waits(connection)


def prepare_storage(connection: sa.Connection, output_table: StorageNames, id_type: sa.types.TypeEngine) -> bool:
    """Make ``output_table``'s storage ready for a write, in the caller's transaction; whether it was created.

    Nothing there: the runs table, the rows table (``id`` of ``id_type``) and the view are created. A wide table
    of an earlier release: converted by :func:`migrate_wide_table`; a rows table of an earlier release not
    partitioned by run (PostgreSQL): converted by :func:`partition_rows_table`. Narrow storage whose view is
    missing: the view is made again. Names held by something else: :class:`LwecInputError`
    (:func:`~lwec_tasks.io.catalog.labels_layout`).
    """
    layout = labels_layout(connection, output_table)
    if layout == WIDE:
        migrate_wide_table(connection, output_table)
    elif layout is None:
        create_runs_table(connection, output_table)
        create_rows_table(connection, output_table, id_type)
    elif unpartitioned(connection, output_table):
        partition_rows_table(connection, output_table)
    if layout != NARROW or relation_kind(connection, output_table.view) is None:
        create_labels_view(connection, output_table)
    add_confidence_column(connection, output_table)
    add_held_column(connection, output_table)
    return layout is None


def add_confidence_column(connection: sa.Connection, output_table: StorageNames) -> None:
    """Give the rows table of storage made by an earlier release its nullable ``confidence`` column (the earlier
    runs' rows hold NULL there; on PostgreSQL every run's table gains it with the partitioned table) and make
    the views ``<output_table>`` and, if there, ``<output_table>_latest`` again with it, in the caller's
    transaction. Nothing when the column is there."""
    if has_confidence(connection, output_table):
        return
    names = output_table
    execute_ddl(connection, f"ALTER TABLE {quoted(connection, names.rows)} ADD COLUMN "
                            f"{connection.dialect.identifier_preparer.quote(CONFIDENCE_COLUMN)} REAL")
    latest = names.latest
    had_latest = relation_kind(connection, latest) == "view"
    if connection.dialect.name != "postgresql":  # CREATE VIEW IF NOT EXISTS would keep the old ones
        for view in (latest, names.view):
            if relation_kind(connection, view) == "view":
                drop_view(connection, view)
    create_labels_view(connection, output_table)
    if had_latest:
        create_view(connection, latest, latest_query(connection, output_table))


def add_held_column(connection: sa.Connection, output_table: StorageNames) -> None:
    """Give the runs table of storage made by an earlier release its nullable ``held`` column (NULL for the
    earlier runs: none is held) and make the view ``<output_table>_latest``, if there, again so that it leaves
    held runs out, in the caller's transaction. Nothing when the column is there."""
    if has_held(connection, output_table):
        return
    names = output_table
    execute_ddl(connection, f"ALTER TABLE {quoted(connection, names.runs)} ADD COLUMN "
                            f"{connection.dialect.identifier_preparer.quote(HELD_COLUMN)} BOOLEAN")
    if relation_kind(connection, names.latest) == "view":
        if connection.dialect.name != "postgresql":  # CREATE VIEW IF NOT EXISTS would keep the old one
            drop_view(connection, names.latest)
        create_view(connection, names.latest, latest_query(connection, output_table))


def latest_query(connection: sa.Connection, output_table: StorageNames) -> sa.Select:
    """The ``_latest`` view's query for the storage as it is: with its rows' confidences and leaving held runs out
    where its tables have those columns (:func:`~lwec_tasks.io.history.latest_labels_query`)."""
    return latest_labels_query(output_table, has_confidence(connection, output_table),
                               has_held(connection, output_table))


def create_runs_table(connection: sa.Connection, output_table: StorageNames) -> sa.Table:
    """Create ``output_table``'s runs table in the caller's transaction and return it. On DuckDB its run numbers'
    sequence (:func:`~lwec_tasks.io.duckdb_dialect.runs_sequence`) is created with it, or kept when storage dropped
    by hand left it behind (its numbers only grow, so none is used twice)."""
    runs = runs_table(output_table, connection.dialect)
    runs.create(connection, checkfirst=is_duckdb(connection))
    return runs


def create_rows_table(connection: sa.Connection, output_table: StorageNames, id_type: sa.types.TypeEngine) -> sa.Table:
    """Create ``output_table``'s rows table in the caller's transaction and return it: keyed by (run, id), or on
    PostgreSQL partitioned by run without a key of its own (each run's table is keyed by ``id``)."""
    by_run = partitioned(connection.dialect)
    rows = rows_table(output_table, id_type, keyed=not by_run, by_run=by_run)
    rows.create(connection)
    return rows


def create_labels_view(connection: sa.Connection, output_table: StorageNames) -> None:
    """Create the view ``<output_table>`` over the runs and rows tables (:func:`labels_query`)."""
    query = labels_query(runs_clause(output_table), rows_clause(output_table),
                         confidence=has_confidence(connection, output_table))
    create_view(connection, output_table.view, query)


def migrate_wide_table(connection: sa.Connection, output_table: StorageNames) -> int:
    """Convert the wide labels table ``output_table`` to the runs and rows tables behind a view of the same
    name, in the caller's transaction; returns the rows moved.

    One run per run key and parameters (k, method, θ, M, seed, source table, flow run), stamped with the
    latest ``written_at`` of its rows; the rows keep their ids (the rows table's ``id`` takes the wide
    table's ``id`` type) and labels. The ``<output_table>_latest`` view is dropped first and made again
    over the new tables. If the rows moved do not add up to the wide table's, RuntimeError (and the
    caller's transaction rolls back).
    """
    names = output_table
    wide = sa.Table(names.view.name, sa.MetaData(), schema=names.view.schema, autoload_with=connection)
    latest = names.latest
    if relation_kind(connection, latest) == "view":
        drop_view(connection, latest)
    runs = create_runs_table(connection, output_table)
    rows = create_rows_table(connection, output_table, wide.c.id.type)
    keys = ("run_key", "source_table", "method", "k", "theta", "ensemble_size", "seed", "flow_run_id")
    grouped = [wide.c[name] for name in keys]
    connection.execute(sa.insert(runs).from_select(
        [*keys, "written_at", "row_count", "published"],
        sa.select(*grouped, sa.func.max(wide.c.written_at), sa.func.count(), sa.true()).group_by(*grouped)))
    partition_every_run(connection, output_table)
    same_run = sa.and_(*(wide.c[name].is_not_distinct_from(runs.c[name]) for name in keys))
    connection.execute(sa.insert(rows).from_select(
        ["run", "id", "label"], sa.select(runs.c.run, wide.c.id, wide.c.label).select_from(wide.join(runs, same_run))))
    moved = connection.execute(sa.select(sa.func.count()).select_from(rows)).scalar_one()
    before = connection.execute(sa.select(sa.func.count()).select_from(wide)).scalar_one()
    if moved != before:
        raise RuntimeError(f"converting labels table {str(names.view)!r} moved {moved} of its {before} rows; "
                           "nothing was changed")
    wide.drop(connection)
    create_labels_view(connection, output_table)
    create_latest_view(connection, output_table)
    return moved


def partition_rows_table(connection: sa.Connection, output_table: StorageNames) -> None:
    """Convert the rows table of an earlier release, one plain table, to one partitioned by run
    (:mod:`lwec_tasks.io.run_tables`), in the caller's transaction, every row kept.

    The old table is renamed aside (``<output>_rows$unpartitioned``); the new one takes its name and columns
    (``LIKE``: the same types, ``NOT NULL``), with a partition keyed by ``id`` for every run of the runs table;
    the rows are copied into it, the views ``<output>`` and (if there) ``<output>_latest`` are made again over
    it, and the old table is dropped. A row of no run would have no partition: the copy fails and the caller's
    transaction rolls back.
    """
    names = output_table
    aside = run_rows_name(output_table, "unpartitioned")
    preparer = connection.dialect.identifier_preparer
    execute_ddl(connection, f"ALTER TABLE {quoted(connection, names.rows)} RENAME TO {preparer.quote(aside.name)}")
    execute_ddl(connection, f"CREATE TABLE {quoted(connection, names.rows)} (LIKE {quoted(connection, aside)}) "
                            "PARTITION BY LIST (run)")
    partition_every_run(connection, output_table)
    old = rows_clause(output_table, aside)
    connection.execute(sa.insert(rows_clause(output_table)).from_select(
        ["run", "id", "label"], sa.select(old.c.run, old.c.id, old.c.label)))
    create_labels_view(connection, output_table)  # CREATE OR REPLACE: the views followed the old table's rename
    latest = names.latest
    if relation_kind(connection, latest) == "view":
        create_view(connection, latest, latest_query(connection, output_table))
    execute_ddl(connection, f"DROP TABLE {quoted(connection, aside)}")


def drop_storage(connection: sa.Connection, output_table: TableName | StorageNames) -> None:
    """Drop ``output_table``'s views (``<output_table>_latest`` and ``<output_table>``), its runs' tables
    (PostgreSQL: :func:`~lwec_tasks.io.run_tables.drop_run_rows`), the tables deleted and abandoned runs left
    (:func:`~lwec_tasks.io.cleanup.run_tables_of`) and its runs and rows tables, whichever exist, in the caller's
    transaction."""
    names = storage_names(output_table)
    for view in (names.latest, names.view):
        if relation_kind(connection, view) == "view":
            drop_view(connection, view)
    if partitioned(connection.dialect) and relation_kind(connection, names.runs) == "table":
        runs = runs_clause(names)
        drop_run_rows(connection, names, connection.execute(sa.select(runs.c.run)).scalars().all())
    for run in run_tables_of(connection, names):  # tables of deleted runs not removed yet, staging tables
        for name in (names.run_rows(run), names.staging(run)):
            sa.Table(name.name, sa.MetaData(), schema=name.schema).drop(connection, checkfirst=True)
    for name in (names.rows, names.runs):
        sa.Table(name.name, sa.MetaData(), schema=name.schema).drop(connection, checkfirst=True)
    if is_duckdb(connection):
        connection.execute(sa.schema.DropSequence(runs_sequence(names.runs.name, names.runs.schema), if_exists=True))
