"""Fast label writes that make no Python object per row.

A labels table row is a run's constant metadata plus a per-row ``id`` and
``label``. Both fast paths build all rows from the two numpy vectors:

* **PostgreSQL (psycopg 3)**: :func:`copy_labels` sends ``COPY <table>
  (<columns>) FROM STDIN (FORMAT BINARY)`` on the SQLAlchemy connection's own
  driver connection, so it runs inside the caller's transaction, after its
  ``DELETE`` of the run key: a failure rolls both back. The payload is laid
  out by :func:`lwec_tasks.io.pgcopy.build_rows`, the constant fields encoded
  once, for the target columns' actual types (probed with a ``LIMIT 0`` query).
* **SQLite**: :func:`write_sqlite` opens an ADBC connection to the same file
  and, in one transaction, creates the table when missing, deletes the run
  key's rows and inserts every row by binding Arrow columns to one prepared
  ``INSERT`` — the integers are bound as integers (never BLOBs).

Every statement (``DELETE``, ``INSERT``, ``CREATE TABLE``, the column list of
the ``COPY``) is compiled by SQLAlchemy from the labels table definition, so
identifiers are quoted by the dialect. Either path returns a "not done"
answer, having written nothing, when it cannot store exactly the values the
portable ``executemany`` path would (a column type it does not encode, an id
kind that does not match the column, an integer out of range, ...); the
caller then writes the portable way.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import struct
import uuid
from collections.abc import Mapping

import numpy as np
import sqlalchemy as sa

from lwec_tasks.io import adbc_sqlite
from lwec_tasks.io.bulk_read import unescape_percents

logger = logging.getLogger(__name__)

#: Rows encoded and sent per block.
BLOCK_ROWS = 131_072

# PostgreSQL type OIDs the binary writer encodes.
_INT2, _INT4, _INT8, _FLOAT4, _FLOAT8 = 21, 23, 20, 700, 701
_TEXT, _VARCHAR, _BPCHAR, _TIMESTAMPTZ, _UUID = 25, 1043, 1042, 1184, 2950
_TEXT_TYPES = (_TEXT, _VARCHAR, _BPCHAR)
_INT_CODES = {_INT2: ">i2", _INT4: ">i4", _INT8: ">i8"}
_FLOAT_CODES = {_FLOAT4: ">f4", _FLOAT8: ">f8"}
_STRUCT_CODES = {">i2": ">h", ">i4": ">i", ">i8": ">q", ">f4": ">f", ">f8": ">d"}
_POSTGRES_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
_FLOAT4_MAX = float(np.finfo(np.float32).max)


class _Unsupported(Exception):
    """A value or column type the fast writer does not encode (the portable path writes it)."""


# ----------------------------------------------------------------------------- PostgreSQL


def copy_labels(
    connection: sa.Connection,
    table: sa.Table,
    constants: Mapping[str, object],
    ids: np.ndarray,
    labels: np.ndarray,
) -> bool:
    """COPY the rows into ``table`` within ``connection``'s transaction; False (nothing sent) when not applicable.

    ``constants`` maps every other column of ``table`` to its value for all rows.
    Database errors are raised as SQLAlchemy exceptions (``IntegrityError`` for a
    duplicate id, ...), as the portable path raises them.
    """
    dialect = connection.dialect
    if dialect.name != "postgresql" or dialect.driver != "psycopg":
        return False
    import psycopg

    from lwec_tasks.io.pgcopy import HEADER, TRAILER, build_rows

    driver = connection.connection.driver_connection
    names = [*constants, "label", "id"]
    preparer = dialect.identifier_preparer
    copy_sql = unescape_percents(
        f"COPY {preparer.format_table(table)} ({', '.join(preparer.quote(name) for name in names)}) "
        "FROM STDIN (FORMAT BINARY)",
        dialect,
    )
    n = len(ids)
    try:
        oids = _column_oids(driver, connection, table, names)
        try:
            encoding = driver.info.encoding
            constant = b"".join(_encode_constant(oids[name], value, encoding) for name, value in constants.items())
            label_code = _integer_code(oids["label"], labels)
            id_column = _id_column(oids["id"], ids, encoding)
        except _Unsupported as reason:
            logger.debug("binary COPY not used for the labels: %s", reason)
            return False
        with driver.cursor() as cursor, cursor.copy(copy_sql) as copy:
            copy.write(HEADER)
            for start in range(0, n, BLOCK_ROWS):
                stop = min(start + BLOCK_ROWS, n)
                fixed = [(label_code, labels[start:stop])]
                if id_column[0] == "fixed":
                    block = build_rows(len(names), constant, [*fixed, (id_column[1], id_column[2][start:stop])])
                else:
                    _, data, offsets = id_column
                    block = build_rows(len(names), constant, fixed, data, offsets[start:stop + 1])
                copy.write(memoryview(block))
            copy.write(TRAILER)
    except psycopg.Error as error:
        if driver.closed or driver.broken:
            if not isinstance(error, psycopg.OperationalError):
                error = psycopg.OperationalError(str(error))
            connection.invalidate()
        raise sa.exc.DBAPIError.instance(copy_sql, None, error, psycopg.Error, dialect=dialect) from error
    return True


def _column_oids(driver, connection: sa.Connection, table: sa.Table, names) -> dict[str, int]:
    """The type OID of each column of the table as it exists in the database."""
    compiled = sa.select(*(table.c[name] for name in names)).limit(0).compile(dialect=connection.dialect)
    with driver.cursor() as cursor:
        cursor.execute(str(compiled), compiled.params)
        return {name: column.type_code for name, column in zip(names, cursor.description)}


def _encode_constant(oid: int, value, encoding: str) -> bytes:
    """One field (length + payload) of a value that is the same in every row."""
    from lwec_tasks.io.pgcopy import field

    if value is None:
        return field(None)
    if isinstance(value, bool):
        raise _Unsupported("booleans")
    if isinstance(value, (int, np.integer)) and oid in _INT_CODES:
        code = _INT_CODES[oid]
        info = np.iinfo(np.dtype(code))
        if not info.min <= int(value) <= info.max:
            raise _Unsupported(f"{value} is out of range for type oid {oid}")
        return field(struct.pack(_STRUCT_CODES[code], int(value)))
    if isinstance(value, float) and oid in _FLOAT_CODES:
        if oid == _FLOAT4 and math.isfinite(value) and abs(value) > _FLOAT4_MAX:
            raise _Unsupported(f"{value} overflows real")
        return field(struct.pack(_STRUCT_CODES[_FLOAT_CODES[oid]], value))
    if isinstance(value, str) and oid in _TEXT_TYPES:
        try:
            return field(value.encode(encoding))
        except UnicodeEncodeError as error:
            raise _Unsupported(str(error)) from None
    if isinstance(value, dt.datetime) and oid == _TIMESTAMPTZ and value.tzinfo is not None:
        delta = value - _POSTGRES_EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return field(struct.pack(">q", micros))
    raise _Unsupported(f"a {type(value).__name__} for a column of type oid {oid}")


def _integer_code(oid: int, values: np.ndarray) -> str:
    if oid not in _INT_CODES or not np.issubdtype(values.dtype, np.integer):
        raise _Unsupported(f"integers for a column of type oid {oid}")
    code = _INT_CODES[oid]
    info = np.iinfo(np.dtype(code))
    if len(values) and (values.min() < info.min or values.max() > info.max):
        raise _Unsupported(f"values out of range for type oid {oid}")
    return code


def _id_column(oid: int, ids: np.ndarray, encoding: str):
    """("fixed", code, values) or ("text", utf8 bytes, offsets) for the id column."""
    if oid == _UUID:
        return "fixed", "V16", _uuid_bytes(ids)
    if np.issubdtype(ids.dtype, np.integer):
        return "fixed", _integer_code(oid, ids), ids
    if np.issubdtype(ids.dtype, np.floating) and oid in _FLOAT_CODES:
        if oid == _FLOAT4 and np.any(np.abs(ids[np.isfinite(ids)]) > _FLOAT4_MAX):
            raise _Unsupported("ids overflow real")
        return "fixed", _FLOAT_CODES[oid], ids
    if ids.dtype == object and oid in _TEXT_TYPES:
        if encoding.replace("_", "-").lower() not in ("utf-8", "utf8"):
            raise _Unsupported(f"text ids with client encoding {encoding!r}")
        data, offsets = _utf8_column(ids)
        return "text", data, offsets
    raise _Unsupported(f"ids of dtype {ids.dtype} for a column of type oid {oid}")


def _uuid_bytes(ids: np.ndarray) -> np.ndarray:
    """The 16 bytes of every :class:`uuid.UUID` id (PostgreSQL's binary uuid), as a ``V16`` array."""
    if ids.dtype != object or not all(isinstance(value, uuid.UUID) for value in ids):
        raise _Unsupported("ids that are not all uuid.UUID values for a uuid column")
    return np.frombuffer(b"".join(value.bytes for value in ids), dtype="V16")


def _utf8_column(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of every string, concatenated, and the (n + 1) offsets delimiting them."""
    import pyarrow as pa

    try:
        array = pa.array(values, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise _Unsupported(f"ids of mixed kinds: {error}") from None
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)) or array.null_count:
        raise _Unsupported(f"ids of Arrow type {array.type} (with {array.null_count} missing)")
    array = array.cast(pa.large_string())
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[array.offset:array.offset + len(array) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return data, offsets


# ----------------------------------------------------------------------------- SQLite


def write_sqlite(
    engine: sa.Engine,
    table: sa.Table,
    constants: Mapping[str, object],
    ids: np.ndarray,
    labels: np.ndarray,
) -> int | None:
    """Replace the run key's rows through ADBC in one transaction; rows written, or None (nothing written).

    Creates the table when missing, in the same transaction. Any database
    error rolls everything back and returns None: the portable path then does
    the write and reports the error the way it always has.
    """
    if engine.dialect.name != "sqlite" or not adbc_sqlite.available():
        return None
    uri = adbc_sqlite.sqlite_uri(engine, read_only=False)
    if uri is None:
        return None
    dialect = engine.dialect
    try:
        parameters = _SqliteParameters(table, dialect, constants, ids, labels)
    except _Unsupported as reason:
        logger.debug("ADBC insert not used for the labels: %s", reason)
        return None
    import adbc_driver_manager

    exists = sa.inspect(engine).has_table(table.name, schema=table.schema)
    insert = sa.insert(table).compile(dialect=dialect, column_keys=parameters.names)
    order = list(insert.positiontup)
    delete = sa.delete(table).where(table.c.run_key == constants["run_key"]).compile(dialect=dialect)
    try:
        with adbc_sqlite.connect(uri, adbc_sqlite.busy_timeout_ms(engine)) as connection:
            with connection.cursor() as cursor:
                if not exists:
                    cursor.execute(str(sa.schema.CreateTable(table).compile(dialect=dialect)))
                cursor.execute(str(delete), [delete.params[name] for name in delete.positiontup])
                for block in parameters.blocks(BLOCK_ROWS):
                    cursor.executemany(str(insert), block.select(order))
            connection.commit()
    except adbc_driver_manager.Error as error:
        logger.debug("ADBC insert of the labels failed, writing them the portable way: %s", error)
        return None
    return len(ids)


class _SqliteParameters:
    """The INSERT parameters of every row as Arrow columns, handed out in blocks.

    Values are what the portable path binds: constants through the column
    type's bind processor (e.g. SQLite DATETIME as its text form), integers as
    64-bit integers. Raises :class:`_Unsupported` for what it cannot bind alike.
    """

    def __init__(self, table: sa.Table, dialect, constants: Mapping[str, object], ids: np.ndarray,
                 labels: np.ndarray):
        import pyarrow as pa

        self.n = len(ids)
        self.constants = {}
        for name, value in constants.items():
            processor = table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
            self.constants[name] = processor(value) if processor is not None and value is not None else value
            _repeated(self.constants[name], 0)  # refuses kinds it cannot repeat
        self.labels = pa.array(labels.astype(np.int64, copy=False))
        id_type = table.c["id"].type.dialect_impl(dialect)
        processor = id_type.bind_processor(dialect)
        if np.issubdtype(ids.dtype, np.unsignedinteger) and len(ids) and ids.max() > np.iinfo(np.int64).max:
            raise _Unsupported("ids beyond the 64-bit integer range")
        if np.issubdtype(ids.dtype, np.integer) and processor is None:
            self.ids = pa.array(ids.astype(np.int64, copy=False))
        elif np.issubdtype(ids.dtype, np.floating) and (processor is None or isinstance(id_type, sa.Float)):
            self.ids = pa.array(ids.astype(np.float64, copy=False))
        elif np.issubdtype(ids.dtype, np.integer) and isinstance(id_type, sa.Float):
            self.ids = pa.array(ids.astype(np.float64))  # the Float type's bind processor: float(id)
        elif ids.dtype == object and processor is None:
            data, offsets = _utf8_column(ids)
            self.ids = pa.Array.from_buffers(
                pa.large_string(), self.n,
                [None, pa.py_buffer(offsets - offsets[0]), pa.py_buffer(data[offsets[0]:])],
            )
        else:
            raise _Unsupported(f"ids of dtype {ids.dtype} for a {id_type} column")
        self.names = [*self.constants, "label", "id"]

    def blocks(self, rows: int):
        import pyarrow as pa

        if not self.n:
            return
        size = min(rows, self.n)
        repeated = {name: _repeated(value, size) for name, value in self.constants.items()}
        for start in range(0, self.n, rows):
            length = min(rows, self.n - start)
            yield pa.table({
                **{name: column.slice(0, length) for name, column in repeated.items()},
                "label": self.labels.slice(start, length),
                "id": self.ids.slice(start, length),
            })


def _repeated(value, n: int):
    """An Arrow column holding ``value`` ``n`` times, built without a Python object per row."""
    import pyarrow as pa

    if value is None:
        return pa.nulls(n, pa.int64())
    if isinstance(value, bool):
        raise _Unsupported("booleans")
    if isinstance(value, (int, np.integer)):
        if not -(2**63) <= int(value) < 2**63:
            raise _Unsupported(f"{value} does not fit in 64 bits")
        return pa.array(np.full(n, int(value), dtype=np.int64))
    if isinstance(value, (float, np.floating)):
        return pa.array(np.full(n, float(value), dtype=np.float64))
    if isinstance(value, str):
        encoded = np.frombuffer(value.encode("utf-8"), dtype=np.uint8)
        offsets = np.arange(n + 1, dtype=np.int64) * len(encoded)
        return pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(np.tile(encoded, n))]
        )
    raise _Unsupported(f"a constant of type {type(value).__name__}")
