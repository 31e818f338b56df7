"""What a run's labels are (:class:`LabelRows`), the SQL type of their ids, and the wide table of earlier releases.

Labels are written by :mod:`lwec_tasks.io.staging` into the storage of
:mod:`lwec_tasks.io.label_storage`. Earlier releases kept them in one wide
table (:func:`label_table_schema`, written by :func:`replace_run_key`); such a
table is converted on the next write (:mod:`lwec_tasks.io.storage_setup`). The
two are kept to make tables of that shape (tests of the conversion, benchmarks
comparing the two).
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
from lwec_tasks.io.catalog import LABEL_TABLE_COLUMNS, check_label_table  # noqa: F401 - re-exported
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.history import prune_runs
from lwec_tasks.io.names import TableName, parse_table_name
from lwec_tasks.io.run_metadata import RunMetadata

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
    """The wide labels table of earlier releases (``name``: ``table`` or ``schema.table``); ``id_type`` mirrors the
    source's id."""
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


def replace_run_key(engine: sa.Engine, table: sa.Table, run_key: str, source_table: str, keep_runs: int | None,
                    insert: Callable[[sa.Connection], T]) -> tuple[T, list[str]]:
    """The write of earlier releases, on a wide labels ``table`` (:func:`label_table_schema`).

    In one transaction: create the labels ``table`` if missing, delete the rows of ``run_key``, call
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
