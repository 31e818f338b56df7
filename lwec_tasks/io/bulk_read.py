"""Fast table reads that make no Python object per row.

* **PostgreSQL (psycopg 3)**: ``COPY (<select>) TO STDOUT (FORMAT BINARY)``,
  decoded by :class:`lwec_tasks.io.pgcopy.BinaryCopyReader` into columns
  allocated once from a ``count(*)`` taken in the same REPEATABLE READ
  snapshot. The ``SELECT`` casts integer columns to ``bigint`` and numeric ones
  to ``double precision`` so every non-text field is 8 bytes wide.
* **SQLite**: the ADBC SQLite driver returns the result as Arrow columns.

Both return exactly what the portable path (``pandas.read_sql`` in chunks,
:func:`lwec_tasks.io.source.read_rows_portable`) returns — the same values,
dtypes and row order — or None when they cannot promise that, and the caller
then reads the portable way: column types they do not handle (booleans,
dates, ...), a non-UTF-8 client encoding, an empty result, or a column that
is NULL throughout one of the portable path's chunks (pandas would give that
chunk ``object`` dtype). The ``SELECT`` is always compiled by SQLAlchemy from
the reflected table, so identifiers are quoted by the dialect.

Ids are read exactly on every path: a DECIMAL/NUMERIC column asked for in
``exact`` is selected as text (:func:`exact_expression`) and turned into
integers or decimals (:func:`exact_values`); PostgreSQL ``uuid`` columns come
back as :class:`uuid.UUID` objects, as the portable path returns them.
"""

from __future__ import annotations

import decimal
import logging
import os
import re
import uuid
from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from lwec_tasks.io import adbc_sqlite

logger = logging.getLogger(__name__)

#: Set to 0 / false / no / off to always use the portable paths.
FAST_PATH_ENV = "LWEC_SQL_FAST_PATH"


def fast_path_enabled() -> bool:
    return os.environ.get(FAST_PATH_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def read_fast(
    engine: sa.Engine,
    table: sa.Table,
    columns: Sequence[str],
    order_by: Sequence[str],
    chunk_size: int,
    exact: Collection[str] = (),
) -> pd.DataFrame | None:
    """``columns`` of every row of ``table`` sorted by ``order_by``, or None (read the portable way).

    ``chunk_size`` is the portable path's chunk size; its result's dtypes can
    depend on it (a chunk with only NULLs in a column), so the fast path checks
    for that case and declines it. ``exact`` columns (those with an
    :func:`exact_expression`) come back as that expression's text, for
    :func:`exact_values`.
    """
    if not fast_path_enabled() or len(set(columns)) != len(columns):
        return None
    dialect = engine.dialect
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        return _read_postgres(engine, table, columns, order_by, chunk_size, exact)
    if dialect.name == "sqlite" and dialect.driver == "pysqlite" and not exact:
        return _read_sqlite(engine, table, columns, order_by, chunk_size)
    return None


def exact_expression(column: sa.ColumnElement) -> sa.ColumnElement | None:
    """``CAST(column AS TEXT)`` for a DECIMAL/NUMERIC column (floats would round its values), else None."""
    kind = column.type
    if isinstance(kind, sa.Numeric) and not isinstance(kind, (sa.Float, sa.Integer)):
        return sa.cast(column, sa.Text)
    return None


_INTEGER_TEXT = re.compile(r"[+-]?\d+")


def exact_values(values: pd.Series) -> pd.Series:
    """Numbers written as text (:func:`exact_expression`) as exact values, NULLs kept as None.

    int64 when every value is an integer that fits, else an object column of
    Python ints and :class:`decimal.Decimal` values (integral decimals become ints).
    """
    def exact(text):
        if text is None or (isinstance(text, float) and text != text):
            return None
        text = str(text).strip()
        if _INTEGER_TEXT.fullmatch(text):
            return int(text)
        number = decimal.Decimal(text)
        return int(number) if number.is_finite() and number == number.to_integral_value() else number

    converted = [exact(value) for value in values.tolist()]
    if converted and all(type(value) is int and -(2**63) <= value < 2**63 for value in converted):
        return pd.Series(np.array(converted, dtype=np.int64), index=values.index, name=values.name)
    return pd.Series(converted, index=values.index, name=values.name, dtype=object)


def _select(table: sa.Table, expressions, order_by: Sequence[str]) -> sa.Select:
    return sa.select(*expressions).order_by(*(table.c[name] for name in order_by))


def _compiled_without_parameters(statement, dialect) -> str | None:
    """The SQL text of a statement without bound parameters, ready to send as is (None if it has some)."""
    compiled = statement.compile(dialect=dialect)
    if compiled.params:
        return None
    return unescape_percents(str(compiled), dialect)


def unescape_percents(sql: str, dialect) -> str:
    """SQL compiled for a ``%``-placeholder driver, for sending without parameters.

    With the ``pyformat``/``format`` parameter styles the compiler doubles every
    ``%`` (in identifiers too, e.g. a column ``a%b``); a statement that is sent
    with no parameters must have them single again.
    """
    if dialect.paramstyle in ("pyformat", "format"):
        return sql.replace("%%", "%")
    return sql


def _null_chunk(mask: np.ndarray | None, chunk_size: int) -> bool:
    """Whether some portable-path chunk (``chunk_size`` rows) is NULL in every row."""
    if mask is None or not len(mask):
        return False
    return bool(np.logical_and.reduceat(mask, np.arange(0, len(mask), max(1, int(chunk_size)))).any())


# ----------------------------------------------------------------------------- PostgreSQL


def _postgres_columns(table: sa.Table, columns: Sequence[str], exact: Collection[str] = ()):
    """(kinds, expressions) for the binary COPY, or None when a column type is not handled.

    Kinds are the reader's (int8, float8, text) plus ``uuid``: text the frame turns into :class:`uuid.UUID`.
    """
    from lwec_tasks.io.pgcopy import FLOAT8, INT8, TEXT

    kinds, expressions = [], []
    for name in columns:
        column = table.c[name]
        kind_of = column.type
        if isinstance(kind_of, (sa.Boolean, sa.Enum)):
            return None
        if name in exact and exact_expression(column) is not None:
            kinds.append(TEXT)
            expressions.append(exact_expression(column))
        elif isinstance(kind_of, sa.Uuid) and getattr(kind_of, "as_uuid", True):
            kinds.append(UUID)
            expressions.append(sa.cast(column, sa.Text))
        elif isinstance(kind_of, sa.Integer):
            kinds.append(INT8)
            expressions.append(sa.cast(column, sa.BigInteger))
        elif isinstance(kind_of, sa.REAL):
            # psycopg reads float4 as the float of its shortest text form
            # (1e30, not 1.0000000150474662e+30): convert through text the same way.
            kinds.append(FLOAT8)
            expressions.append(sa.cast(sa.cast(column, sa.Text), postgresql.DOUBLE_PRECISION))
        elif isinstance(kind_of, (sa.Float, sa.Numeric)):  # SQLAlchemy 2.1: Float is no Numeric
            # double precision as is; numeric -> float8 rounds like float(Decimal) (pandas' coerce_float).
            kinds.append(FLOAT8)
            expressions.append(sa.cast(column, postgresql.DOUBLE_PRECISION))
        elif isinstance(kind_of, sa.String):
            kinds.append(TEXT)
            expressions.append(column)
        else:
            return None
    return kinds, expressions


#: Column kind of the PostgreSQL read: a uuid, sent as text and returned as :class:`uuid.UUID` objects.
UUID = "uuid"


def _read_postgres(engine, table, columns, order_by, chunk_size, exact=()) -> pd.DataFrame | None:
    import psycopg

    from lwec_tasks.io.pgcopy import TEXT, BinaryCopyReader, CopyFormatError

    plan = _postgres_columns(table, columns, exact)
    if plan is None:
        logger.debug("binary COPY not used: a column type is not handled")
        return None
    kinds, expressions = plan
    select_sql = _compiled_without_parameters(_select(table, expressions, order_by), engine.dialect)
    if select_sql is None:
        return None
    copy_sql = f"COPY ({select_sql}) TO STDOUT (FORMAT BINARY)"
    count = sa.select(sa.func.count()).select_from(table)
    with engine.connect() as connection:
        # One snapshot for the count and the rows.
        connection.execution_options(isolation_level="REPEATABLE READ")
        with connection.begin() as transaction:
            n_rows = connection.execute(count).scalar_one()
            if n_rows == 0:
                return None
            driver = connection.connection.driver_connection
            try:
                reader = BinaryCopyReader([TEXT if kind == UUID else kind for kind in kinds], n_rows,
                                          driver.info.encoding)
                with driver.cursor() as cursor:
                    reader.read_from(driver, cursor, copy_sql)
                values, masks = reader.finish()
            except CopyFormatError as error:
                logger.debug("binary COPY not used: %s", error)
                transaction.rollback()
                return None
            except psycopg.Error as error:
                if driver.closed or driver.broken:
                    lost = error
                    if not isinstance(error, psycopg.OperationalError):
                        lost = psycopg.OperationalError(str(error))
                    connection.invalidate()
                    raise sa.exc.DBAPIError.instance(copy_sql, None, lost, psycopg.Error,
                                                     dialect=engine.dialect) from error
                # e.g. a numeric too large for double precision: the portable path decides.
                logger.debug("binary COPY not used: %s", error)
                transaction.rollback()
                return None
    return _frame(columns, kinds, values, masks, chunk_size)


def _frame(columns, kinds, values, masks, chunk_size) -> pd.DataFrame | None:
    """The DataFrame the portable path would build, or None if a chunk of it would be NULL throughout a column.

    ``values``: per column an int64 or float64 array (NULLs already NaN in
    floats) or an Arrow string column; ``masks``: per column the NULL rows, or None.
    """
    if any(_null_chunk(mask, chunk_size) for mask in masks):
        return None
    data = {}
    for name, kind, column, mask in zip(columns, kinds, values, masks):
        if kind == UUID:
            data[name] = pd.Series([None if text is None else uuid.UUID(text) for text in column.to_pylist()],
                                   dtype=object)
        elif kind == "text":
            data[name] = column.to_pandas()
        elif kind == "int8" and mask is not None:
            as_float = column.astype(np.float64)  # pandas reads integers with NULLs as floats
            as_float[mask] = np.nan
            data[name] = as_float
        elif kind == "float8" and mask is not None:
            column[mask] = np.nan
            data[name] = column
        else:
            data[name] = column
    return pd.DataFrame(data, copy=False)


# ----------------------------------------------------------------------------- SQLite


def _passes_values_through(column: sa.Column, dialect) -> bool:
    """Whether SQLAlchemy hands the driver's values over unchanged (no result processor)."""
    try:
        return column.type.dialect_impl(dialect).result_processor(dialect, None) is None
    except Exception:  # noqa: BLE001 - a type that cannot say is a type we do not handle
        return False


def _read_sqlite(engine, table, columns, order_by, chunk_size) -> pd.DataFrame | None:
    if not adbc_sqlite.available():
        return None
    uri = adbc_sqlite.sqlite_uri(engine, read_only=True)
    if uri is None:
        return None
    dialect = engine.dialect
    # Booleans, decimals, dates, ... are converted by SQLAlchemy on the portable path.
    if not all(_passes_values_through(table.c[name], dialect) for name in columns):
        return None
    select_sql = _compiled_without_parameters(_select(table, [table.c[name] for name in columns], order_by), dialect)
    count_sql = _compiled_without_parameters(sa.select(sa.func.count()).select_from(table), dialect)
    if select_sql is None or count_sql is None:
        return None
    import adbc_driver_manager

    try:
        # One read transaction: the count, the rows and the check see one snapshot.
        with adbc_sqlite.connect(uri, adbc_sqlite.busy_timeout_ms(engine)) as connection:
            with connection.cursor() as cursor:
                cursor.execute(count_sql)
                n_rows = cursor.fetchone()[0]
                if n_rows == 0:
                    return None
                adbc_sqlite.set_batch_rows(cursor)
                cursor.execute(select_sql)
                collected = _ArrowColumns(len(columns), n_rows)
                for batch in cursor.fetch_record_batch():
                    if not collected.add(batch):
                        return None
            if not collected.complete():
                return None
            text = [name for name, kind in zip(columns, collected.kinds) if kind == "text"]
            if text and _text_columns_hold_other_values(connection, table, text, dialect):
                return None
    except adbc_driver_manager.Error as error:
        # Type changes within a column ("expected INT64 but got DOUBLE"), locks, ...
        logger.debug("ADBC read not used: %s", error)
        return None
    return _frame(columns, collected.kinds, collected.values(), collected.masks, chunk_size)


class _ArrowColumns:
    """Copies Arrow record batches into numpy columns allocated once (``n_rows`` long)."""

    def __init__(self, n_columns: int, n_rows: int):
        self.n_rows = n_rows
        self.kinds: list[str] | None = None
        self.masks: list[np.ndarray | None] = [None] * n_columns
        self._values: list = [None] * n_columns
        self._row = 0

    def add(self, batch) -> bool:
        """Take one batch; False when a column has a type the fast path does not handle."""
        import pyarrow as pa

        if self.kinds is None:
            self.kinds = []
            for j, kind in enumerate(batch.schema.types):
                if pa.types.is_int64(kind):
                    self.kinds.append("int8")
                    self._values[j] = np.empty(self.n_rows, dtype=np.int64)
                elif pa.types.is_float64(kind):
                    self.kinds.append("float8")
                    self._values[j] = np.empty(self.n_rows, dtype=np.float64)
                elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
                    self.kinds.append("text")
                    self._values[j] = []
                else:
                    return False
        stop = self._row + batch.num_rows
        if stop > self.n_rows:
            return False
        for j, (kind, column) in enumerate(zip(self.kinds, batch.columns)):
            if kind == "text":
                self._values[j].append(column)
            else:
                self._values[j][self._row:stop] = column.fill_null(0).to_numpy(zero_copy_only=False)
            if column.null_count:
                if self.masks[j] is None:
                    self.masks[j] = np.zeros(self.n_rows, dtype=np.bool_)
                self.masks[j][self._row:stop] = column.is_null().to_numpy(zero_copy_only=False)
        self._row = stop
        return True

    def complete(self) -> bool:
        return self.kinds is not None and self._row == self.n_rows

    def values(self) -> list:
        import pyarrow as pa

        return [pa.chunked_array(value) if kind == "text" else value for kind, value in zip(self.kinds, self._values)]


def _text_columns_hold_other_values(connection, table, names, dialect) -> bool:
    """Whether a column the driver returned as text stores numbers or blobs too.

    The driver turns such values into text; sqlite3 (the portable path) keeps
    their own types, which pandas reads as an ``object`` column.
    """
    tests = [sa.func.typeof(table.c[name]).not_in(["text", "null"]) for name in names]
    statement = sa.select(sa.literal_column("1")).select_from(table).where(sa.or_(*tests)).limit(1)
    sql = str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone() is not None
