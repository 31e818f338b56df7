"""Reading a feature table: reflection, column checks, chunked reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.bulk_read import read_fast
from lwec_tasks.io.connection import UNREACHABLE_ERRORS, mask_url, unreachable_error
from lwec_tasks.io.identifiers import name_list

#: Rows per chunk of the portable read (``pandas.read_sql``); the fast paths stream in blocks of their own.
DEFAULT_CHUNK_SIZE = 50_000



@dataclass(frozen=True)
class SourceTable:
    """A reflected table (or view) and what the pipeline needs to know about it.

    Attributes
    ----------
    table : the reflected :class:`sqlalchemy.Table`
    columns : column names in table order
    numeric_columns : columns whose declared type is integer, float or decimal
        (booleans excluded)
    primary_key : names of the primary-key columns (may be empty)
    """

    table: sa.Table
    columns: tuple[str, ...]
    numeric_columns: tuple[str, ...]
    primary_key: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.table.name

    def check_columns(self, names: Sequence[str], parameter: str) -> None:
        """Raise :class:`LwecInputError` naming every entry of ``names`` not in the table."""
        missing = [name for name in names if name not in self.columns]
        if missing:
            raise LwecInputError(
                f"{parameter}: column(s) {missing} not found in table {self.name!r}; "
                f"its columns are {name_list(self.columns)}"
            )


def describe_source(engine: sa.Engine, table: str) -> SourceTable:
    """Reflect ``table`` from the database's default schema.

    Raises
    ------
    LwecInputError
        The table does not exist; the message lists the tables (and views) that do.
    DatabaseUnreachableError
        No connection could be made.
    """
    try:
        inspector = sa.inspect(engine)
        existing = sorted(inspector.get_table_names()) + sorted(inspector.get_view_names())
        if table not in existing:
            raise LwecInputError(
                f"table {table!r} not found in database {mask_url(engine.url)}; "
                f"existing tables: {name_list(existing) if existing else 'none'}"
            )
        reflected = sa.Table(table, sa.MetaData(), autoload_with=engine)
    except UNREACHABLE_ERRORS as error:
        raise unreachable_error(engine, error) from None
    numeric = tuple(
        column.name
        for column in reflected.columns
        if isinstance(column.type, (sa.Integer, sa.Numeric, sa.Float)) and not isinstance(column.type, sa.Boolean)
    )
    return SourceTable(
        table=reflected,
        columns=tuple(column.name for column in reflected.columns),
        numeric_columns=numeric,
        primary_key=tuple(column.name for column in reflected.primary_key.columns),
    )


def read_rows(
    engine: sa.Engine,
    source: SourceTable,
    columns: Sequence[str],
    order_by: str | Sequence[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> pd.DataFrame:
    """Read ``columns`` of every row, in that column order.

    Rows come back sorted by ``order_by`` (a column, or columns in order of
    precedence) when given, so the same table always yields the same row order
    (and hence the same clustering for a fixed seed).

    PostgreSQL (psycopg) tables are read with a binary ``COPY`` and SQLite
    files through ADBC as Arrow columns, without a Python object per row
    (:mod:`lwec_tasks.io.bulk_read`); other databases, and the cases those
    paths decline, are read by :func:`read_rows_portable`. Both give the same
    frame: values, dtypes and row order.
    """
    names = _checked_order_by(source, columns, order_by)
    try:
        frame = read_fast(engine, source.table, list(columns), names, chunk_size)
    except UNREACHABLE_ERRORS as error:
        raise unreachable_error(engine, error) from None
    if frame is not None:
        return frame
    return _read_portable(engine, source.table, columns, names, chunk_size)


def read_rows_portable(
    engine: sa.Engine,
    source: SourceTable,
    columns: Sequence[str],
    order_by: str | Sequence[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> pd.DataFrame:
    """:func:`read_rows` through ``pandas.read_sql``, streaming ``chunk_size`` rows at a time (any database)."""
    return _read_portable(engine, source.table, columns, _checked_order_by(source, columns, order_by), chunk_size)


def _checked_order_by(source: SourceTable, columns: Sequence[str], order_by: str | Sequence[str] | None) -> list[str]:
    """The ``order_by`` column names as a list, after checking that they and ``columns`` are in the table."""
    source.check_columns(columns, "columns")
    if order_by is None:
        return []
    names = [order_by] if isinstance(order_by, str) else list(order_by)
    source.check_columns(names, "order_by")
    return names


def _read_portable(engine: sa.Engine, table: sa.Table, columns: Sequence[str], order_by: list[str],
                   chunk_size: int) -> pd.DataFrame:
    """``columns`` of every row of ``table`` sorted by ``order_by``, through ``pandas.read_sql`` in chunks."""
    statement = sa.select(*(table.c[name] for name in columns))
    if order_by:
        statement = statement.order_by(*(table.c[name] for name in order_by))
    try:
        with engine.connect() as connection:
            streaming = connection.execution_options(stream_results=True)
            chunks = list(pd.read_sql(statement, streaming, chunksize=chunk_size))
    except UNREACHABLE_ERRORS as error:
        raise unreachable_error(engine, error) from None
    if not chunks:
        return pd.DataFrame({name: pd.Series(dtype=float) for name in columns})
    return pd.concat(chunks, ignore_index=True)
