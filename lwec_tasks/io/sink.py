"""Writing consensus labels back to the database, idempotently.

The labels table is keyed by ``(run_key, id)``. Writing a run deletes the
rows of its run key and inserts the new ones inside one transaction, so a
rerun replaces its rows (never duplicates them) and a failed write leaves
the previous rows untouched. PostgreSQL and SQLite get the rows in bulk
(binary ``COPY``, ADBC); see :mod:`lwec_tasks.io.bulk_write`.
"""

from __future__ import annotations

import decimal
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.bulk_read import fast_path_enabled
from lwec_tasks.io.bulk_write import copy_labels, write_sqlite
from lwec_tasks.io.catalog import LABEL_TABLE_COLUMNS, check_label_table  # noqa: F401 - re-exported
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.history import check_keep, prune_runs
from lwec_tasks.io.names import TableName, parse_table_name
from lwec_tasks.io.run_metadata import RunMetadata

_INSERT_BATCH = 10_000
T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class LabelRows(RunMetadata):
    """One run's labels and the metadata stored beside each row.

    Attributes
    ----------
    ids : (N,) object ids (values of the source's id column, or row positions)
    labels : (N,) consensus labels 0..k−1
    run_key, k, method, theta, ensemble_size, seed, source_table, flow_run_id : see :class:`RunMetadata`
    """

    ids: np.ndarray
    labels: np.ndarray


def id_key_type(ids: np.ndarray, reflected: sa.types.TypeEngine | None = None) -> sa.types.TypeEngine:
    """The SQL type of the labels table's ``id`` column.

    ``reflected`` (the source id column's type) when it is usable as a key;
    when it is missing or has no declared type (SQLite ``create table t (id, ...)``
    reflects as ``NullType``), a type inferred from the id values.
    """
    if reflected is not None and not isinstance(reflected, sa.types.NullType):
        return reflected
    if np.issubdtype(ids.dtype, np.integer):
        return sa.BigInteger()
    if np.issubdtype(ids.dtype, np.floating):
        return sa.Float()
    if len(ids) and all(isinstance(v, str) for v in ids):
        return sa.String(max(255, max(len(v) for v in ids)))
    if len(ids) and all(isinstance(v, (bytes, bytearray)) for v in ids):
        return sa.LargeBinary()
    if len(ids) and all(isinstance(v, uuid.UUID) for v in ids):
        return sa.Uuid()
    if len(ids) and all(isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool) for v in ids):
        return sa.Numeric()  # integers beyond 64 bits, decimals
    if not len(ids):
        return sa.BigInteger()
    raise LwecInputError(
        f"cannot choose a key type for the labels table's id column from values such as {ids[:3].tolist()!r}; "
        "declare a type for the source's id column"
    )


def label_table_schema(name: str, id_type: sa.types.TypeEngine) -> sa.Table:
    """The labels table definition (``name``: ``table`` or ``schema.table``); ``id_type`` mirrors the source's id."""
    parsed = parse_table_name(name, "output_table")
    return sa.Table(
        parsed.name,
        sa.MetaData(),
        sa.Column("run_key", sa.String(64), primary_key=True),
        sa.Column("id", id_type, primary_key=True),
        sa.Column("label", sa.Integer, nullable=False),
        sa.Column("k", sa.Integer, nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("theta", sa.Float, nullable=False),
        sa.Column("ensemble_size", sa.Integer, nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=True),
        sa.Column("source_table", sa.String(255), nullable=False),
        sa.Column("flow_run_id", sa.String(64), nullable=True),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        schema=parsed.schema,
    )


def write_labels(
    engine: sa.Engine,
    table_name: str,
    rows: LabelRows,
    id_type: sa.types.TypeEngine | None = None,
    keep_runs: int | None = None,
) -> int:
    """Replace the rows of ``rows.run_key`` in ``table_name`` in one transaction.

    Creates the table when missing. Returns the number of rows written.

    ``keep_runs`` (default None: keep every run) prunes the table in the same
    transaction: only the ``keep_runs`` most recent runs of ``rows.source_table``,
    this one included, are kept (:func:`lwec_tasks.io.history.prune_runs`); a
    failed write deletes nothing. The SQLite fast path commits through ADBC, so
    there the prune runs in a second transaction right after the write.

    PostgreSQL (psycopg) receives the rows as one binary ``COPY`` and SQLite
    files through ADBC with Arrow-bound parameters, built from the id and label
    vectors without a Python object per row (:mod:`lwec_tasks.io.bulk_write`);
    other databases, and the cases those paths decline, get the rows through
    ``executemany`` (:func:`write_labels_portable`). The stored rows are the same.
    """
    return _write_labels(engine, table_name, rows, id_type, fast=fast_path_enabled(), keep_runs=keep_runs)


def write_labels_portable(
    engine: sa.Engine,
    table_name: str,
    rows: LabelRows,
    id_type: sa.types.TypeEngine | None = None,
    keep_runs: int | None = None,
) -> int:
    """:func:`write_labels` through SQLAlchemy ``executemany`` inserts (any database)."""
    return _write_labels(engine, table_name, rows, id_type, fast=False, keep_runs=keep_runs)


def _write_labels(engine, table_name, rows, id_type, *, fast: bool, keep_runs: int | None = None) -> int:
    """:func:`write_labels` with the bulk paths (``fast``) or with ``executemany`` inserts only."""
    if keep_runs is not None:
        keep_runs = check_keep(keep_runs, "keep_runs")
    ids = np.asarray(rows.ids)
    labels = np.asarray(rows.labels)
    if ids.shape != labels.shape or ids.ndim != 1:
        raise LwecInputError(f"ids {ids.shape} and labels {labels.shape} must be equal-length vectors")
    id_type = id_key_type(ids, id_type)
    table = label_table_schema(table_name, id_type)
    common = rows.column_values()
    labels = labels.astype(np.int64)
    if fast:
        with database_errors(engine, f"write labels to table {table_name!r}"):
            written = write_sqlite(engine, table, common, ids, labels)
            if written is not None and keep_runs is not None:
                # ADBC commits its own transaction, so the prune follows it in another: a failed
                # write still deletes nothing, and a failed prune only leaves older runs in place.
                prune_runs(engine, table_name, rows.source_table, keep_runs, keep_run_key=rows.run_key)
        if written is not None:
            return written

    def insert(connection: sa.Connection) -> None:
        if not (fast and copy_labels(connection, table, common, ids, labels)):
            _insert_rows(connection, table, common, ids, labels)

    replace_run_key(engine, table, rows.run_key, rows.source_table, keep_runs, insert)
    return len(ids)


def replace_run_key(engine: sa.Engine, table: sa.Table, run_key: str, source_table: str, keep_runs: int | None,
                    insert: Callable[[sa.Connection], T]) -> tuple[T, list[str]]:
    """In one transaction: create the labels ``table`` if missing, delete the rows of ``run_key``, call
    ``insert(connection)`` to add the new ones, and delete the runs of ``source_table`` beyond the
    ``keep_runs`` most recent, this one included (None keeps every run; :func:`lwec_tasks.io.history.prune_runs`).

    Returns (what ``insert`` returned, the run keys deleted, most recent first). On any failure
    nothing changes; a table created here is dropped again if still empty (SQLite and MySQL commit
    DDL at once). Database errors are raised as :mod:`lwec_tasks.io.errors` describes:
    :class:`~lwec_tasks.io.errors.DatabaseUnreachableError` for lost connections,
    :class:`~lwec_tasks.io.errors.DatabaseRefusedError` for the rest (one line, no SQL or values).
    """
    name = str(TableName.of(table))
    created = False
    with database_errors(engine, f"write labels to table {name!r}"):
        try:
            with engine.begin() as connection:
                created = not sa.inspect(connection).has_table(table.name, schema=table.schema)
                if created:
                    table.create(connection)
                connection.execute(sa.delete(table).where(table.c.run_key == run_key))
                inserted = insert(connection)
                pruned = [] if keep_runs is None else prune_runs(connection, name, source_table, keep_runs,
                                                                 keep_run_key=run_key)
        except BaseException:
            if created:
                _drop_quietly(engine, table)
            raise
    return inserted, pruned


def _insert_rows(connection: sa.Connection, table: sa.Table, common: dict, ids: np.ndarray,
                 labels: np.ndarray) -> None:
    """``executemany`` inserts, ``_INSERT_BATCH`` rows at a time."""
    for start in range(0, len(ids), _INSERT_BATCH):
        stop = start + _INSERT_BATCH
        # Python scalars only: numpy integers would be stored as BLOBs by sqlite3.
        records = [
            {**common, "id": object_id, "label": label}
            for object_id, label in zip(ids[start:stop].tolist(), labels[start:stop].tolist())
        ]
        connection.execute(sa.insert(table), records)


def _drop_quietly(engine: sa.Engine, table: sa.Table) -> None:
    """Drop ``table`` if it exists, empty; errors are swallowed (the original one is what matters)."""
    try:
        with engine.begin() as connection:
            if sa.inspect(connection).has_table(table.name, schema=table.schema):
                empty = connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 0
                if empty:
                    table.drop(connection)
    except sa.exc.SQLAlchemyError:
        pass
