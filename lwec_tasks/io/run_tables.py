"""On PostgreSQL each run's rows are a table of their own: a partition of the rows table once published.

The rows table ``<output>_rows`` is ``PARTITION BY LIST (run)`` (:func:`~lwec_tasks.io.label_storage.rows_table`).
A run being written gets a plain table (:func:`run_rows_name`) shaped like it, made by :func:`create_run_rows`
with ``CHECK (run = <run>)``, ``run`` defaulting to the run and no index, so the bulk ingestion carries
(id, label) and maintains no index. Publishing builds the table's primary key once the rows are in
(:func:`index_run_rows`) and attaches it (:func:`attach_run_rows`); the CHECK, tested row by row as the rows
arrived, proves the partition bound, so nothing is scanned again. Deleting a run drops its table
(:func:`drop_run_rows`).

The key is ``id``: a run's table holds one run, so that is its share of (run, id), and an index of one
column is built in about half the time (10M rows: 1.4 s against 2.5 s). A rows table made by the release
before keys (run, id) itself (:func:`keyed_by_run`); PostgreSQL then wants each partition keyed the same.

Other databases keep one plain rows table: there these functions add a run's rows to it and delete them from it.
Names are quoted by the dialect's identifier preparer; run numbers are integers.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from lwec_tasks.io.bulk_read import unescape_percents
from lwec_tasks.io.catalog import pg_relkind
from lwec_tasks.io.identifiers import run_table_name
from lwec_tasks.io.label_storage import StorageNames, rows_clause, runs_clause, storage_names
from lwec_tasks.io.names import TableName

#: The storage options of a run's table while it is written: autovacuum skips it. Autovacuum would analyse the
#: freshly filled table (millions of new rows) whenever its round came, holding a lock that attaching the table
#: waits for; a publish gives a lock wait up after a second (lwec_tasks.io.locks), so a run failed when the
#: analysis began just before it. Attaching resets them.
UNVACUUMED_OPTIONS = ("autovacuum_enabled", "toast.autovacuum_enabled")
UNVACUUMED = ", ".join(f"{option} = false" for option in UNVACUUMED_OPTIONS)


def partitioned(dialect: sa.Dialect) -> bool:
    """Whether ``dialect``'s rows table is partitioned by run, each run a table of its own (PostgreSQL)."""
    return dialect.name == "postgresql"


def run_rows_name(output_table: TableName | StorageNames, run: int | str) -> TableName:
    """The name of run ``run``'s own table: ``<output>_rows$<run>``, in the output table's schema
    (:func:`~lwec_tasks.io.identifiers.run_table_name`)."""
    return run_table_name(storage_names(output_table).rows, run)


def create_run_rows(connection: sa.Connection, output_table: StorageNames, run: int) -> TableName:
    """Make the table run ``run``'s rows are written to, in the caller's transaction; its name.

    PostgreSQL: a new table with the rows table's columns (types, ``NOT NULL``) and ``CHECK (run = <run>)``,
    without index (:func:`run_rows_name`); ``run`` defaults to the run, so the rows are ingested as (id, label).
    Autovacuum leaves it alone until it is attached (:data:`UNVACUUMED`). Elsewhere: the rows table itself.
    """
    rows = output_table.rows
    if not partitioned(connection.dialect):
        return rows
    name, run = run_rows_name(output_table, run), f"CAST({int(run)} AS BIGINT)"
    execute_ddl(connection, f"CREATE TABLE {quoted(connection, name)} (LIKE {quoted(connection, rows)}, "
                            f"CHECK (run = {run})) WITH ({UNVACUUMED})")
    execute_ddl(connection, f"ALTER TABLE {quoted(connection, name)} ALTER COLUMN run SET DEFAULT {run}")
    return name


def index_run_rows(connection: sa.Connection, output_table: StorageNames, run: int) -> None:
    """PostgreSQL: build the primary key of run ``run``'s table, all its rows being in (a duplicate id fails
    here): ``id``, or (run, id) when the rows table is keyed so (:func:`keyed_by_run`). Elsewhere nothing: the
    rows table's key was kept as the rows arrived."""
    if partitioned(connection.dialect):
        key = "run, id" if keyed_by_run(connection, output_table) else "id"
        execute_ddl(connection, f"ALTER TABLE {quoted(connection, run_rows_name(output_table, run))} "
                                f"ADD PRIMARY KEY ({key})")


def keyed_by_run(connection: sa.Connection, output_table: StorageNames) -> bool:
    """PostgreSQL: whether ``output_table``'s rows table has a primary key of its own, (run, id), as the release
    before made it; its partitions must then be keyed by (run, id) too."""
    constraints = sa.table("pg_constraint", sa.column("conrelid"), sa.column("contype"), schema="pg_catalog")
    relation = sa.func.to_regclass(quoted(connection, output_table.rows))  # a bound value
    return connection.execute(sa.select(sa.exists().where(
        constraints.c.conrelid == relation, constraints.c.contype == "p"))).scalar_one()


def attach_run_rows(connection: sa.Connection, output_table: StorageNames, run: int) -> None:
    """PostgreSQL: attach run ``run``'s table, keyed (:func:`index_run_rows`), to the rows table as the partition
    of ``run``, in the caller's transaction, and give it back to autovacuum. It scans nothing: the table's CHECK
    proves the bound. Elsewhere nothing."""
    if partitioned(connection.dialect):
        name = quoted(connection, run_rows_name(output_table, run))
        execute_ddl(connection, f"ALTER TABLE {quoted(connection, output_table.rows)} ATTACH "
                                f"PARTITION {name} FOR VALUES IN ({int(run)})")
        execute_ddl(connection, f"ALTER TABLE {name} RESET ({', '.join(UNVACUUMED_OPTIONS)})")


def partition_every_run(connection: sa.Connection, output_table: StorageNames) -> None:
    """PostgreSQL: give every run of the runs table an empty, keyed partition of the rows table
    (:func:`create_run_rows`, :func:`index_run_rows`, :func:`attach_run_rows`), so that their rows can be
    inserted through the rows table. Elsewhere nothing."""
    if partitioned(connection.dialect):
        runs = runs_clause(output_table)
        for run in connection.execute(sa.select(runs.c.run).order_by(runs.c.run)).scalars().all():
            create_run_rows(connection, output_table, run)
            index_run_rows(connection, output_table, run)
            attach_run_rows(connection, output_table, run)


def drop_run_rows(connection: sa.Connection, output_table: StorageNames, runs: Iterable[int]) -> None:
    """Delete the rows of the runs numbered ``runs``, in the caller's transaction: on PostgreSQL their tables are
    dropped (attached or not; one that does not exist is passed over), elsewhere their rows are deleted."""
    runs = [int(run) for run in runs]
    if not runs:
        return
    if not partitioned(connection.dialect) or unpartitioned(connection, output_table):
        rows = rows_clause(output_table)
        connection.execute(sa.delete(rows).where(rows.c.run.in_(runs)))
        return
    names = ", ".join(quoted(connection, run_rows_name(output_table, run)) for run in runs)
    execute_ddl(connection, f"DROP TABLE IF EXISTS {names}")


def unpartitioned(connection: sa.Connection, output_table: StorageNames) -> bool:
    """Whether ``output_table``'s rows table is one plain table where it should be partitioned by run (PostgreSQL
    storage of an earlier release, converted by :func:`lwec_tasks.io.storage_setup.partition_rows_table`)."""
    return partitioned(connection.dialect) and pg_relkind(connection, output_table.rows) == "r"


def quoted(connection: sa.Connection, name: TableName) -> str:
    """``name`` (and its schema) quoted by the dialect, for :func:`execute_ddl`."""
    return connection.dialect.identifier_preparer.format_table(sa.table(name.name, schema=name.schema))


def execute_ddl(connection: sa.Connection, sql: str) -> None:
    """Run ``sql`` (names quoted by :func:`quoted`) in the caller's transaction, without parameters."""
    connection.exec_driver_sql(unescape_percents(sql, connection.dialect), execution_options={"no_parameters": True})
