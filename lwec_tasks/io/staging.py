"""The one write path for labels: rows ingested in bulk under an unpublished run, published in one transaction.

:func:`begin_run` makes the labels storage ready (created, or converted from a
wide table of an earlier release: :mod:`lwec_tasks.io.storage_setup`) and adds
an unpublished row to the runs table; :func:`append_to` adds (run, id,
label) rows to the run's table — on PostgreSQL a table of its own, not indexed
while the rows arrive (:mod:`lwec_tasks.io.run_tables`), elsewhere the rows
table — from the flow or from Dask workers, each in one transaction. They are
invisible until :func:`finish_run` publishes the run in one transaction
(attaching its table as a partition of the rows table, replacing the earlier
run of its run key, pruning old runs). :func:`discard_run` removes a run
that failed. A rerun first asks :func:`published_run_matching` which stored
run may already hold its labels; when they are all there, nothing is written
and only :func:`prune_unchanged_run` applies.

Rows are appended by ADBC bulk ingestion — ``adbc-driver-postgresql``
(binary ``COPY``) for PostgreSQL, ``adbc-driver-sqlite`` for SQLite files —
and otherwise by SQLAlchemy ``executemany``. Ids Arrow cannot carry exactly
into the rows table's ``id`` column (uuid, NUMERIC, ...) go through a staging
table instead (:func:`staging_id_type`: uuids as their 32 hex digits, numbers
as their exact decimal text), cast by one ``INSERT … SELECT`` into the run's
table. Every name is a :class:`~lwec_tasks.io.names.TableName` derived from the
labels storage's names (:class:`~lwec_tasks.io.label_storage.StorageNames`) and
quoted by the dialect or driver, never pasted.
"""

from __future__ import annotations

import contextlib
import decimal
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.bulk_read import adbc_connector, fast_path_enabled, literal_sql
from lwec_tasks.io.catalog import NARROW, labels_layout
from lwec_tasks.io.cleanup import tidy
from lwec_tasks.io.duckdb_dialect import duckdb_client, is_duckdb
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.history import check_keep, delete_runs, prune_runs
from lwec_tasks.io.label_storage import (
    CONFIDENCE_COLUMN,
    HELD_COLUMN,
    StorageNames,
    published_runs,
    rows_clause,
    runs_clause,
    runs_table,
    storage_names,
)
from lwec_tasks.io.locks import RunLock, lock_errors, run_is_abandoned
from lwec_tasks.io.names import TableName
from lwec_tasks.io.run_metadata import LabelRows, RunMetadata
from lwec_tasks.io.run_tables import attach_run_rows, create_run_rows, drop_run_rows, index_run_rows, partitioned
from lwec_tasks.io.storage_setup import begin_writing, drop_storage, prepare_storage
from lwec_tasks.stopping import RunStopped

_log = logging.getLogger(__name__)

#: Rows per ``executemany`` batch when the rows cannot be ingested by ADBC.
APPEND_BATCH = 20_000

#: A table's columns as (name, SQL type) pairs, in table order.
Columns = tuple[tuple[str, sa.types.TypeEngine], ...]


def id_key_type(ids: np.ndarray, reflected: sa.types.TypeEngine | None = None) -> sa.types.TypeEngine:
    """The SQL type of the labels table's ``id`` column.

    ``reflected`` (the source id column's type) when it is usable as a key;
    when it is missing or has no declared type (SQLite ``create table t (id, ...)``
    reflects as ``NullType``), a type inferred from the id values.
    """
    if reflected is not None and not isinstance(reflected, sa.types.NullType):
        return reflected
    if not len(ids) or np.issubdtype(ids.dtype, np.integer):
        return sa.BigInteger()
    if np.issubdtype(ids.dtype, np.floating):
        return sa.Float()
    if all(isinstance(v, str) for v in ids):
        return sa.String(max(255, max(len(v) for v in ids)))
    if all(isinstance(v, (bytes, bytearray)) for v in ids):
        return sa.LargeBinary()
    if all(isinstance(v, uuid.UUID) for v in ids):
        return sa.Uuid()
    if all(isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool) for v in ids):
        return sa.Numeric()  # integers beyond 64 bits, decimals
    raise LwecInputError(
        f"cannot choose a key type for the labels table's id column from values such as {ids[:3].tolist()!r}; "
        "declare a type for the source's id column"
    )


def staging_table_name(output_table: TableName | StorageNames, run: int) -> TableName:
    """The name of run ``run``'s staging table, in the labels table's schema (:meth:`StorageNames.staging`: it
    names the run, so a staging table a killed write left is found and removed with its run)."""
    return storage_names(output_table).staging(run)


def staging_id_type(id_type: sa.types.TypeEngine) -> sa.types.TypeEngine:
    """The staging table's id column type for a labels table's ``id_type``: one Arrow carries exactly."""
    if isinstance(id_type, sa.Integer):
        return sa.BigInteger()
    if isinstance(id_type, sa.Float):
        return sa.Double()
    if isinstance(id_type, (sa.String, sa.Uuid, sa.Numeric)):
        return sa.Text()
    return id_type


def _staging(name: TableName, id_type: sa.types.TypeEngine) -> sa.Table:
    return sa.Table(name.name, sa.MetaData(), sa.Column("id", staging_id_type(id_type), nullable=False),
                    sa.Column("label", sa.BigInteger, nullable=False),
                    sa.Column(CONFIDENCE_COLUMN, sa.REAL, nullable=True), schema=name.schema)


def create_staging_table(engine: sa.Engine, name: TableName, id_type: sa.types.TypeEngine) -> None:
    """Create the staging table ``name`` for labels keyed by ``id_type`` ids."""
    with database_errors(engine, f"create table {str(name)!r}"), engine.begin() as connection:
        _staging(name, id_type).create(connection)


def drop_table_quietly(engine: sa.Engine, name: TableName) -> None:
    """Drop ``name`` if it exists; errors are swallowed (best effort)."""
    with contextlib.suppress(sa.exc.SQLAlchemyError), engine.begin() as connection:
        sa.Table(name.name, sa.MetaData(), schema=name.schema).drop(connection, checkfirst=True)


def append_to(engine: sa.Engine, name: TableName, ids: np.ndarray, labels: np.ndarray, run: int | None = None,
              columns: Columns | None = None, confidence: np.ndarray | None = None) -> int:
    """Append the (id, label) rows to ``name`` in one transaction; returns the rows written. ``confidence``
    (n,), when given, fills the table's ``confidence`` column (left NULL by a table without one).

    ``name`` is a pending run's target (:attr:`PendingRun.target`): the run's table, whose ``run`` column
    takes ``run`` (:attr:`PendingRun.append_run`; None: the column's default), or a staging table (``run``
    None). ``columns`` are its columns as :func:`begin_run` made them (:attr:`PendingRun.target_columns`;
    default None: reflected from the database). For the flow's process and Dask workers alike: a partition's
    task appends on its own engine (:func:`~lwec_tasks.stages.partitions.partition_engine`, whose SQLite files
    get a long lock wait, as workers write to one file in turn). Database errors are raised as
    :mod:`lwec_tasks.io.errors` describes.
    """
    ids, labels = np.asarray(ids), np.asarray(labels).astype(np.int64)
    if not len(ids):
        return 0
    with database_errors(engine, f"write labels to table {str(name)!r}"):
        # Reflecting the table costs catalog queries on a fresh connection for every partition (0.1-0.5 s).
        table = sa.Table(name.name, sa.MetaData(), schema=name.schema, autoload_with=engine) if columns is None \
            else sa.Table(name.name, sa.MetaData(), *(sa.Column(column, kind) for column, kind in columns),
                          schema=name.schema)
        if isinstance(table.c.id.type, sa.String) and not all(isinstance(value, str) for value in ids):
            ids = np.array([value.hex if isinstance(value, uuid.UUID) else str(value) for value in ids.tolist()],
                           dtype=object)
        if confidence is not None and CONFIDENCE_COLUMN not in table.c:
            confidence = None  # storage written before the column existed, read by an older release's view
        if not (fast_path_enabled() and _ingest(engine, table, ids, labels, run, confidence)):
            fixed = {} if run is None else {"run": int(run)}
            with engine.begin() as connection:
                for start in range(0, len(ids), APPEND_BATCH):
                    # Python scalars only: sqlite3 would store numpy integers as BLOBs.
                    stop = start + APPEND_BATCH
                    rows = [{**fixed, "id": i, "label": label}
                            for i, label in zip(ids[start:stop].tolist(), labels[start:stop].tolist())]
                    if confidence is not None:
                        for row, value in zip(rows, np.asarray(confidence[start:stop], dtype=np.float64).tolist()):
                            row[CONFIDENCE_COLUMN] = value
                    connection.execute(sa.insert(table), rows)
    return len(ids)


def _arrow_type(pa, kind: sa.types.TypeEngine):
    """The Arrow type a column of ``kind`` takes as is (binary ``COPY`` wants each integer's exact width)."""
    if isinstance(kind, sa.Integer):
        return pa.int16() if isinstance(kind, sa.SmallInteger) else \
            pa.int64() if isinstance(kind, sa.BigInteger) else pa.int32()
    if isinstance(kind, sa.Float):
        return pa.float32() if isinstance(kind, sa.REAL) else pa.float64()
    return pa.string()


def _ingest(engine: sa.Engine, table: sa.Table, ids: np.ndarray, labels: np.ndarray, run: int | None = None,
            confidence: np.ndarray | None = None) -> bool:
    """ADBC bulk ingestion of the rows (with ``run`` in every row, unless None; with their ``confidence``
    unless None) in one transaction — on DuckDB, one ``INSERT … SELECT`` from the rows as Arrow
    (:func:`_insert_arrow`); False (nothing written) where it does not apply."""
    duckdb = is_duckdb(engine)
    connect = None if duckdb else adbc_connector(engine, read_only=False)
    if (connect is None and not duckdb) or not all(_ingestible(column.type) for column in table.columns):
        return False
    import pyarrow as pa

    values = {"id": ids, "label": labels} if run is None else \
        {"run": np.full(len(ids), run, dtype=np.int64), "id": ids, "label": labels}
    if confidence is not None:
        values[CONFIDENCE_COLUMN] = np.asarray(confidence, dtype=np.float32)
    try:
        rows = pa.table({name: pa.array(value).cast(_arrow_type(pa, table.c[name].type))
                         for name, value in values.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return False  # e.g. ids beyond the id column's width: executemany reports it
    if duckdb:
        return _insert_arrow(engine, table, rows)
    # SQLite's driver takes no schema; the only one lwec accepts there is "main", where the name resolves anyway.
    schema = table.schema if engine.dialect.name == "postgresql" else None
    with connect() as connection, connection.cursor() as cursor:
        cursor.adbc_ingest(table.name, rows, mode="append", db_schema_name=schema)
        connection.commit()
    return True


def _insert_arrow(engine: sa.Engine, table: sa.Table, rows) -> bool:
    """DuckDB: insert the Arrow table ``rows`` (columns named as ``table``'s) into ``table`` by one statement (one
    transaction), ``INSERT INTO table (...) SELECT ... FROM <rows>``, the rows registered under a name of lwec's
    own on a duplicate of a pooled connection (its own cursor, the same database); False (nothing written) when
    the client cannot register Arrow data. DuckDB's errors are raised as SQLAlchemy raises them."""
    name = f"lwec_rows_{uuid.uuid4().hex}"
    source = sa.table(name, *(sa.column(column) for column in rows.column_names))
    sql = literal_sql(sa.insert(table).from_select(rows.column_names, sa.select(*source.c)), engine.dialect)
    with duckdb_client(engine, sql) as client:
        if client is None:
            return False
        client.register(name, rows)  # gone when the client closes
        client.execute(sql)
    return True


@dataclass(frozen=True)
class PendingRun:
    """A run being written, not visible yet.

    Attributes
    ----------
    output_table : the labels storage's names (:class:`~lwec_tasks.io.label_storage.StorageNames`)
    run : the run's number in the runs table (the rows table's ``run``)
    rows : the table the run's rows go to (:func:`~lwec_tasks.io.run_tables.create_run_rows`): on PostgreSQL
        the run's own table, attached to the rows table when published; elsewhere the rows table
    target : the table partitions append to (:func:`append_to`): ``rows``, or a staging table when the
        ids need a cast (:attr:`staged`)
    id_type : the rows table's ``id`` type
    created : whether this write created the storage (dropped again if the write fails)
    target_columns : ``target``'s columns (what :func:`append_to` takes instead of reflecting them)
    rows_columns : ``rows``' columns
    lock : the lock marking the run as live (:class:`~lwec_tasks.io.locks.RunLock`), freed when the run is
        published or discarded
    """

    output_table: StorageNames
    run: int
    rows: TableName
    target: TableName
    id_type: sa.types.TypeEngine
    created: bool
    target_columns: Columns = ()
    rows_columns: Columns = ()
    lock: RunLock | None = field(default=None, compare=False, repr=False)

    @property
    def staged(self) -> bool:
        """Whether rows go through a staging table (``target``), copied into ``rows`` by :func:`finish_run`."""
        return self.target != self.rows

    @property
    def append_run(self) -> int | None:
        """The ``run`` to give :func:`append_to`: None unless ``target`` is the rows table (a run's own table
        fills its ``run`` itself; a staging table has no such column)."""
        return self.run if self.target == self.output_table.rows else None


def _ingestible(id_type: sa.types.TypeEngine) -> bool:
    """Whether Arrow carries ids of ``id_type`` straight into a column of that type."""
    return isinstance(id_type, (sa.Integer, sa.Float, sa.String)) and not isinstance(id_type, sa.Enum)


def begin_run(engine: sa.Engine, output_table: TableName | StorageNames, id_type: sa.types.TypeEngine,
              run: RunMetadata) -> PendingRun:
    """Make ``output_table``'s storage ready (:func:`~lwec_tasks.io.storage_setup.prepare_storage`: created with
    ``id_type`` ids, or converted from a wide table) and add ``run`` to its runs table unpublished with the table
    its rows go to (:func:`~lwec_tasks.io.run_tables.create_run_rows`), in one transaction whose lock waits are
    bounded (:class:`~lwec_tasks.io.locks.LockWaitError` if one is given up: nothing was written); the run's
    :class:`~lwec_tasks.io.locks.RunLock` is taken before it commits. For ids that need a cast, also create the
    staging table. Returns the :class:`PendingRun`."""
    names = storage_names(output_table)
    values = {**run.column_values(), "mlflow_run_id": None, "row_count": 0, "published": False,
              HELD_COLUMN: run.held}
    lock = None
    try:
        with database_errors(engine, f"write labels to table {str(names)!r}"), \
                lock_errors(f"could not begin writing run key {run.run_key!r} to table {str(names)!r}",
                            "nothing was written"), engine.begin() as connection:
            begin_writing(connection, names)
            created = prepare_storage(connection, names, id_type)
            stored = sa.Table(names.rows.name, sa.MetaData(), schema=names.rows.schema,
                              autoload_with=connection).columns
            number = int(connection.execute(sa.insert(runs_table(names, connection.dialect)).values(**values))
                         .inserted_primary_key[0])
            target = create_run_rows(connection, names, number)  # made with the rows table's columns
            lock = RunLock(engine, str(names.view), number).acquire()
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    stored_type = stored.id.type
    pending = PendingRun(names, number, target, target, stored_type, created, _named_types(stored),
                         _named_types(stored), lock)
    if _ingestible(stored_type):
        return pending
    staging = staging_table_name(names, number)
    pending = replace(pending, target=staging, target_columns=_named_types(_staging(staging, stored_type).c))
    try:
        create_staging_table(engine, pending.target, stored_type)
    except BaseException:
        discard_run(engine, pending)
        raise
    return pending


def _named_types(columns: sa.ColumnCollection) -> Columns:
    return tuple((column.name, column.type) for column in columns)


def copy_staged(engine: sa.Engine, pending: PendingRun) -> None:
    """Copy the staging table's rows into the run's table (:attr:`PendingRun.rows`) under the pending run, ids
    cast to the rows' id type."""
    rows = rows_clause(pending.output_table, pending.rows)
    staged = _staging(pending.target, pending.id_type)
    # Staged ids are never ones Arrow carries as they are (uuid, numeric, enums, ...): text has no implicit cast.
    names = ["run", "id", "label"]
    values = [sa.literal(pending.run, sa.BigInteger), sa.cast(staged.c.id, pending.id_type), staged.c.label]
    if CONFIDENCE_COLUMN in dict(pending.rows_columns):
        names.append(CONFIDENCE_COLUMN)
        values.append(staged.c[CONFIDENCE_COLUMN])
    statement = sa.insert(rows).from_select(names, sa.select(*values))
    with database_errors(engine, f"write labels to table {str(pending.output_table)!r}"), \
            engine.begin() as connection:
        connection.execute(statement)


def published_run_matching(engine: sa.Engine, output_table: TableName | StorageNames, run: RunMetadata,
                           n_rows: int) -> int | None:
    """The number (the runs table's ``run``) of the published run of ``run.run_key`` in ``output_table`` when it
    has ``run``'s parameters (k, method, θ, M, seed, source table) and ``n_rows`` rows: the one run a rerun may
    find its labels in, to be compared row by row before anything is written. None otherwise, also when the
    storage does not exist yet or is a wide table of an earlier release. One small query on the runs table;
    changes nothing."""
    output_table = storage_names(output_table)
    with database_errors(engine, f"read the runs of table {output_table!r}"), engine.connect() as connection:
        if labels_layout(connection, output_table) != NARROW:
            return None
        runs = runs_clause(output_table)
        stored = (runs.c.k, runs.c.method, runs.c.theta, runs.c.ensemble_size, runs.c.seed, runs.c.source_table,
                  runs.c.row_count)
        earlier = connection.execute(sa.select(runs.c.run, *stored).where(
            runs.c.run_key == run.run_key, published_runs(runs)).limit(2)).all()
    wanted = (int(run.k), run.method, float(run.theta), int(run.ensemble_size),
              None if run.seed is None else int(run.seed), run.source_table, n_rows)
    if len(earlier) != 1 or tuple(earlier[0][1:]) != wanted:
        return None
    return int(earlier[0].run)


def prune_unchanged_run(engine: sa.Engine, output_table: TableName | StorageNames, run: RunMetadata,
                        keep_runs: int | None) -> list[str]:
    """What a rerun whose labels are stored already (:func:`published_run_matching`, then compared) changes
    instead of writing them: with ``keep_runs`` (None: nothing) the runs of ``run.source_table`` beyond the
    ``keep_runs`` most recent, the stored run of ``run.run_key`` among them, are deleted in one transaction
    taken as :func:`finish_run` takes it (:func:`lwec_tasks.io.history.prune_runs`). Returns the deleted run
    keys, most recent first. Their tables are removed afterwards by
    :func:`~lwec_tasks.io.cleanup.remove_leftovers` (the caller's to call)."""
    if keep_runs is None:
        return []
    keep_runs = check_keep(keep_runs, "keep_runs")
    names = storage_names(output_table)
    with database_errors(engine, f"delete old runs from table {str(names)!r}"), \
            lock_errors(f"could not delete old runs from table {str(names)!r}", "nothing was deleted"), \
            engine.begin() as connection:
        begin_writing(connection, names)
        return prune_runs(connection, names, run.source_table, keep_runs, keep_run_key=run.run_key)


def finish_run(engine: sa.Engine, pending: PendingRun, run: RunMetadata, expected_rows: int, appended: int,
               keep_runs: int | None = None) -> tuple[int, list[str]]:
    """Publish the pending run in one transaction: the rows its appends reported, ``appended``, must equal
    ``expected_rows`` (else RuntimeError, nothing changes); the earlier run of ``run.run_key`` is deleted
    (and unpublished runs of that key begun before this one whose writers are gone: on PostgreSQL, whose
    :class:`~lwec_tasks.io.locks.RunLock` is free), the run becomes visible stamped ``written_at`` now, and
    with ``keep_runs`` (default None: keep every run) the runs of ``run.source_table`` beyond the
    ``keep_runs`` most recent, this one included, are deleted
    (:func:`lwec_tasks.io.history.prune_runs`).

    Returns (rows published, run keys deleted by the pruning, most recent first). A staging table
    (:attr:`PendingRun.staged`) is copied into the run's table first and left for the caller to drop. On
    PostgreSQL the run's table gets its primary key next, in a transaction of its own (other writers of the
    labels table go on meanwhile), and publishing attaches it to the rows table
    (:mod:`lwec_tasks.io.run_tables`), which holds no lock a reader of the views holds; deleted runs leave the
    views at once, and their tables are dropped afterwards by :func:`~lwec_tasks.io.cleanup.remove_leftovers`
    (the caller's to call). The transaction's lock waits are bounded: a lock not granted in time raises
    :class:`~lwec_tasks.io.locks.LockWaitError` naming the table and saying nothing was published. On any
    failure the caller calls :func:`discard_run`.
    """
    if keep_runs is not None:
        keep_runs = check_keep(keep_runs, "keep_runs")
    names = pending.output_table
    # Not counted in the database (1 s at 10M rows): each append commits exactly its rows or fails, and the
    # run's rows are keyed by (run, id), so the run holds the sum the appends reported.
    if appended != expected_rows:
        raise RuntimeError(f"staged {appended} labels but the run has {expected_rows} rows; nothing "
                           f"was published to {str(names)!r}")
    if pending.staged:
        copy_staged(engine, pending)
    runs = runs_clause(names)
    with database_errors(engine, f"write labels to table {str(names)!r}"), engine.begin() as connection:
        index_run_rows(connection, names, pending.run)  # not under the lock of begin_writing
    with database_errors(engine, f"write labels to table {str(names)!r}"), \
            lock_errors(f"could not publish run key {run.run_key!r} to table {str(names)!r}",
                        "nothing was published"), engine.begin() as connection:
        begin_writing(connection, names)
        # The published run of this run key, and earlier attempts at it that never finished (a killed process:
        # on PostgreSQL, one whose lock no live run holds).
        earlier = connection.execute(sa.select(runs.c.run, runs.c.published).where(
            runs.c.run_key == run.run_key, sa.or_(published_runs(runs), runs.c.run < pending.run))).all()
        delete_runs(connection, names, [number for number, published in earlier if published or not partitioned(
            connection.dialect) or run_is_abandoned(connection, str(names.view), number)])
        attach_run_rows(connection, names, pending.run)
        connection.execute(sa.update(runs).where(runs.c.run == pending.run).values(
            published=True, row_count=appended, written_at=run.column_values()["written_at"]))
        pruned = [] if keep_runs is None else prune_runs(connection, names, run.source_table,
                                                         keep_runs, keep_run_key=run.run_key)
    return appended, pruned


def publish_appended(engine: sa.Engine, pending: PendingRun, run: RunMetadata, expected_rows: int,
                     append: Callable[[], int], keep_runs: int | None = None) -> tuple[int, list[str]]:
    """Append the rows under the pending run (``append()`` returns how many it appended) and publish it
    (:func:`finish_run`); on any failure the pending run is removed (:func:`discard_run`) and the error raised.
    A staging table is dropped afterwards, and the run's lock freed. Returns what :func:`finish_run` returns."""
    try:
        published = finish_run(engine, pending, run, expected_rows, append(), keep_runs=keep_runs)
    except BaseException:
        discard_run(engine, pending)
        raise
    try:
        if pending.staged:
            drop_table_quietly(engine, pending.target)
    finally:
        if pending.lock is not None:
            pending.lock.release()
    return published


def discard_run(engine: sa.Engine, pending: PendingRun) -> None:
    """Remove the pending run's rows (on PostgreSQL its table) and its runs-table row (and the storage, if this
    write created it and no run is left); drop its staging table; free its lock. Best effort: errors are
    swallowed (the original one is what matters); what is left then, a later write removes
    (:func:`~lwec_tasks.io.cleanup.remove_leftovers`)."""
    names = pending.output_table
    runs = runs_clause(names)
    try:
        with contextlib.suppress(sa.exc.SQLAlchemyError, RunStopped), engine.begin() as connection:
            begin_writing(connection, names)
            drop_run_rows(connection, names, [pending.run])
            connection.execute(sa.delete(runs).where(runs.c.run == pending.run, runs.c.published == sa.false()))
            if pending.created and connection.execute(sa.select(sa.func.count()).select_from(runs)).scalar_one() == 0:
                drop_storage(connection, names)
        if pending.staged:
            drop_table_quietly(engine, pending.target)
    finally:
        if pending.lock is not None:
            pending.lock.release()


def write_labels(
    engine: sa.Engine,
    table_name: TableName | StorageNames,
    rows: LabelRows,
    id_type: sa.types.TypeEngine | None = None,
    keep_runs: int | None = None,
) -> int:
    """Replace the run of ``rows.run_key`` in ``table_name`` by these rows; returns the rows written.

    Creates the storage when missing (converts a wide labels table of an earlier release).
    ``keep_runs`` (default None: keep every run) prunes in the publishing transaction: only the
    ``keep_runs`` most recent runs of ``rows.source_table``, this one included, are kept
    (:func:`lwec_tasks.io.history.prune_runs`); a failed write changes nothing visible.

    The rows are ingested by ADBC on PostgreSQL and SQLite files (``executemany`` elsewhere) under an
    unpublished run (:func:`begin_run`, :func:`finish_run`).
    """
    if keep_runs is not None:
        keep_runs = check_keep(keep_runs, "keep_runs")
    ids = np.asarray(rows.ids)
    labels = np.asarray(rows.labels)
    if ids.shape != labels.shape or ids.ndim != 1:
        raise LwecInputError(f"ids {ids.shape} and labels {labels.shape} must be equal-length vectors")
    pending = begin_run(engine, table_name, id_key_type(ids, id_type), rows)
    append = partial(append_to, engine, pending.target, ids, labels, run=pending.append_run,
                     columns=pending.target_columns)
    written = publish_appended(engine, pending, rows, len(ids), append, keep_runs)[0]
    tidy(engine, pending.output_table, _log)
    return written
