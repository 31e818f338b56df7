"""Reading a feature table: chunked reads of the columns a reflected table holds.

The table is reflected by :func:`~lwec_tasks.io.catalog.describe_source`
(re-exported here with :class:`~lwec_tasks.io.catalog.SourceTable`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import sqlalchemy as sa

from lwec_tasks.io.bulk_read import exact_expression, exact_values, read_fast
from lwec_tasks.io.catalog import SourceTable, describe_source  # noqa: F401 - re-exported
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.limits import DEFAULT_CHUNK_SIZE  # noqa: F401 - re-exported


def read_rows(
    engine: sa.Engine,
    source: SourceTable,
    columns: Sequence[str],
    order_by: str | Sequence[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    *,
    exact_columns: Sequence[str] = (),
    where: Sequence[sa.ColumnElement] = (),
) -> pd.DataFrame:
    """Read ``columns`` of every row matching the ``where`` clauses, in that column order.

    ``where``: SQLAlchemy boolean clauses on ``source.table``'s columns (e.g.
    ``source.table.c.id >= 5``), all of which a row must meet; values in them
    are bound or rendered as literals by the dialect, never pasted.

    Rows come back sorted by ``order_by`` (a column, or columns in order of
    precedence) when given, so the same table always yields the same row order
    (and hence the same clustering for a fixed seed).

    ``exact_columns`` (ids) are read without rounding: a DECIMAL/NUMERIC column
    among them comes back as int64, Python ints beyond 64 bits, or
    ``decimal.Decimal`` values (instead of float64, which rounds 20-digit keys).

    PostgreSQL (psycopg URLs) tables and SQLite files are read through ADBC
    drivers as Arrow columns, without a Python object per row
    (:mod:`lwec_tasks.io.bulk_read`); other databases, and the cases those
    paths decline, are read by :func:`read_rows_portable`. Both give the same
    frame: values, dtypes and row order. Database errors are raised as
    :mod:`lwec_tasks.io.errors` describes (one line, no SQL).
    """
    names = _checked_order_by(source, columns, order_by)
    exact = _exact(source.table, columns, exact_columns)
    with database_errors(engine, f"read table {source.name!r}"):
        frame = read_fast(engine, source.table, list(columns), names, chunk_size, exact=exact, where=where)
    if frame is None:
        frame = _read_portable(engine, source, columns, names, chunk_size, exact, where)
    return _exact_frame(frame, exact)


def read_rows_portable(
    engine: sa.Engine,
    source: SourceTable,
    columns: Sequence[str],
    order_by: str | Sequence[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    *,
    exact_columns: Sequence[str] = (),
    where: Sequence[sa.ColumnElement] = (),
) -> pd.DataFrame:
    """:func:`read_rows` through ``pandas.read_sql``, streaming ``chunk_size`` rows at a time (any database)."""
    exact = _exact(source.table, columns, exact_columns)
    frame = _read_portable(engine, source, columns, _checked_order_by(source, columns, order_by), chunk_size, exact,
                           where)
    return _exact_frame(frame, exact)


def _exact(table: sa.Table, columns: Sequence[str], exact_columns: Sequence[str]) -> frozenset[str]:
    """The columns among ``exact_columns`` that a plain read would round (DECIMAL/NUMERIC, not float)."""
    return frozenset(name for name in exact_columns if name in columns and exact_expression(table.c[name]) is not None)


def _exact_frame(frame: pd.DataFrame, exact: frozenset[str]) -> pd.DataFrame:
    for name in exact:
        frame[name] = exact_values(frame[name])
    return frame


def _checked_order_by(source: SourceTable, columns: Sequence[str], order_by: str | Sequence[str] | None) -> list[str]:
    """The ``order_by`` column names as a list, after checking that they and ``columns`` are in the table."""
    source.check_columns(columns, "columns")
    if order_by is None:
        return []
    names = [order_by] if isinstance(order_by, str) else list(order_by)
    source.check_columns(names, "order_by")
    return names


def _read_portable(engine: sa.Engine, source: SourceTable, columns: Sequence[str], order_by: list[str],
                   chunk_size: int, exact: frozenset[str] = frozenset(), where=()) -> pd.DataFrame:
    """``columns`` of the rows matching ``where`` sorted by ``order_by``, through ``pandas.read_sql`` in chunks.

    ``exact`` columns are selected as text (:func:`~lwec_tasks.io.bulk_read.exact_expression`).
    """
    table = source.table
    statement = sa.select(*(exact_expression(table.c[name]).label(name) if name in exact else table.c[name]
                            for name in columns)).where(*where)
    if order_by:
        statement = statement.order_by(*(table.c[name] for name in order_by))
    with database_errors(engine, f"read table {source.name!r}"), engine.connect() as connection:
        streaming = connection.execution_options(stream_results=True)
        chunks = list(pd.read_sql(statement, streaming, chunksize=chunk_size))
    if not chunks:
        return pd.DataFrame({name: pd.Series(dtype=float) for name in columns})
    return pd.concat(chunks, ignore_index=True)
