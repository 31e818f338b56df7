"""DuckDB files (``duckdb:///path.duckdb``) through duckdb-engine, and what lwec does differently there.

duckdb-engine's dialect is PostgreSQL's, reflecting through DuckDB's imitation of the PostgreSQL catalog. Newer
SQLAlchemy releases ask that catalog for what DuckDB does not have (``pg_collation``'s columns since 2.0.45, the
``regclass`` type for keys), so reflecting any table fails with SQLAlchemy 2.1. :class:`DuckDBDialect` is
duckdb-engine's dialect reflecting through DuckDB's own catalog functions instead (``duckdb_columns()``,
``duckdb_constraints()``, ...; 30 times faster too); :func:`register` makes it the dialect of ``duckdb://`` URLs
(``lwec_tasks.io`` calls it on import; nothing of duckdb is imported until such a URL is opened).

What else differs (each handled where it happens, with SQLAlchemy constructs):

* no ``SERIAL``: a runs table's ``run`` numbers come from a sequence of their own (:func:`runs_sequence`);
* ``FLOAT`` is single precision in DuckDB (double in PostgreSQL): lwec's float columns are made ``DOUBLE``
  there (:data:`DOUBLE`);
* one process at a time may open a DuckDB file for writing: runs on Dask workers (other processes) are
  refused before they start (:func:`refuse_other_processes`);
* features are read as Arrow straight from DuckDB's own connection
  (:func:`lwec_tasks.io.bulk_read.read_fast`), and labels appended from Arrow by one ``INSERT … SELECT``
  (:func:`lwec_tasks.io.staging.append_to`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError

#: ``dialect.name`` of duckdb-engine's engines.
NAME = "duckdb"

#: A float column lwec creates: ``FLOAT`` (double precision) on PostgreSQL and SQLite, ``DOUBLE`` on DuckDB, whose
#: ``FLOAT`` is single precision.
DOUBLE = sa.Float().with_variant(sa.Double(), NAME)

#: Prefix of the sequence numbering the runs of a runs table (``lwec_run_seq_<hash of the runs table's name>``).
RUN_SEQUENCE_PREFIX = "lwec_run_seq_"


def is_duckdb(dialect_or_connection) -> bool:
    """Whether ``dialect_or_connection`` (a dialect, engine or connection) is DuckDB's."""
    dialect = getattr(dialect_or_connection, "dialect", dialect_or_connection)
    return getattr(dialect, "name", None) == NAME


def runs_sequence(runs_name: str, schema: str | None) -> sa.Sequence:
    """The sequence that numbers the runs of the runs table ``runs_name`` on DuckDB (which has no ``SERIAL``):
    ``lwec_run_seq_`` and 16 hex digits of the name's MD5, in its schema; numbers are never reused, as with
    ``SERIAL`` and SQLite's ``AUTOINCREMENT``.

    Named by a hash, not after the table: the name then needs no quoting inside ``nextval('…')``, which older
    DuckDB releases read wrongly for names with quotes, and it fits 63 bytes for any table name.
    """
    digest = hashlib.md5(runs_name.encode("utf-8")).hexdigest()[:16]
    return sa.Sequence(f"{RUN_SEQUENCE_PREFIX}{digest}", schema=schema)


@contextlib.contextmanager
def duckdb_client(engine: sa.Engine, sql: str) -> Iterator:
    """DuckDB's own client on a duplicate of a pooled connection of ``engine`` (its own cursor, the same
    database), closed after the block; None when the driver's connection cannot be duplicated. DuckDB's errors
    in the block are raised as SQLAlchemy raises them, with ``sql`` as their statement, so that
    :mod:`lwec_tasks.io.errors` reports them as it does the other databases'."""
    driver_error = engine.dialect.loaded_dbapi.Error
    with engine.connect() as connection:
        pooled = connection.connection.driver_connection
        if not hasattr(pooled, "duplicate"):
            yield None
            return
        client = pooled.duplicate()
        try:
            yield client
        except driver_error as error:
            raise sa.exc.DBAPIError.instance(sql, None, error, driver_error) from error
        finally:
            client.close()


def refuse_other_processes(database_url: str, dask_address: str | None) -> None:
    """:class:`LwecInputError` when a run on ``database_url`` would write to a DuckDB file from Dask workers: DuckDB
    lets one process at a time open a file for writing, and the flow's process holds it."""
    if not dask_address:
        return
    try:
        backend = sa.make_url(database_url).get_backend_name()
    except sa.exc.ArgumentError:
        return  # reported by the checks of the URL
    if backend == NAME:
        raise LwecInputError(
            "dask_address: a DuckDB file cannot be written from Dask workers (DuckDB lets one process at a time "
            "open a file for writing, and the flow's process holds it); run without dask_address, or copy the "
            "table into PostgreSQL"
        )


def register() -> None:
    """Make :class:`DuckDBDialect` the dialect of ``duckdb://`` URLs in this process (cheap: imports nothing)."""
    sa.dialects.registry.register(NAME, __name__, "DuckDBDialect")


def __getattr__(name: str):
    # The dialect class is made on first use, so that importing this module does not import duckdb-engine.
    if name == "DuckDBDialect":
        dialect = _dialect_class()
        globals()[name] = dialect
        return dialect
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: DuckDB's type names (``duckdb_columns().data_type`` without its parameters) → SQLAlchemy types; other names are
#: looked up among the dialect's PostgreSQL and DuckDB type names, else reflected untyped.
_TYPES = {
    "BOOLEAN": sa.Boolean, "TINYINT": sa.SmallInteger, "SMALLINT": sa.SmallInteger, "INTEGER": sa.Integer,
    "BIGINT": sa.BigInteger, "FLOAT": sa.REAL, "DOUBLE": sa.Double, "VARCHAR": sa.String, "BLOB": sa.LargeBinary,
    "UUID": sa.Uuid, "DATE": sa.Date, "TIME": sa.Time, "TIMESTAMP": sa.DateTime, "INTERVAL": sa.Interval,
    "TIMESTAMP WITH TIME ZONE": lambda: sa.DateTime(timezone=True), "JSON": sa.JSON,
}


def _dialect_class():
    from duckdb_engine import Dialect
    from sqlalchemy.engine.reflection import ObjectKind, ObjectScope, ReflectionDefaults

    class DuckDBDialect(Dialect):
        """duckdb-engine's dialect, reflecting through DuckDB's own catalog instead of its imitation of PostgreSQL's
        (which lacks parts newer SQLAlchemy releases ask for, and is 30 times slower).

        Columns: ``duckdb_columns()``, types by :data:`_TYPES` (``DECIMAL(p,s)``: ``NUMERIC(p, s)``). Tables, views and
        schemas (of the current database; ``db.schema`` names an attached one's): ``duckdb_tables()``,
        ``duckdb_views()``, ``duckdb_schemas()``. Primary keys and unique constraints: ``duckdb_constraints()``.
        Foreign keys, check constraints, indexes, options and comments: reported as none (lwec reads none of them,
        and PostgreSQL's queries for them fail on DuckDB).
        """

        supports_statement_cache = False

        def get_multi_columns(self, connection, schema=None, filter_names=None, scope=None, kind=None, **kw):
            database, schema_name = _database_and_schema(connection, schema)
            relations = self._relations(connection, schema, filter_names, scope, kind)
            if not relations:
                return []
            columns = sa.func.duckdb_columns().table_valued(
                "database_name", "schema_name", "table_name", "column_name", "column_index", "data_type",
                "is_nullable", "column_default", "numeric_precision", "numeric_scale")
            found: dict[str, list] = {name: [] for name in relations}
            for row in connection.execute(sa.select(columns).where(
                    columns.c.database_name == database, columns.c.schema_name == schema_name,
                    columns.c.table_name.in_(relations)).order_by(columns.c.table_name, columns.c.column_index)):
                found[row.table_name].append({
                    "name": row.column_name, "type": self._column_type(row), "nullable": bool(row.is_nullable),
                    "default": row.column_default, "autoincrement": False, "comment": None})
            return [((schema, table), found[table]) for table in relations]

        def _column_type(self, row) -> sa.types.TypeEngine:
            name = row.data_type.split("(")[0].strip().upper()
            if name == "DECIMAL":
                return sa.Numeric(row.numeric_precision, row.numeric_scale)
            if name in _TYPES:
                return _TYPES[name]()
            known = self.ischema_names.get(name.lower())
            return known() if known is not None else sa.types.NullType()

        def _relations(self, connection, schema, filter_names, scope, kind) -> list[str]:
            """The names of the tables and views (as ``kind`` asks) of ``schema`` (None: the current one)."""
            database, schema_name = _database_and_schema(connection, schema)
            names = []
            for function, wanted in ((sa.func.duckdb_tables, ObjectKind.TABLE),
                                     (sa.func.duckdb_views, ObjectKind.VIEW)):
                if kind is not None and not (kind & wanted):
                    continue
                relations = function().table_valued("database_name", "schema_name", "temporary",
                                                    *(("view_name", "internal") if wanted == ObjectKind.VIEW
                                                      else ("table_name",)))
                name = relations.c.view_name if wanted == ObjectKind.VIEW else relations.c.table_name
                conditions = [relations.c.schema_name == schema_name]
                if database is not None:
                    conditions.append(relations.c.database_name == database)
                if wanted == ObjectKind.VIEW:
                    conditions.append(relations.c.internal == sa.false())
                if scope == ObjectScope.DEFAULT:
                    conditions.append(relations.c.temporary == sa.false())
                elif scope == ObjectScope.TEMPORARY:
                    conditions.append(relations.c.temporary == sa.true())
                if filter_names:
                    conditions.append(name.in_(list(filter_names)))
                names += connection.execute(sa.select(name).where(*conditions)).scalars().all()
            return names

        def get_table_names(self, connection, schema=None, **kw):
            return self._relations(connection, schema, None, ObjectScope.DEFAULT, ObjectKind.TABLE)

        def get_view_names(self, connection, schema=None, **kw):
            return self._relations(connection, schema, None, ObjectScope.DEFAULT, ObjectKind.VIEW)

        def has_table(self, connection, table_name, schema=None, **kw):
            return bool(self._relations(connection, schema, [table_name], ObjectScope.ANY, ObjectKind.ANY))

        def has_sequence(self, connection, sequence_name, schema=None, **kw):
            database, schema_name = _database_and_schema(connection, schema)
            sequences = sa.func.duckdb_sequences().table_valued("database_name", "schema_name", "sequence_name")
            return connection.execute(sa.select(sa.exists().where(
                sequences.c.database_name == database, sequences.c.schema_name == schema_name,
                sequences.c.sequence_name == sequence_name))).scalar_one()

        def get_schema_names(self, connection, **kw):
            schemas = sa.func.duckdb_schemas().table_valued("database_name", "schema_name")
            return connection.execute(sa.select(schemas.c.schema_name).where(
                schemas.c.database_name == sa.func.current_database()).order_by(schemas.c.schema_name)).scalars().all()

        def _constraints(self, connection, schema, kind: str) -> dict[str, list]:
            """Table name → [(constraint name, column names)] of the constraints of type ``kind`` in ``schema``."""
            database, schema_name = _database_and_schema(connection, schema)
            constraints = sa.func.duckdb_constraints().table_valued(
                "database_name", "schema_name", "table_name", "constraint_type", "constraint_name",
                "constraint_column_names")
            conditions = [constraints.c.schema_name == schema_name, constraints.c.constraint_type == kind]
            if database is not None:
                conditions.append(constraints.c.database_name == database)
            found: dict[str, list] = {}
            for table, name, columns in connection.execute(sa.select(
                    constraints.c.table_name, constraints.c.constraint_name, constraints.c.constraint_column_names)
                    .where(*conditions)):
                found.setdefault(table, []).append((name, list(columns)))
            return found

        def get_multi_pk_constraint(self, connection, schema=None, filter_names=None, scope=None, kind=None, **kw):
            keys = self._constraints(connection, schema, "PRIMARY KEY")
            for table in self._relations(connection, schema, filter_names, scope, kind):
                if table in keys:
                    name, columns = keys[table][0]
                    yield (schema, table), {"constrained_columns": columns, "name": name}
                else:
                    yield (schema, table), ReflectionDefaults.pk_constraint()

        def get_multi_unique_constraints(self, connection, schema=None, filter_names=None, scope=None, kind=None,
                                         **kw):
            uniques = self._constraints(connection, schema, "UNIQUE")
            for table in self._relations(connection, schema, filter_names, scope, kind):
                yield (schema, table), [{"name": name, "column_names": columns}
                                        for name, columns in uniques.get(table, [])]

        def _none(default):
            def reflect(self, connection, schema=None, filter_names=None, scope=None, kind=None, **kw):
                return [((schema, table), default())
                        for table in self._relations(connection, schema, filter_names, scope, kind)]
            return reflect

        get_multi_foreign_keys = _none(ReflectionDefaults.foreign_keys)
        get_multi_check_constraints = _none(ReflectionDefaults.check_constraints)
        get_multi_indexes = _none(ReflectionDefaults.indexes)
        get_multi_table_options = _none(ReflectionDefaults.table_options)
        get_multi_table_comment = _none(ReflectionDefaults.table_comment)

    return DuckDBDialect


def _database_and_schema(connection, schema: str | None) -> tuple[str | None, str]:
    """(database, schema) of a reflected ``schema``: ``db.schema`` names an attached database's schema; a plain
    schema is one of the current database (None: its current schema)."""
    if schema is None:
        database, current = connection.execute(sa.select(sa.func.current_database(), sa.func.current_schema())).one()
        return database, current
    if "." in schema:
        database, _, schema = schema.partition(".")
        return database.strip('"'), schema.strip('"')
    return connection.execute(sa.select(sa.func.current_database())).scalar_one(), schema
