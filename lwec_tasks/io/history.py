"""Earlier runs in a labels table: recency, pruning old runs, the latest-run view, a run's MLflow id.

A labels table keeps every run (:mod:`lwec_tasks.io.label_storage`: one row per
run in ``<labels>_runs``, its labels in ``<labels>_rows``). Runs of one
``source_table`` are ordered by recency: the latest ``written_at`` first, ties
broken by the larger ``run_key``. Every function here follows that order and
reads the small runs table; only a wide labels table of an earlier release
(read before the next write migrates it) is read row by row.

All statements are SQLAlchemy Core constructs on lightweight table clauses
(``table`` or ``schema.table``), so the names and the values (source table,
run keys) are quoted or bound by the dialect, never pasted into SQL text. The
DDL statements, ``CREATE VIEW``, are compiled Core ``SELECT`` statements behind
the view name quoted by the dialect's identifier preparer; views live in the
labels table's schema. Database errors are raised as :mod:`lwec_tasks.io.errors` describes.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.catalog import LABEL_TABLE_COLUMNS, NARROW, WIDE, labels_layout, relation_kind
from lwec_tasks.io.cleanup import tidy
from lwec_tasks.io.duckdb_dialect import is_duckdb
from lwec_tasks.io.errors import DatabaseUnreachableError, database_errors
from lwec_tasks.io.identifiers import latest_view_name
from lwec_tasks.io.label_storage import (
    StorageNames,
    has_confidence,
    has_held,
    labels_query,
    promoted_runs,
    published_runs,
    rows_clause,
    runs_clause,
    storage_names,
    view_of,
)
from lwec_tasks.io.locks import bound_lock_waits, lock_errors
from lwec_tasks.io.names import TableName
from lwec_tasks.io.run_tables import drop_run_rows, execute_ddl, partitioned, quoted, unpartitioned

_log = logging.getLogger(__name__)

#: Run keys per ``DELETE ... WHERE run_key IN (...)`` statement of :func:`prune_runs`.
_DELETE_BATCH = 500

#: Tries of :func:`ensure_latest_view` on DuckDB, whose transactions fail on another one's creating the same view.
_DUCKDB_VIEW_TRIES = 5


def labels_table_clause(name: TableName) -> sa.TableClause:
    """A table clause with the labels-table columns of the wide labels table ``name`` (quoted by the dialect)."""
    return sa.table(name.name, *(sa.column(column) for column in LABEL_TABLE_COLUMNS), schema=name.schema)


def runs_by_recency(labels_table: TableName | StorageNames, source_table: str, exclude_run_key: str | None = None,
                    layout: str = NARROW) -> sa.Select:
    """``(run_key, last_written)`` of every run of ``source_table``, most recent first.

    Recency is the run's ``written_at``, ties broken by the larger ``run_key``. ``exclude_run_key``
    (default None) leaves that run out. ``layout`` (:func:`~lwec_tasks.io.catalog.labels_layout`, default
    narrow) says where to look: the runs table's published runs, or the rows of a wide table of an earlier
    release (``max(written_at)`` over a run's rows).
    """
    names = storage_names(labels_table)
    table = labels_table_clause(names.view) if layout == WIDE else runs_clause(names)
    condition = [table.c.source_table == source_table, *(() if layout == WIDE else (published_runs(table),))]
    if exclude_run_key is not None:
        condition.append(table.c.run_key != exclude_run_key)
    last_written = sa.func.max(table.c.written_at).label("last_written")
    return (
        sa.select(table.c.run_key, last_written)
        .where(*condition)
        .group_by(table.c.run_key)
        .order_by(last_written.desc(), table.c.run_key.desc())
    )


# ----------------------------------------------------------------------------- pruning


def check_keep(keep, parameter: str = "keep") -> int:
    """``keep`` if it is an integer >= 1, else :class:`LwecInputError` naming ``parameter``."""
    if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or keep < 1:
        raise LwecInputError(f"{parameter}={keep!r} must be an integer >= 1 (the number of runs to keep)")
    return int(keep)


def prune_runs(
    engine_or_connection: sa.Engine | sa.Connection,
    labels_table: TableName | StorageNames,
    source_table: str,
    keep: int,
    *,
    keep_run_key: str | None = None,
) -> list[str]:
    """Delete the rows of every run of ``source_table`` but the ``keep`` most recent ones.

    Parameters
    ----------
    engine_or_connection : an Engine (pruned in a transaction of its own whose lock waits are bounded, then
        the pruned runs' tables dropped when no reader holds them, else left to a later run:
        :func:`lwec_tasks.io.cleanup.remove_leftovers`) or a Connection (pruned inside the caller's
        transaction: committed or rolled back with it; database errors propagate as SQLAlchemy exceptions;
        on PostgreSQL the runs' tables are left to :func:`~lwec_tasks.io.cleanup.remove_leftovers`)
    labels_table : the labels table; nothing happens when it does not exist
    source_table : only runs of this source table are considered; others are left alone
    keep : runs to keep, >= 1, most recent first (see :func:`runs_by_recency`)
    keep_run_key : a run never deleted and counted as one of the ``keep`` (the
        run being written, whatever the clocks say); None: no such run

    Returns
    -------
    list[str]
        The deleted run keys, most recent first.
    """
    keep = check_keep(keep)
    names = storage_names(labels_table)
    if isinstance(engine_or_connection, sa.Connection):
        return _prune(engine_or_connection, names, source_table, keep, keep_run_key)
    with database_errors(engine_or_connection, f"delete old runs from table {str(names)!r}"), \
            lock_errors(f"could not delete old runs from table {str(names)!r}", "nothing was deleted"), \
            engine_or_connection.begin() as connection:
        bound_lock_waits(connection)
        pruned = _prune(connection, names, source_table, keep, keep_run_key)
    tidy(engine_or_connection, names, _log)
    return pruned


def _prune(connection: sa.Connection, labels_table: StorageNames, source_table: str, keep: int,
           keep_run_key: str | None) -> list[str]:
    if not converted(connection, labels_table, "deleting old runs"):
        return []
    ranked = [row.run_key for row in connection.execute(runs_by_recency(labels_table, source_table))]
    if keep_run_key is None:
        doomed = ranked[keep:]
    else:
        doomed = [key for key in ranked if key != keep_run_key][keep - 1:]
    runs = runs_clause(labels_table)
    for start in range(0, len(doomed), _DELETE_BATCH):
        batch = doomed[start:start + _DELETE_BATCH]
        ids = [row.run for row in connection.execute(sa.select(runs.c.run).where(
            runs.c.source_table == source_table, runs.c.run_key.in_(batch), published_runs(runs)))]
        delete_runs(connection, labels_table, ids)
    return doomed


def converted(connection: sa.Connection, labels_table: StorageNames, action: str) -> bool:
    """Whether ``labels_table``'s storage exists (False: nothing there); :class:`LwecInputError` when it is a wide
    table of an earlier release, which is converted by the next write and must be written to once before ``action``."""
    layout = labels_layout(connection, labels_table)
    if layout == WIDE:
        raise LwecInputError(f"labels_table {labels_table!r} is a labels table of an earlier release; write to it "
                             f"once (which converts it) before {action}")
    return layout == NARROW


def delete_runs(connection: sa.Connection, labels_table: StorageNames, runs: list[int]) -> None:
    """Delete the runs numbered ``runs`` (the runs table's ``run``) in the caller's transaction: they leave the
    views at once. Elsewhere than on PostgreSQL (and in a PostgreSQL rows table of an earlier release, not
    partitioned yet) their rows are deleted with them. On PostgreSQL their tables
    stay (out of the views, whose join finds no run for them) and are dropped after the transaction by
    :func:`lwec_tasks.io.cleanup.remove_leftovers`, whose ``DROP`` gives up rather than keep readers waiting."""
    table = runs_clause(labels_table)
    rows_deleted_now = runs and (not partitioned(connection.dialect) or unpartitioned(connection, labels_table))
    for start in range(0, len(runs), _DELETE_BATCH):
        batch = runs[start:start + _DELETE_BATCH]
        if rows_deleted_now:
            drop_run_rows(connection, labels_table, batch)
        connection.execute(sa.delete(table).where(table.c.run.in_(batch)))


def record_mlflow_run(engine: sa.Engine, labels_table: TableName | StorageNames, run_key: str,
                      mlflow_run_id: str) -> None:
    """Set the ``mlflow_run_id`` of the published run ``run_key`` in ``labels_table``'s runs table.

    Raises :class:`LwecInputError` naming the table when it holds no such run (or does not exist, or is a wide table
    of an earlier release, which has no place for the id), and the database errors of :mod:`lwec_tasks.io.errors`.
    """
    labels_table = storage_names(labels_table)
    runs = runs_clause(labels_table)
    with database_errors(engine, f"record the MLflow run of {run_key!r} in table {str(labels_table)!r}"), \
            engine.begin() as connection:
        if not converted(connection, labels_table, f"recording MLflow run {mlflow_run_id!r} in it"):
            raise LwecInputError(f"labels_table {labels_table!r} does not exist: MLflow run {mlflow_run_id!r} "
                                 "not recorded")
        updated = connection.execute(sa.update(runs).where(runs.c.run_key == run_key, published_runs(runs))
                                     .values(mlflow_run_id=mlflow_run_id)).rowcount
    if not updated:
        raise LwecInputError(f"labels_table {labels_table!r} holds no run with run_key {run_key!r}; "
                             f"MLflow run {mlflow_run_id!r} not recorded")


def promote_run(engine: sa.Engine, labels_table: TableName | StorageNames, run_key: str) -> None:
    """Mark the published run ``run_key`` of ``labels_table`` as promoted by its quality gate (``held`` false), so
    that ``<labels_table>_latest`` shows it when it is its source table's latest run.

    Raises :class:`LwecInputError` naming the table when it holds no such published run, and the database errors
    of :mod:`lwec_tasks.io.errors`.
    """
    runs = runs_clause(labels_table, held=True)
    with database_errors(engine, f"promote run {run_key!r} in table {str(labels_table)!r}"), \
            engine.begin() as connection:
        updated = connection.execute(sa.update(runs).where(runs.c.run_key == run_key, published_runs(runs))
                                     .values(held=False)).rowcount
    if not updated:
        raise LwecInputError(f"labels_table {labels_table!r} holds no published run with run_key {run_key!r} to "
                             "promote")


# ----------------------------------------------------------------------------- the latest-run view


def latest_labels_query(labels_table: TableName | StorageNames, confidence: bool = False,
                        held: bool = False) -> sa.Select:
    """The rows of each source table's most recent run in ``labels_table``, all labels-table columns.

    For each ``source_table`` the latest run is the one with the largest
    ``written_at``; among runs written at that same instant, the largest
    ``run_key``. With ``held`` (the runs table has the ``held`` column) runs held by their quality gate are
    not candidates: the latest run is the latest promoted one. As SQL (names quoted by the dialect), on the
    runs table ``r`` and the rows table ``t``, ``promoted`` being ``coalesce(held, false) = false`` (true
    without ``held``)::

        SELECT <labels columns> FROM t JOIN r ON t.run = r.run
        JOIN (SELECT p.source_table, max(p.run_key) AS run_key
              FROM r AS p
              JOIN (SELECT source_table, max(written_at) AS written_at
                    FROM r WHERE published AND promoted GROUP BY source_table) AS newest
                ON p.source_table = newest.source_table AND p.written_at = newest.written_at
              WHERE p.published AND p.promoted
              GROUP BY p.source_table) AS latest
          ON r.source_table = latest.source_table AND r.run_key = latest.run_key
        WHERE r.published
    """
    runs = runs_clause(labels_table, held=held)
    candidates = runs.alias("candidates")

    def eligible(clause):
        return (published_runs(clause), *((promoted_runs(clause),) if held else ()))

    newest = (
        sa.select(runs.c.source_table, sa.func.max(runs.c.written_at).label("written_at"))
        .where(*eligible(runs))
        .group_by(runs.c.source_table)
        .subquery("newest")
    )
    latest = (
        sa.select(candidates.c.source_table, sa.func.max(candidates.c.run_key).label("run_key"))
        .join_from(candidates, newest, sa.and_(candidates.c.source_table == newest.c.source_table,
                                               candidates.c.written_at == newest.c.written_at))
        .where(*eligible(candidates))
        .group_by(candidates.c.source_table)
        .subquery("latest")
    )
    query = labels_query(runs, rows_clause(labels_table), confidence=confidence)
    return query.join(latest, sa.and_(runs.c.source_table == latest.c.source_table,
                                      runs.c.run_key == latest.c.run_key))


def ensure_latest_view(engine: sa.Engine, labels_table: TableName | StorageNames) -> str:
    """Create the view ``<labels_table>_latest`` over :func:`latest_labels_query` if missing; its name.

    The view is made in the labels table's schema (``analytics.labels`` →
    ``analytics.labels_latest``). A view, so it always shows the current latest
    runs as new ones are written. Idempotent and safe when several processes
    create it at once: SQLite runs ``CREATE VIEW IF NOT EXISTS``; PostgreSQL
    takes a transaction-level advisory lock on the name, then runs ``CREATE OR
    REPLACE VIEW`` only if the view is still missing (an existing view is left
    as it is, so readers are never blocked); other databases run ``CREATE VIEW``
    when it is missing (DuckDB: a transaction that failed on another one's
    creating it at the same moment looks again, and finds it).

    Raises
    ------
    LwecInputError
        The view name is too long (see :func:`latest_view_name`), ``labels_table``
        does not exist, is not a labels table or is a wide table of an earlier
        release (converted by the next write), or something other than a view
        (a table, ...) holds the view's name.
    DatabaseUnreachableError, DatabaseRefusedError
        No connection could be made; the database refused to create the view.
    """
    view = latest_view_name(view_of(labels_table))
    labels_table = storage_names(labels_table)
    # DuckDB: a transaction that met another one creating the view at the same moment fails on that write-write
    # conflict; it looks again a moment later, and finds the view made.
    tries = _DUCKDB_VIEW_TRIES if is_duckdb(engine) else 1
    for attempt in range(1, tries + 1):
        try:
            with database_errors(engine, f"create view {str(view)!r}"), engine.begin() as connection:
                if not converted(connection, labels_table, f"creating its view {str(view)!r}"):
                    raise LwecInputError(f"labels_table={labels_table!r} does not exist; write labels before "
                                         f"creating its view {str(view)!r}")
                create_latest_view(connection, labels_table)
            return str(view)
        except DatabaseUnreachableError:
            if attempt == tries:
                raise
            time.sleep(0.05 * attempt)
    return str(view)


def create_latest_view(connection: sa.Connection, labels_table: StorageNames) -> None:
    """:func:`ensure_latest_view`'s work inside the caller's transaction, on narrow labels storage."""
    view = labels_table.latest
    dialect = connection.dialect
    if dialect.name == "postgresql":
        connection.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(str(view)))))
    kind = relation_kind(connection, view)
    if kind not in (None, "view"):
        raise LwecInputError(f"{str(view)!r} exists as a {kind}, not a view; rename it or the labels table")
    if dialect.name != "sqlite" and kind == "view":
        return
    create_view(connection, view, latest_labels_query(labels_table, has_confidence(connection, labels_table),
                                                      has_held(connection, labels_table)))


def create_view(connection: sa.Connection, view: TableName, query: sa.Select) -> None:
    """``CREATE ... VIEW <view> AS <query>`` in the caller's transaction: ``CREATE VIEW IF NOT EXISTS`` on SQLite,
    ``CREATE OR REPLACE VIEW`` on PostgreSQL, ``CREATE VIEW`` elsewhere.

    ``view``'s name and schema are each quoted by the dialect's identifier preparer. ``query``
    is compiled by the dialect and must take no parameters (a view cannot).
    """
    compiled = query.compile(dialect=connection.dialect)
    if compiled.params:
        raise LwecInputError(f"a view's query cannot take parameters; got {sorted(compiled.params)}")
    create = {"sqlite": "CREATE VIEW IF NOT EXISTS", "postgresql": "CREATE OR REPLACE VIEW"}.get(
        connection.dialect.name, "CREATE VIEW")
    execute_ddl(connection, f"{create} {quoted(connection, view)} AS {compiled}")


def drop_view(connection: sa.Connection, view: TableName) -> None:
    """``DROP VIEW IF EXISTS <view>`` in the caller's transaction (``view`` quoted as by :func:`create_view`)."""
    execute_ddl(connection, f"DROP VIEW IF EXISTS {quoted(connection, view)}")
