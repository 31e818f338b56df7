"""Reading a feature table: chunked reads of the columns a reflected table holds.

The table is reflected by :func:`~lwec_tasks.io.catalog.describe_source`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import sqlalchemy as sa

from lwec_tasks.io.bulk_read import exact_expression, exact_values, read_fast, select_rows
from lwec_tasks.io.catalog import SourceTable
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
    (:mod:`lwec_tasks.io.bulk_read`); other databases, the cases those paths
    decline, and every read with ``LWEC_SQL_FAST_PATH=0``, through
    ``pandas.read_sql`` streaming ``chunk_size`` rows at a time. Both give the
    same frame: values, dtypes and row order. Database errors are raised as
    :mod:`lwec_tasks.io.errors` describes (one line, no SQL).
    """
    source.check_columns(columns, "columns")
    names = [] if order_by is None else [order_by] if isinstance(order_by, str) else list(order_by)
    source.check_columns(names, "order_by")
    # DECIMAL/NUMERIC ids, which a plain read would round, are read as text and converted.
    exact = frozenset(name for name in exact_columns
                      if name in columns and exact_expression(source.table.c[name]) is not None)
    with database_errors(engine, f"read table {source.name!r}"):
        frame = read_fast(engine, source.table, list(columns), names, chunk_size, exact=exact, where=where)
        if frame is None:
            frame = _read_portable(engine, source.table, columns, names, chunk_size, exact, where)
    for name in exact:
        frame[name] = exact_values(frame[name])
    return frame


def _read_portable(engine: sa.Engine, table: sa.Table, columns: Sequence[str], order_by: list[str],
                   chunk_size: int, exact: frozenset[str], where) -> pd.DataFrame:
    """``columns`` of the rows matching ``where`` sorted by ``order_by``, through ``pandas.read_sql`` in chunks.

    ``exact`` columns are selected as text (:func:`~lwec_tasks.io.bulk_read.exact_expression`).
    """
    statement = select_rows(table, [exact_expression(table.c[name]).label(name) if name in exact else table.c[name]
                                    for name in columns], order_by, where)
    with engine.connect() as connection:
        chunks = list(pd.read_sql(statement, connection.execution_options(stream_results=True), chunksize=chunk_size))
    if not chunks:
        return pd.DataFrame({name: pd.Series(dtype=float) for name in columns})
    return pd.concat(chunks, ignore_index=True)
