"""The labels storage of the release before runs had tables of their own: a plain rows table keyed by (run, id).

The next write on PostgreSQL partitions such a rows table by run
(:func:`lwec_tasks.io.storage_setup.partition_rows_table`); the tests of that conversion make storage of the
old shape with :func:`write_unpartitioned`, with that release's DDL.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from lwec_tasks.io.history import create_latest_view
from lwec_tasks.io.label_storage import runs_table, storage_names
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.run_metadata import LabelRows
from lwec_tasks.io.storage_setup import create_labels_view


def unpartitioned_rows_table(output_table: str, id_type: sa.types.TypeEngine) -> sa.Table:
    """The rows table as that release made it: ``(run, id, label)``, primary key ``(run, id)``, not partitioned."""
    name = storage_names(parse_table_name(output_table)).rows
    return sa.Table(
        name.name, sa.MetaData(),
        sa.Column("run", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("id", id_type, primary_key=True, autoincrement=False),
        sa.Column("label", sa.Integer, nullable=False),
        schema=name.schema,
    )


def write_unpartitioned(engine: sa.Engine, output_table: str, runs: list[tuple[LabelRows, dt.datetime, bool]],
                        id_type: sa.types.TypeEngine | None = None) -> None:
    """Create ``output_table``'s storage in the old shape (runs table, plain rows table, both views) holding
    ``runs``: (rows, written_at, published) triples, in that order (an unpublished one is a write that never
    finished). ``id_type`` (default bigint): the rows table's ``id`` type."""
    rows_table = unpartitioned_rows_table(output_table, id_type if id_type is not None else sa.BigInteger())
    with engine.begin() as connection:
        runs_table(parse_table_name(output_table)).create(connection)
        rows_table.create(connection)
        create_labels_view(connection, storage_names(parse_table_name(output_table)))
        for rows, written_at, published in runs:
            values = {**rows.column_values(), "written_at": written_at, "mlflow_run_id": None,
                      "row_count": len(rows.ids), "published": published}
            runs = runs_table(parse_table_name(output_table))
            number = connection.execute(sa.insert(runs).values(**values)).inserted_primary_key[0]
            if len(rows.ids):
                connection.execute(sa.insert(rows_table), [{"run": number, "id": i, "label": int(label)}
                                                           for i, label in zip(rows.ids.tolist(), rows.labels)])
        create_latest_view(connection, storage_names(parse_table_name(output_table)))
