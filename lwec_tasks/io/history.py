"""Earlier runs in a labels table: recency, an unchanged rerun, pruning old runs, a latest-run view.

A labels table (:mod:`lwec_tasks.io.sink`) keeps every run's rows under its
run key. Runs of one ``source_table`` are ordered by recency: the latest
``written_at`` of their rows first, ties broken by the larger ``run_key``.
Every function here follows that order.

All statements are SQLAlchemy Core constructs on a lightweight table clause
of the labels table (``table`` or ``schema.table``), so the names and the
values (source table, run keys) are quoted or bound by the dialect, never
pasted into SQL text. The one DDL statement, ``CREATE VIEW``, is a compiled
Core ``SELECT`` behind the view name quoted by the dialect's identifier
preparer; the view lives in the labels table's schema. Database errors are
raised as :mod:`lwec_tasks.io.errors` describes.
"""

from __future__ import annotations

import numpy as np
import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.bulk_read import unescape_percents
from lwec_tasks.io.catalog import LABEL_TABLE_COLUMNS, relation_kind
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.identifiers import (  # noqa: F401 - the view's name rules, re-exported
    LATEST_VIEW_SUFFIX,
    MAX_IDENTIFIER_BYTES,
    latest_view_name,
    latest_view_of,
)
from lwec_tasks.io.names import TableName, parse_table_name

#: Run keys per ``DELETE ... WHERE run_key IN (...)`` statement of :func:`prune_runs`.
_DELETE_BATCH = 500



def labels_table_clause(labels_table: str | TableName) -> sa.TableClause:
    """A table clause with the labels-table columns (``table`` or ``schema.table``, quoted by the dialect)."""
    name = parse_table_name(labels_table, "labels_table")
    return sa.table(name.name, *(sa.column(column) for column in LABEL_TABLE_COLUMNS), schema=name.schema)


def runs_by_recency(labels_table: str, source_table: str, exclude_run_key: str | None = None) -> sa.Select:
    """``(run_key, last_written)`` of every run of ``source_table``, most recent first.

    Recency is ``max(written_at)`` over the run's rows, ties broken by the larger
    ``run_key``. ``exclude_run_key`` (default None) leaves that run out.
    """
    table = labels_table_clause(labels_table)
    last_written = sa.func.max(table.c.written_at).label("last_written")
    condition = table.c.source_table == source_table
    if exclude_run_key is not None:
        condition = sa.and_(condition, table.c.run_key != exclude_run_key)
    return (
        sa.select(table.c.run_key, last_written)
        .where(condition)
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
    labels_table: str,
    source_table: str,
    keep: int,
    *,
    keep_run_key: str | None = None,
) -> list[str]:
    """Delete the rows of every run of ``source_table`` but the ``keep`` most recent ones.

    Parameters
    ----------
    engine_or_connection : an Engine (pruned in a transaction of its own) or a
        Connection (pruned inside the caller's transaction: committed or rolled
        back with it; database errors propagate as SQLAlchemy exceptions)
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
    if isinstance(engine_or_connection, sa.Connection):
        return _prune(engine_or_connection, labels_table, source_table, keep, keep_run_key)
    with database_errors(engine_or_connection, f"delete old runs from table {str(labels_table)!r}"), \
            engine_or_connection.begin() as connection:
        return _prune(connection, labels_table, source_table, keep, keep_run_key)


def _prune(connection: sa.Connection, labels_table: str, source_table: str, keep: int,
           keep_run_key: str | None) -> list[str]:
    if not is_labels_table(connection, labels_table):
        return []
    ranked = [row.run_key for row in connection.execute(runs_by_recency(labels_table, source_table))]
    if keep_run_key is None:
        doomed = ranked[keep:]
    else:
        doomed = [key for key in ranked if key != keep_run_key][keep - 1:]
    table = labels_table_clause(labels_table)
    for start in range(0, len(doomed), _DELETE_BATCH):
        batch = doomed[start:start + _DELETE_BATCH]
        connection.execute(
            sa.delete(table).where(table.c.source_table == source_table, table.c.run_key.in_(batch))
        )
    return doomed


# ----------------------------------------------------------------------------- the latest-run view


def latest_labels_query(labels_table: str) -> sa.Select:
    """The rows of each source table's most recent run in ``labels_table``, all labels-table columns.

    For each ``source_table`` the latest run is the one with the largest
    ``written_at``; among runs written at that same instant, the largest
    ``run_key``. As SQL (names quoted by the dialect)::

        SELECT t.* FROM labels AS t
        JOIN (SELECT r.source_table, max(r.run_key) AS run_key
              FROM labels AS r
              JOIN (SELECT source_table, max(written_at) AS written_at
                    FROM labels GROUP BY source_table) AS newest
                ON r.source_table = newest.source_table AND r.written_at = newest.written_at
              GROUP BY r.source_table) AS latest
          ON t.source_table = latest.source_table AND t.run_key = latest.run_key
    """
    table = labels_table_clause(labels_table)
    newest = (
        sa.select(table.c.source_table, sa.func.max(table.c.written_at).label("written_at"))
        .group_by(table.c.source_table)
        .subquery("newest")
    )
    runs = table.alias("runs")
    latest = (
        sa.select(runs.c.source_table, sa.func.max(runs.c.run_key).label("run_key"))
        .join_from(runs, newest, sa.and_(runs.c.source_table == newest.c.source_table,
                                         runs.c.written_at == newest.c.written_at))
        .group_by(runs.c.source_table)
        .subquery("latest")
    )
    return sa.select(*table.c).join_from(
        table, latest, sa.and_(table.c.source_table == latest.c.source_table, table.c.run_key == latest.c.run_key)
    )


def ensure_latest_view(engine: sa.Engine, labels_table: str) -> str:
    """Create the view ``<labels_table>_latest`` over :func:`latest_labels_query` if missing; its name.

    The view is made in the labels table's schema (``analytics.labels`` →
    ``analytics.labels_latest``). A view, so it always shows the current latest
    runs as new ones are written. Idempotent and safe when several processes
    create it at once: SQLite runs ``CREATE VIEW IF NOT EXISTS``; PostgreSQL
    takes a transaction-level advisory lock on the name, then runs ``CREATE OR
    REPLACE VIEW`` only if the view is still missing (an existing view is left
    as it is, so readers are never blocked); other databases run ``CREATE VIEW``
    when it is missing.

    Raises
    ------
    LwecInputError
        The view name is too long (see :func:`latest_view_name`), ``labels_table``
        does not exist or is not a labels table, or something other than a view
        (a table, ...) holds the view's name.
    DatabaseUnreachableError, DatabaseRefusedError
        No connection could be made; the database refused to create the view.
    """
    view = latest_view_of(parse_table_name(labels_table, "labels_table"))
    with database_errors(engine, f"create view {str(view)!r}"), engine.begin() as connection:
        if not is_labels_table(connection, labels_table):
            raise LwecInputError(
                f"labels_table={labels_table!r} does not exist; write labels before creating its view {str(view)!r}"
            )
        dialect = connection.dialect
        if dialect.name == "postgresql":
            connection.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(str(view)))))
        kind = relation_kind(connection, view)
        if kind not in (None, "view"):
            raise LwecInputError(f"{str(view)!r} exists as a {kind}, not a view; rename it or the labels table")
        if dialect.name != "sqlite" and kind == "view":
            return str(view)
        _execute_without_parameters(connection, create_view_sql(dialect, view, latest_labels_query(labels_table)))
    return str(view)


def create_view_sql(dialect: sa.Dialect, view: str | TableName, query: sa.Select) -> str:
    """``CREATE ... VIEW <quoted view> AS <compiled query>`` for ``dialect``, to send without parameters.

    ``view`` is ``name`` or ``schema.name``; each part is quoted by the dialect's identifier preparer.
    """
    compiled = query.compile(dialect=dialect)
    if compiled.params:
        raise LwecInputError(f"a view's query cannot take parameters; got {sorted(compiled.params)}")
    if dialect.name == "sqlite":
        create = "CREATE VIEW IF NOT EXISTS"
    elif dialect.name == "postgresql":
        create = "CREATE OR REPLACE VIEW"
    else:
        create = "CREATE VIEW"
    view = parse_table_name(view, "view")
    preparer = dialect.identifier_preparer
    quoted = preparer.quote(view.name) if view.schema is None else \
        f"{preparer.quote_schema(view.schema)}.{preparer.quote(view.name)}"
    return unescape_percents(f"{create} {quoted} AS {compiled}", dialect)


# ----------------------------------------------------------------------------- shared


def _execute_without_parameters(connection: sa.Connection, sql: str) -> None:
    """Run ``sql`` on the connection's DB-API cursor, in its transaction, with no parameters.

    (``exec_driver_sql`` passes an empty parameter set, on which ``%`` drivers
    would read a ``%`` of a quoted identifier as a placeholder.)
    """
    cursor = connection.connection.cursor()
    try:
        cursor.execute(sql)
    except Exception as error:
        raise sa.exc.DBAPIError.instance(sql, None, error, connection.dialect.loaded_dbapi.Error,
                                         dialect=connection.dialect) from error
    finally:
        cursor.close()


def is_labels_table(connection: sa.Connection, labels_table: str | TableName) -> bool:
    """Whether ``labels_table`` exists; :class:`LwecInputError` if it exists without the labels columns."""
    name = parse_table_name(labels_table, "labels_table")
    inspector = sa.inspect(connection)
    if not inspector.has_table(name.name, schema=name.schema):
        return False
    columns = [column["name"] for column in inspector.get_columns(name.name, schema=name.schema)]
    missing = [column for column in LABEL_TABLE_COLUMNS if column not in columns]
    if missing:
        raise LwecInputError(
            f"labels_table {labels_table!r} is not an lwec labels table (missing columns {missing})"
        )
    return True
