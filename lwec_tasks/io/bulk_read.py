"""Fast table reads through ADBC drivers: the rows arrive as Arrow columns, not as Python objects.

* **PostgreSQL (psycopg URLs)**: ``adbc-driver-postgresql`` on the libpq URI
  of the engine's URL (:func:`postgres_uri`). The ``SELECT`` casts numeric
  columns to ``double precision`` and uuids to text, as the portable path
  converts them.
* **SQLite files**: ``adbc-driver-sqlite`` on a ``file:`` URI of the engine's
  database file (:func:`sqlite_uri`; an in-memory database is private to its
  own connection), waiting for locks as the engine does (:func:`busy_timeout_ms`).
* **DuckDB** (duckdb-engine URLs): no ADBC driver needed, DuckDB hands its
  results over as Arrow itself, on the engine's own connection
  (:func:`_read_duckdb`); floats and decimals are cast to ``DOUBLE`` as the
  portable path converts them.

All return exactly what the portable path (``pandas.read_sql`` in chunks,
:func:`lwec_tasks.io.source.read_rows` with ``LWEC_SQL_FAST_PATH=0``) returns — the same values,
dtypes and row order — or None when they cannot promise that, and the caller
then reads the portable way: column types they do not handle (dates, ...;
booleans everywhere but PostgreSQL), an empty result, a driver error other than
a lost connection, or
a column that is NULL throughout one of the portable path's chunks (pandas
would give that chunk ``object`` dtype). The ``SELECT`` is always compiled by
SQLAlchemy from the reflected table, identifiers quoted and the ``where``
clauses' values rendered as literals by the dialect.

Ids are read exactly on every path: a DECIMAL/NUMERIC column asked for in
``exact`` is selected as text (:func:`exact_expression`) and turned into
integers or decimals (:func:`exact_values`); PostgreSQL ``uuid`` columns come
back as :class:`uuid.UUID` objects, as the portable path returns them.
"""

from __future__ import annotations

import contextlib
import decimal
import functools
import logging
import os
import re
import urllib.parse
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from lwec_tasks.io.duckdb_dialect import duckdb_client
from lwec_tasks.io.errors import is_connection_failure

logger = logging.getLogger(__name__)

#: Set to 0 / false / no / off to always use the portable paths.
FAST_PATH_ENV = "LWEC_SQL_FAST_PATH"

#: Seconds a SQLite connection waits for another one's lock (sqlite3's default).
DEFAULT_BUSY_TIMEOUT = 5.0

#: Query parameters of a SQLite URL that SQLAlchemy's pysqlite dialect takes as connect() options.
_PYSQLITE_OPTIONS = frozenset({"uri", "timeout", "isolation_level", "detect_types", "check_same_thread",
                               "cached_statements", "factory"})

#: Rows per Arrow batch of a SQLite query (the driver infers each column's type from the first batch).
QUERY_BATCH_ROWS = 65_536


def fast_path_enabled() -> bool:
    return os.environ.get(FAST_PATH_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def read_fast(
    engine: sa.Engine,
    table: sa.Table,
    columns: Sequence[str],
    order_by: Sequence[str],
    chunk_size: int,
    exact: Collection[str] = (),
    where: Sequence[sa.ColumnElement] = (),
) -> pd.DataFrame | None:
    """``columns`` of the rows of ``table`` matching ``where``, sorted by ``order_by``, or None (read the
    portable way).

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
        plan = _postgres_columns(table, columns, exact, booleans=True)
        if plan is None:
            return None
        expressions, uuids = plan
        arrow = _read_postgres(engine, literal_sql(select_rows(table, expressions, order_by, where), dialect))
    elif dialect.name == "sqlite" and dialect.driver == "pysqlite" and not exact:
        uuids, arrow = (), _read_sqlite(engine, table, columns, order_by, where)
    elif dialect.name == "duckdb":
        plan = _postgres_columns(table, columns, exact, real_through_text=False)
        if plan is None:
            return None
        expressions, uuids = plan
        arrow = _read_duckdb(engine, select_rows(table, expressions, order_by, where))
    else:
        return None
    return None if arrow is None else _frame(arrow, columns, uuids, chunk_size)


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


def select_rows(table: sa.Table, expressions, order_by: Sequence[str], where=()) -> sa.Select:
    """``SELECT expressions FROM table WHERE where ORDER BY order_by`` (column names of ``table``)."""
    return sa.select(*expressions).where(*where).order_by(*(table.c[name] for name in order_by))


def literal_sql(statement, dialect) -> str:
    """The SQL text of ``statement`` with its bound values rendered as literals by the dialect."""
    return unescape_percents(str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True})),
                             dialect)


def unescape_percents(sql: str, dialect) -> str:
    """SQL compiled for a ``%``-placeholder driver, for sending without parameters.

    With the ``pyformat``/``format`` parameter styles the compiler doubles every
    ``%`` (in identifiers too, e.g. a column ``a%b``); a statement that is sent
    with no parameters must have them single again.
    """
    if dialect.paramstyle in ("pyformat", "format"):
        return sql.replace("%%", "%")
    return sql


def _frame(arrow, columns: Sequence[str], uuids: Collection[str], chunk_size: int) -> pd.DataFrame | None:
    """The DataFrame the portable path builds from the Arrow result, or None (an Arrow type not handled,
    no rows, or a portable-path chunk of ``chunk_size`` rows NULL throughout a column)."""
    import pyarrow as pa

    if arrow.num_rows == 0:
        return None
    data = {}
    starts = np.arange(0, arrow.num_rows, max(1, int(chunk_size)))
    for name, column in zip(columns, arrow.columns):
        kind = column.type
        if column.null_count and np.logical_and.reduceat(
                column.is_null().combine_chunks().to_numpy(zero_copy_only=False), starts).any():
            return None
        if name in uuids:
            data[name] = pd.Series([None if text is None else uuid.UUID(text) for text in column.to_pylist()],
                                   dtype=object)
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            data[name] = column.to_pandas()
        elif pa.types.is_boolean(kind):
            data[name] = boolean_values(column)
        elif pa.types.is_integer(kind) or pa.types.is_float64(kind):
            values = column.to_pandas().to_numpy()  # integers with NULLs: float64 with NaN, as pandas reads them
            # int64 columns as they are (no second copy), narrower ones widened as pandas reads them
            data[name] = values.astype(np.int64, copy=False) if values.dtype.kind in "iu" else values
        else:
            return None
    return pd.DataFrame(data, copy=False)


def boolean_values(column) -> pd.Series:
    """An Arrow ``bool`` column as ``pandas.read_sql`` gives it: ``bool`` dtype without NULLs, else ``object``
    values ``True``/``False``/``None`` (each chunk with a NULL is ``object``, and ``bool`` and ``object`` chunks
    concatenate to ``object``; a chunk NULL throughout is declined by :func:`_frame` before this)."""
    values = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if not values.null_count:
        return pd.Series(values.to_numpy(zero_copy_only=False).astype(bool, copy=False), copy=False)
    flags = values.fill_null(False).to_numpy(zero_copy_only=False).astype(bool, copy=False)
    out = np.where(flags, True, False).astype(object)  # the Python bools, as psycopg returns them
    out[values.is_null().to_numpy(zero_copy_only=False)] = None
    return pd.Series(out, dtype=object, copy=False)


def adbc_connector(engine: sa.Engine, *, read_only: bool) -> Callable[[], Any] | None:
    """A function opening an ADBC DB-API connection (a context manager; not autocommit) to the engine's database.

    PostgreSQL through psycopg URLs (``adbc-driver-postgresql`` on :func:`postgres_uri`; idle connections are
    reused, :mod:`lwec_tasks.io.adbc_pool`) and SQLite files
    (:func:`sqlite_uri`; ``read_only`` opens them ``mode=ro``) only; None for other databases, an
    in-memory SQLite database, or when the driver or pyarrow is not installed.
    """
    postgres = engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
    uri = postgres_uri(engine.url) if postgres else sqlite_uri(engine, read_only=read_only)
    if uri is None:
        return None
    try:
        import pyarrow  # noqa: F401

        if postgres:
            import adbc_driver_postgresql.dbapi

            from lwec_tasks.io.adbc_pool import pooled_connection

            return functools.partial(pooled_connection, uri, adbc_driver_postgresql.dbapi.connect)
        import adbc_driver_sqlite.dbapi  # noqa: F401
    except ImportError:
        return None
    return functools.partial(sqlite_connect, uri, busy_timeout_ms(engine))


# ----------------------------------------------------------------------------- PostgreSQL


def postgres_uri(url: sa.URL) -> str:
    """The libpq URI of a SQLAlchemy PostgreSQL URL (the ``+driver`` dropped; user, password, host, port,
    database and query options kept), with the engines' connect timeout and session name unless the URL sets
    them."""
    from lwec_tasks.io.connection import APPLICATION_NAME, CONNECT_TIMEOUT

    query = {"connect_timeout": str(CONNECT_TIMEOUT), "application_name": APPLICATION_NAME, **url.query}
    return url.set(drivername="postgresql", query=query).render_as_string(hide_password=False)


def _postgres_columns(table: sa.Table, columns: Sequence[str], exact: Collection[str] = (),
                      real_through_text: bool = True, booleans: bool = False):
    """(select expressions, names of the uuid columns), or None when a column type is not handled.

    ``real_through_text``: single-precision floats are converted through their text as psycopg reads them
    (PostgreSQL); False: cast to ``DOUBLE`` as they are, as DuckDB's Python client reads them. ``booleans``:
    ``boolean`` columns are selected as they are (Arrow ``bool``, :func:`_frame` gives them pandas' dtype); False:
    declined."""
    expressions, uuids = [], []
    for name in columns:
        column = table.c[name]
        kind = column.type
        if booleans and isinstance(kind, sa.Boolean) and not isinstance(kind, sa.Enum):
            expressions.append(column)
        elif name in exact and exact_expression(column) is not None:
            expressions.append(exact_expression(column))
        elif isinstance(kind, sa.Uuid) and getattr(kind, "as_uuid", True):
            uuids.append(name)  # sent as text, returned as uuid.UUID objects
            expressions.append(sa.cast(column, sa.Text))
        elif isinstance(kind, (sa.Boolean, sa.Enum)) or not isinstance(kind, (sa.Integer, sa.Float, sa.Numeric,
                                                                               sa.String)):
            return None
        elif isinstance(kind, sa.REAL) and real_through_text:
            # psycopg reads float4 as the float of its shortest text form
            # (1e30, not 1.0000000150474662e+30): convert through text the same way.
            expressions.append(sa.cast(sa.cast(column, sa.Text), postgresql.DOUBLE_PRECISION))
        elif isinstance(kind, (sa.Float, sa.Numeric)) and not isinstance(kind, sa.Integer):
            # double precision as is; numeric -> float8 rounds like float(Decimal) (pandas' coerce_float).
            expressions.append(sa.cast(column, postgresql.DOUBLE_PRECISION))
        else:
            expressions.append(column)
    return expressions, uuids


def _read_postgres(engine: sa.Engine, sql: str):
    """The Arrow table of ``sql``; None on a data error (SQLSTATE class 22) or an error of the driver itself (the
    portable path decides); the server's other refusals and lost connections are raised."""
    connect = adbc_connector(engine, read_only=True)
    if connect is None:
        return None
    import adbc_driver_manager

    try:
        with connect() as connection, connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetch_arrow_table()
    except adbc_driver_manager.Error as error:
        sqlstate = getattr(error, "sqlstate", None) or ""
        if is_connection_failure(error) or (sqlstate and not sqlstate.startswith("22")):
            raise  # read_rows reports it (lwec_tasks.io.errors.database_errors)
        # e.g. a numeric too large for double precision
        logger.debug("ADBC read not used: %s", error)
        return None


# ----------------------------------------------------------------------------- DuckDB


def _read_duckdb(engine: sa.Engine, statement: sa.Select):
    """The Arrow table of ``statement`` (compiled with its values as literals), read by DuckDB's own client on a
    duplicate of a pooled connection (its own cursor, the same database); None when DuckDB's client cannot hand
    over Arrow, or a column comes back as an unsigned 64-bit integer (the portable path decides). DuckDB's errors
    are raised as SQLAlchemy raises them."""
    import pyarrow as pa

    sql = literal_sql(statement, engine.dialect)
    with duckdb_client(engine, sql) as client:
        if client is None:
            return None
        relation = client.sql(sql)
        method = next((m for m in ("to_arrow_table", "fetch_arrow_table", "arrow") if hasattr(relation, m)),
                      None)  # DuckDB 2, 1.x, older
        if method is None:
            return None
        arrow = getattr(relation, method)()
    if isinstance(arrow, pa.RecordBatchReader):
        arrow = arrow.read_all()
    if any(pa.types.is_uint64(kind) for kind in arrow.schema.types):
        return None  # values beyond int64: the portable path keeps them as Python ints
    return arrow


# ----------------------------------------------------------------------------- SQLite


def sqlite_uri(engine: sa.Engine, *, read_only: bool) -> str | None:
    """A ``file:`` URI opening the engine's database file, or None when there is none to share.

    ``read_only`` opens it with ``mode=ro``; otherwise ``mode=rw`` (never creates a file).
    """
    if engine.dialect.name != "sqlite" or engine.dialect.driver != "pysqlite":
        return None
    url = engine.url
    database = url.database
    if not database or database == ":memory:":
        return None
    if str(url.query.get("uri", "")).lower() in ("true", "1"):
        # Already a URI (sqlite:///file:path?mode=ro&uri=true): SQLAlchemy passes the query parameters it does
        # not know itself (mode, cache, immutable, ...) on to SQLite as URI parameters, and so must we.
        parameters = [(key, value) for key, value in url.query.items() if key not in _PYSQLITE_OPTIONS]
        if parameters:
            database += ("&" if "?" in database else "?") + urllib.parse.urlencode(parameters, doseq=True)
        # "memory" URIs are private to their connection.
        if "mode=memory" in database or database.startswith("file::memory:"):
            return None
        return database
    if not os.path.exists(database):
        return None
    path = urllib.parse.quote(os.path.abspath(database))
    return f"file:{path}?mode={'ro' if read_only else 'rw'}"


def busy_timeout_ms(engine: sa.Engine) -> int:
    """The engine's ``timeout`` query option (seconds) in milliseconds, else sqlite3's 5 s default."""
    try:
        seconds = float(engine.url.query.get("timeout", DEFAULT_BUSY_TIMEOUT))
    except (TypeError, ValueError):
        seconds = DEFAULT_BUSY_TIMEOUT
    return max(0, int(seconds * 1000))


@contextlib.contextmanager
def sqlite_connect(uri: str, busy_timeout: int) -> Iterator:
    """An ADBC DB-API connection to the SQLite database at ``uri`` (not autocommit: everything runs in one
    transaction until commit), waiting ``busy_timeout`` milliseconds for other connections' locks."""
    import adbc_driver_sqlite.dbapi

    connection = adbc_driver_sqlite.dbapi.connect(uri)
    try:
        with connection.cursor() as cursor:
            # An integer rendered by us, not user text (PRAGMA takes no bound parameters).
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout)}")
        yield connection
    finally:
        with contextlib.suppress(Exception):
            connection.rollback()
        connection.close()


def _passes_values_through(column: sa.Column, dialect) -> bool:
    """Whether SQLAlchemy hands the driver's values over unchanged (no result processor)."""
    try:
        return column.type.dialect_impl(dialect).result_processor(dialect, None) is None
    except Exception:  # noqa: BLE001 - a type that cannot say is a type we do not handle
        return False


def _read_sqlite(engine, table, columns, order_by, where):
    connect = adbc_connector(engine, read_only=True)
    dialect = engine.dialect
    # Booleans, decimals, dates, ... are converted by SQLAlchemy on the portable path.
    if connect is None or not all(_passes_values_through(table.c[name], dialect) for name in columns):
        return None
    import adbc_driver_manager
    import pyarrow as pa

    try:
        # One read transaction: the rows and the check see one snapshot.
        with connect() as connection:
            with connection.cursor() as cursor:
                cursor.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(int(QUERY_BATCH_ROWS))})
                cursor.execute(literal_sql(select_rows(table, [table.c[name] for name in columns], order_by, where),
                                           dialect))
                arrow = cursor.fetch_arrow_table()
            text = [name for name, kind in zip(columns, arrow.schema.types)
                    if pa.types.is_string(kind) or pa.types.is_large_string(kind)]
            if text and _text_columns_hold_other_values(connection, table, text, dialect, where):
                return None
    except adbc_driver_manager.Error as error:
        # Type changes within a column ("expected INT64 but got DOUBLE"), locks, ...
        logger.debug("ADBC read not used: %s", error)
        return None
    return arrow


def _text_columns_hold_other_values(connection, table, names, dialect, where) -> bool:
    """Whether a column the driver returned as text stores numbers or blobs too.

    The driver turns such values into text; sqlite3 (the portable path) keeps
    their own types, which pandas reads as an ``object`` column.
    """
    tests = [sa.func.typeof(table.c[name]).not_in(["text", "null"]) for name in names]
    statement = sa.select(sa.literal_column("1")).select_from(table).where(*where, sa.or_(*tests)).limit(1)
    with connection.cursor() as cursor:
        cursor.execute(literal_sql(statement, dialect))
        return cursor.fetchone() is not None
