"""The one write path for labels: a staging table per write, filled in bulk, published in one transaction.

:func:`create_staging_table` makes an ``(id, label)`` table beside the labels
table; :func:`append_labels` adds rows to it (from the flow or from Dask
workers, each in one transaction); :func:`publish_labels` replaces the run
key's rows of the labels table by the staged ones in one transaction; the
caller then drops the staging table (:func:`drop_table_quietly`).

Rows are appended by ADBC bulk ingestion — ``adbc-driver-postgresql``
(binary ``COPY``) for PostgreSQL, ``adbc-driver-sqlite`` for SQLite files —
and otherwise by SQLAlchemy ``executemany``. Staging columns are types Arrow
carries exactly (:func:`staging_id_type`): uuid and NUMERIC ids are staged as
text (uuids as their 32 hex digits, numbers as their exact decimal text) and
cast to the labels table's id type by the publishing ``INSERT … SELECT``.
Every name is parsed with :func:`~lwec_tasks.io.names.parse_table_name` and
quoted by the dialect or driver, never pasted.
"""

from __future__ import annotations

import uuid

import numpy as np
import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import adbc_sqlite
from lwec_tasks.io.bulk_read import fast_path_enabled, postgres_uri
from lwec_tasks.io.connection import open_shared_engine
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.history import check_keep, is_labels_table, labels_table_clause
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.io.sink import LabelRows, id_key_type, label_table_schema, replace_run_key

#: Rows per ``executemany`` batch when the rows cannot be ingested by ADBC.
APPEND_BATCH = 20_000


def staging_table_name(output_table: str) -> str:
    """A fresh name for a run's staging table, in the labels table's schema (at most 63 characters)."""
    parsed = parse_table_name(output_table, "output_table")
    return str(parsed.with_name(f"{parsed.name[:36]}_lwec_stage_{uuid.uuid4().hex[:8]}"))


def staging_id_type(id_type: sa.types.TypeEngine) -> sa.types.TypeEngine:
    """The staging table's id column type for a labels table's ``id_type``: one Arrow carries exactly."""
    if isinstance(id_type, sa.Integer):
        return sa.BigInteger()
    if isinstance(id_type, sa.Float):
        return sa.Double()
    if isinstance(id_type, (sa.String, sa.Uuid, sa.Numeric)):
        return sa.Text()
    return id_type


def _cast_on_publish(id_type: sa.types.TypeEngine) -> bool:
    """Whether staged ids need an explicit cast to ``id_type`` (text has no implicit cast to uuid, numeric, enums)."""
    return isinstance(id_type, (sa.Enum, sa.Uuid)) or not isinstance(id_type, (sa.Integer, sa.Float, sa.String))


def _staging(name: str, id_type: sa.types.TypeEngine) -> sa.Table:
    parsed = parse_table_name(name, "staging table")
    return sa.Table(parsed.name, sa.MetaData(), sa.Column("id", staging_id_type(id_type), nullable=False),
                    sa.Column("label", sa.BigInteger, nullable=False), schema=parsed.schema)


def create_staging_table(engine: sa.Engine, name: str, id_type: sa.types.TypeEngine) -> None:
    """Create the staging table ``name`` (``table`` or ``schema.table``) for labels keyed by ``id_type`` ids."""
    with database_errors(engine, f"create table {name!r}"), engine.begin() as connection:
        _staging(name, id_type).create(connection)


def drop_table_quietly(engine: sa.Engine, name: str) -> None:
    """Drop ``name`` if it exists; errors are swallowed (best effort)."""
    parsed = parse_table_name(name, "table")
    try:
        with engine.begin() as connection:
            if sa.inspect(connection).has_table(parsed.name, schema=parsed.schema):
                sa.Table(parsed.name, sa.MetaData(), schema=parsed.schema).drop(connection)
    except sa.exc.SQLAlchemyError:
        pass


def append_labels(database_url: str, staging: str, ids: np.ndarray, labels: np.ndarray) -> int:
    """Append the (id, label) rows to the staging table in one transaction; returns the rows written.

    For the flow's process and Dask workers alike: ``database_url`` is resolved (no ``env:``/``block:``
    reference); SQLite files get a long lock wait (:func:`~lwec_tasks.io.connection.open_shared_engine`), as
    workers write to one file in turn. Database errors are raised as :mod:`lwec_tasks.io.errors` describes.
    """
    engine = open_shared_engine(database_url)
    try:
        return append_to(engine, staging, ids, labels)
    finally:
        engine.dispose()


def append_to(engine: sa.Engine, staging: str, ids: np.ndarray, labels: np.ndarray) -> int:
    """:func:`append_labels` on an open engine."""
    ids, labels = np.asarray(ids), np.asarray(labels).astype(np.int64)
    if not len(ids):
        return 0
    name = parse_table_name(staging, "staging table")
    with database_errors(engine, f"write labels to table {staging!r}"):
        table = sa.Table(name.name, sa.MetaData(), schema=name.schema, autoload_with=engine)
        if isinstance(table.c.id.type, sa.String) and not all(isinstance(value, str) for value in ids):
            ids = np.array([value.hex if isinstance(value, uuid.UUID) else str(value) for value in ids.tolist()],
                           dtype=object)
        if not (fast_path_enabled() and _ingest(engine, table, ids, labels)):
            with engine.begin() as connection:
                for start in range(0, len(ids), APPEND_BATCH):
                    # Python scalars only: sqlite3 would store numpy integers as BLOBs.
                    batch = zip(ids[start:start + APPEND_BATCH].tolist(), labels[start:start + APPEND_BATCH].tolist())
                    connection.execute(sa.insert(table), [{"id": i, "label": label} for i, label in batch])
    return len(ids)


def _ingest(engine: sa.Engine, table: sa.Table, ids: np.ndarray, labels: np.ndarray) -> bool:
    """ADBC bulk ingestion of the rows in one transaction; False (nothing written) where it does not apply."""
    dialect = engine.dialect
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        uri = postgres_uri(engine.url)
    elif dialect.name == "sqlite" and adbc_sqlite.available():
        uri = adbc_sqlite.sqlite_uri(engine, read_only=False)
    else:
        return False
    kind = table.c.id.type
    if uri is None or not isinstance(kind, (sa.Integer, sa.Float, sa.String)):
        return False
    try:
        import pyarrow as pa

        if dialect.name == "postgresql":
            from adbc_driver_postgresql.dbapi import connect
        else:
            def connect(uri):
                return adbc_sqlite.connect(uri, adbc_sqlite.busy_timeout_ms(engine))
    except ImportError:
        return False
    arrow_type = pa.int64() if isinstance(kind, sa.Integer) else pa.float64() if isinstance(kind, sa.Float) \
        else pa.string()
    try:
        rows = pa.table({"id": pa.array(ids).cast(arrow_type), "label": pa.array(labels)})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return False  # e.g. ids beyond 64 bits for an integer column: executemany reports it
    # SQLite's driver takes no schema; the only one lwec accepts there is "main", where the name resolves anyway.
    schema = table.schema if dialect.name == "postgresql" else None
    with connect(uri) as connection, connection.cursor() as cursor:
        cursor.adbc_ingest(table.name, rows, mode="append", db_schema_name=schema)
        connection.commit()
    return True


def staged_run_matches(engine: sa.Engine, labels_table: str, staging: str, id_type: sa.types.TypeEngine,
                       run: RunMetadata, n_rows: int) -> bool:
    """Whether ``labels_table`` already holds exactly this run: its run key with the same parameters
    (k, method, θ, M, seed, source table) and the same (id, label) rows as the ``n_rows`` rows of the
    staging table ``staging`` (made by :func:`create_staging_table` for ``id_type`` ids).

    Cheap when it is not so: one aggregate query on the run key's rows; the rows themselves are compared
    (one join in the database) only when the key, the parameters and the row count all agree.
    """
    table = labels_table_clause(labels_table)
    stored = (table.c.k, table.c.method, table.c.theta, table.c.ensemble_size, table.c.seed, table.c.source_table)
    wanted = (int(run.k), run.method, float(run.theta), int(run.ensemble_size),
              None if run.seed is None else int(run.seed), run.source_table)
    statement = sa.select(*stored, sa.func.count()).where(table.c.run_key == run.run_key).group_by(*stored).limit(2)
    staged = _staging(staging, id_type)
    staged_id = sa.cast(staged.c.id, id_type) if _cast_on_publish(id_type) else staged.c.id
    same = (sa.select(sa.func.count()).select_from(table.join(staged, table.c.id == staged_id))
            .where(table.c.run_key == run.run_key, table.c.label == staged.c.label))
    with database_errors(engine, f"read table {str(labels_table)!r}"), engine.connect() as connection:
        if not is_labels_table(connection, labels_table):
            return False
        groups = connection.execute(statement).all()
        if len(groups) != 1 or tuple(groups[0][:-1]) != wanted or groups[0][-1] != n_rows:
            return False
        return connection.execute(same).scalar_one() == n_rows


def publish_labels(engine: sa.Engine, output_table: str, staging: str, id_type: sa.types.TypeEngine,
                   run: RunMetadata, expected_rows: int, keep_runs: int | None = None) -> tuple[int, list[str]]:
    """Replace the run key's rows of ``output_table`` by the staged labels, in one transaction.

    Creates the labels table when missing. The staged row count must equal ``expected_rows``, else nothing
    changes. With ``keep_runs`` (default None: keep every run), the same transaction deletes the runs of
    ``run.source_table`` beyond the ``keep_runs`` most recent, this one included
    (:func:`lwec_tasks.io.history.prune_runs`). The staging table is left for the caller to drop.

    Returns (rows published, run keys deleted by the pruning, most recent first).
    """
    if keep_runs is not None:
        keep_runs = check_keep(keep_runs, "keep_runs")
    table = label_table_schema(output_table, id_type)
    staged = _staging(staging, id_type)
    constants = {name: sa.literal(value, table.c[name].type) for name, value in run.column_values().items()}
    staged_id = sa.cast(staged.c.id, id_type) if _cast_on_publish(id_type) else staged.c.id
    names = [c.name for c in table.columns]
    source_columns = [staged_id if n == "id" else staged.c.label if n == "label" else constants[n] for n in names]

    def insert(connection: sa.Connection) -> int:
        connection.execute(sa.insert(table).from_select(names, sa.select(*source_columns)))
        # Counted, not taken from the cursor: drivers report -1 for INSERT … SELECT.
        inserted = connection.execute(sa.select(sa.func.count()).select_from(table)
                                      .where(table.c.run_key == run.run_key)).scalar_one()
        if inserted != expected_rows:
            raise RuntimeError(f"staged {inserted} labels but the run has {expected_rows} rows; nothing "
                               f"was published to {output_table!r}")
        return inserted

    return replace_run_key(engine, table, run.run_key, run.source_table, keep_runs, insert)


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
    failed write deletes nothing.

    The rows go through a staging table (ADBC bulk ingestion on PostgreSQL and
    SQLite files, ``executemany`` elsewhere), dropped again whatever happens.
    """
    if keep_runs is not None:
        keep_runs = check_keep(keep_runs, "keep_runs")
    ids = np.asarray(rows.ids)
    labels = np.asarray(rows.labels)
    if ids.shape != labels.shape or ids.ndim != 1:
        raise LwecInputError(f"ids {ids.shape} and labels {labels.shape} must be equal-length vectors")
    id_type = id_key_type(ids, id_type)
    staging = staging_table_name(table_name)
    create_staging_table(engine, staging, id_type)
    try:
        append_to(engine, staging, ids, labels)
        return publish_labels(engine, table_name, staging, id_type, rows, len(ids), keep_runs)[0]
    finally:
        drop_table_quietly(engine, staging)
