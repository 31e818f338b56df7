"""How labels are stored: a runs table, a rows table, and the view ``<output_table>`` over the two.

For an output table ``labels`` (or ``schema.labels``) three relations live in its schema:

* ``labels_runs`` — one row per run: ``run`` (integer key), ``run_key``, ``source_table``, ``method``,
  ``k``, ``theta``, ``ensemble_size``, ``seed``, ``flow_run_id``, ``mlflow_run_id``, ``written_at``,
  ``row_count``, ``published`` (False while the run's rows are being written; such runs are invisible) and
  ``held`` (:data:`HELD_COLUMN`: True for a run its quality gate has not promoted, which the view shows and
  ``labels_latest`` does not; NULL or False otherwise);
* ``labels_rows`` — ``(run, id, label, confidence)``, unique by ``(run, id)``: its primary key, or on
  PostgreSQL, where it is partitioned by ``run``, each run a table of its own keyed by ``id``
  (:mod:`lwec_tasks.io.run_tables`);
  ``id`` keeps the source id's SQL type;
* ``labels`` — a view with the columns of :data:`~lwec_tasks.io.catalog.LABEL_TABLE_COLUMNS`, in that
  order, over the published runs: the one wide table of earlier releases, as queries see it; then
  ``confidence`` (:data:`CONFIDENCE_COLUMN`), each row's confidence in its label (NULL for runs written before
  the column was added, or without one).

``labels_latest`` (:mod:`lwec_tasks.io.history`) shows each source table's latest run that is not held the same
way.
SQLAlchemy only, so the preflight checks can use it; names are table objects quoted by the dialect.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from lwec_tasks.io.duckdb_dialect import DOUBLE, is_duckdb, runs_sequence
from lwec_tasks.io.identifiers import (  # RUNS_SUFFIX, ROWS_SUFFIX: the two tables beside the output table
    ROWS_SUFFIX,
    RUN_MARK,
    RUNS_SUFFIX,
    latest_view_name,
    run_key_index_name,
    run_table_name,
    suffixed_name,
)
from lwec_tasks.io.names import TableName

#: Columns of the runs table describing a run (besides ``run`` and ``published``), in order.
RUN_COLUMNS = ("run_key", "source_table", "method", "k", "theta", "ensemble_size", "seed", "flow_run_id",
               "mlflow_run_id", "written_at", "row_count")

#: The view's columns, in order: those of the wide labels table of earlier releases.
VIEW_COLUMNS = ("run_key", "id", "label", "k", "method", "theta", "ensemble_size", "seed",
                "source_table", "flow_run_id", "written_at")

#: The rows table's nullable column of row confidences (REAL in [0, 1]); storage of earlier releases gains it
#: at its next write (:func:`lwec_tasks.io.storage_setup.add_confidence_column`).
CONFIDENCE_COLUMN = "confidence"

#: The runs table's nullable BOOLEAN marking a run held by its quality gate (:mod:`lwec_tasks.gate`): shown in
#: the view, left out of ``<view>_latest``. Storage of earlier releases gains it at its next write
#: (:func:`lwec_tasks.io.storage_setup.add_held_column`).
HELD_COLUMN = "held"


@dataclass(frozen=True, repr=False)
class StorageNames:
    """Every relation of one labels storage, resolved once from the output table's name (:func:`storage_names`)
    and passed down: ``view`` (the name the user gives), ``runs`` and ``rows`` (its tables), :attr:`latest` (the
    latest-run view), and per run :meth:`run_rows` (PostgreSQL: the run's own table) and :meth:`staging` (the
    table ids needing a cast pass through). All in the view's schema."""

    view: TableName
    runs: TableName
    rows: TableName

    def __str__(self) -> str:
        return str(self.view)

    def __repr__(self) -> str:  # messages quote a storage by the name the user gave
        return repr(str(self.view))

    @property
    def latest(self) -> TableName:
        """``<view>_latest``; :class:`LwecInputError` naming ``output_table`` when it would pass 63 bytes."""
        return latest_view_name(self.view)

    def run_rows(self, run: int | str) -> TableName:
        """Run ``run``'s own table: ``<rows>$<run>`` (:func:`~lwec_tasks.io.identifiers.run_table_name`)."""
        return run_table_name(self.rows, run)

    def staging(self, run: int) -> TableName:
        """Run ``run``'s staging table: ``<rows>$stage$<run>`` (hashed like :meth:`run_rows` when too long)."""
        return run_table_name(self.rows.suffixed(f"{RUN_MARK}stage"), run)

    def run_of(self, table: str) -> int | None:
        """The run whose own or staging table is named ``table`` (a name in this schema), or None."""
        digits = table[len(table.rstrip("0123456789")):]
        if not digits or RUN_MARK not in table:
            return None
        run = int(digits)
        return run if table in (self.run_rows(run).name, self.staging(run).name) else None


def storage_names(output_table: TableName | StorageNames) -> StorageNames:
    """The names of ``output_table``'s view and tables (same schema), each checked to fit PostgreSQL's 63-byte
    identifiers (longer names would be cut there silently): :class:`LwecInputError` naming the name if not. A
    :class:`StorageNames` is returned as it is."""
    if isinstance(output_table, StorageNames):
        return output_table
    view = output_table
    return StorageNames(view, *(suffixed_name(view, suffix, "table", "output_table", str(view), "an output table")
                                for suffix in (RUNS_SUFFIX, ROWS_SUFFIX)))


def view_of(output_table: TableName | StorageNames) -> TableName:
    """The name of ``output_table``'s view: the name the user gives."""
    return output_table.view if isinstance(output_table, StorageNames) else output_table


def runs_table(output_table: TableName | StorageNames, dialect: sa.Dialect | None = None) -> sa.Table:
    """The runs table of ``output_table`` (``run`` is assigned by the database and never reused). ``dialect``
    (default None) is the database's, wherever the table is created or a run added: on DuckDB, which has no
    ``SERIAL``, ``run`` is numbered by a sequence of its own (:func:`~lwec_tasks.io.duckdb_dialect.runs_sequence`)."""
    name = storage_names(output_table).runs
    numbering = (runs_sequence(name.name, name.schema),) if is_duckdb(dialect) else ()
    return sa.Table(
        name.name,
        sa.MetaData(),
        sa.Column("run", sa.Integer, *numbering, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(64), nullable=False),
        sa.Column("source_table", sa.String(255), nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("k", sa.Integer, nullable=False),
        sa.Column("theta", DOUBLE, nullable=False),  # FLOAT is single precision on DuckDB
        sa.Column("ensemble_size", sa.Integer, nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=True),
        sa.Column("flow_run_id", sa.String(64), nullable=True),
        sa.Column("mlflow_run_id", sa.String(64), nullable=True),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("row_count", sa.BigInteger, nullable=False),
        sa.Column("published", sa.Boolean, nullable=False),
        sa.Column(HELD_COLUMN, sa.Boolean, nullable=True),
        sa.Index(run_key_index_name(name).name, "run_key"),  # fits 63 bytes whatever the output table's length
        schema=name.schema,
        sqlite_autoincrement=True,
    )


def rows_table(output_table: TableName | StorageNames, id_type: sa.types.TypeEngine,
               keyed: bool = True, by_run: bool = False) -> sa.Table:
    """The rows table of ``output_table``: ``(run, id, label)``, all ``NOT NULL``, and the nullable
    ``confidence`` (:data:`CONFIDENCE_COLUMN`); keyed by ``(run, id)`` when ``keyed``; ``id_type`` mirrors the
    source's id column. ``by_run`` (PostgreSQL only): ``PARTITION BY LIST (run)``, each run's table keyed on
    ``id`` (:mod:`lwec_tasks.io.run_tables`); an earlier release's rows table was partitioned and keyed."""
    name = storage_names(output_table).rows
    return sa.Table(
        name.name,
        sa.MetaData(),
        sa.Column("run", sa.BigInteger, primary_key=keyed, nullable=False, autoincrement=False),
        sa.Column("id", id_type, primary_key=keyed, nullable=False, autoincrement=False),
        sa.Column("label", sa.Integer, nullable=False),
        sa.Column(CONFIDENCE_COLUMN, sa.REAL, nullable=True),
        schema=name.schema,
        # Only when asked: duckdb-engine compiles DDL as PostgreSQL does, options included.
        **({"postgresql_partition_by": "LIST (run)"} if by_run else {}),
    )


def runs_clause(output_table: TableName | StorageNames, held: bool = False) -> sa.TableClause:
    """A lightweight clause of the runs table, for statements that need no types or DDL; with ``held`` it has
    the :data:`HELD_COLUMN` too (storage of earlier releases may lack it: :func:`has_held`)."""
    name = storage_names(output_table).runs
    return sa.table(name.name, sa.column("run"), sa.column("published"),
                    *(sa.column(column) for column in RUN_COLUMNS), *((sa.column(HELD_COLUMN),) if held else ()),
                    schema=name.schema)


def rows_clause(output_table: TableName | StorageNames, table: TableName | None = None) -> sa.TableClause:
    """A lightweight clause of the rows table, or of ``table`` with its columns: a run's own table
    (:func:`lwec_tasks.io.run_tables.run_rows_name`)."""
    name = storage_names(output_table).rows if table is None else table
    return sa.table(name.name, sa.column("run"), sa.column("id"), sa.column("label"), sa.column(CONFIDENCE_COLUMN),
                    schema=name.schema)


def promoted_runs(runs) -> sa.ColumnElement:
    """The condition selecting runs not held by their quality gate (``held`` NULL or false), on a clause with
    the :data:`HELD_COLUMN` (no bound parameter, so it may stand in a view)."""
    return sa.func.coalesce(runs.c[HELD_COLUMN], sa.false()) == sa.false()


def published_runs(runs) -> sa.ColumnElement:
    """The condition selecting published runs (no bound parameter, so it may stand in a view)."""
    return runs.c.published == sa.true()


def labels_query(runs: sa.TableClause, rows: sa.TableClause, *conditions: sa.ColumnElement,
                 confidence: bool = False) -> sa.Select:
    """The rows of the published runs with the columns of :data:`VIEW_COLUMNS`, in order (the view's query), and
    with ``confidence`` (the rows table has that column) :data:`CONFIDENCE_COLUMN` last.

    ``runs`` and ``rows`` are the clauses of :func:`runs_clause` and :func:`rows_clause` (or aliases of them);
    ``conditions`` on them narrow the result down further.
    """
    columns = [rows.c[name] if name in ("id", "label") else runs.c[name] for name in VIEW_COLUMNS]
    if confidence:
        columns.append(rows.c[CONFIDENCE_COLUMN])
    return (sa.select(*columns).select_from(rows.join(runs, rows.c.run == runs.c.run))
            .where(published_runs(runs), *conditions))


def has_confidence(connection: sa.Connection, output_table: TableName | StorageNames) -> bool:
    """Whether ``output_table``'s rows table has the :data:`CONFIDENCE_COLUMN` (storage of earlier releases
    has not, until its next write adds it)."""
    rows = storage_names(output_table).rows
    return any(column["name"] == CONFIDENCE_COLUMN
               for column in sa.inspect(connection).get_columns(rows.name, schema=rows.schema))


def has_held(connection: sa.Connection, output_table: TableName | StorageNames) -> bool:
    """Whether ``output_table``'s runs table has the :data:`HELD_COLUMN` (storage of earlier releases has not,
    until its next write adds it)."""
    runs = storage_names(output_table).runs
    return any(column["name"] == HELD_COLUMN
               for column in sa.inspect(connection).get_columns(runs.name, schema=runs.schema))
