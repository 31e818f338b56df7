"""The wide labels table of earlier releases, its write and its latest-run view, to make tables of that shape.

Labels were once kept in one wide table per output table (``run_key``, ``id``, ``label`` and the run's
parameters in every row); the next write converts such a table
(:func:`lwec_tasks.io.storage_setup.migrate_wide_table`). The tests of the conversion and the benchmark
comparing the two writers make them with these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa

from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.history import labels_table_clause, prune_runs
from lwec_tasks.io.names import TableName, parse_table_name

T = TypeVar("T")


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


def latest_wide_query(name: str) -> sa.Select:
    """The query of the view ``<name>_latest`` earlier releases made over the wide labels table ``name``: the rows of
    each source table's run with the latest ``written_at`` (among runs written at that instant, the largest
    ``run_key``)."""
    table = labels_table_clause(parse_table_name(name))
    runs = table.alias("runs")
    newest = (sa.select(table.c.source_table, sa.func.max(table.c.written_at).label("written_at"))
              .group_by(table.c.source_table).subquery("newest"))
    latest = (sa.select(runs.c.source_table, sa.func.max(runs.c.run_key).label("run_key"))
              .join_from(runs, newest, sa.and_(runs.c.source_table == newest.c.source_table,
                                               runs.c.written_at == newest.c.written_at))
              .group_by(runs.c.source_table).subquery("latest"))
    return sa.select(*table.c).join_from(table, latest, sa.and_(table.c.source_table == latest.c.source_table,
                                                                table.c.run_key == latest.c.run_key))


def replace_run_key(engine: sa.Engine, table: sa.Table, run_key: str, source_table: str, keep_runs: int | None,
                    insert: Callable[[sa.Connection], T]) -> tuple[T, list[str]]:
    """The write of earlier releases, on a wide labels ``table`` (:func:`label_table_schema`).

    In one transaction: create the labels ``table`` if missing, delete the rows of ``run_key``, call
    ``insert(connection)`` to add the new ones, and delete the runs of ``source_table`` beyond the
    ``keep_runs`` most recent, this one included (None keeps every run; :func:`lwec_tasks.io.history.prune_runs`).

    Returns (what ``insert`` returned, the run keys deleted, most recent first). On any failure
    nothing changes; a table created here is dropped again if still empty (SQLite and MySQL commit
    DDL at once).
    """
    name = str(TableName(table.name, table.schema))
    created = False
    with database_errors(engine, f"write labels to table {name!r}"):
        try:
            with engine.begin() as connection:
                created = not sa.inspect(connection).has_table(table.name, schema=table.schema)
                if created:
                    table.create(connection)
                connection.execute(sa.delete(table).where(table.c.run_key == run_key))
                inserted = insert(connection)
                pruned = [] if keep_runs is None else prune_runs(connection, parse_table_name(name), source_table,
                                                                 keep_runs,
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
