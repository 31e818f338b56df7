"""What a database holds: the source table reflected, what a name refers to, whether a labels table fits.

Light on purpose (SQLAlchemy only, no pandas or numpy), so that the preflight
checks (:mod:`lwec_tasks.preflight`) can run before anything heavy is loaded.
Names are :class:`~lwec_tasks.io.names.TableName` parts given to SQLAlchemy
table objects, so the dialect quotes them; values are bound parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.columns import require_columns
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.identifiers import LATEST_VIEW_SUFFIX, check_new_table_name, is_run_table_name, name_list
from lwec_tasks.io.label_storage import (
    ROWS_SUFFIX,
    RUN_COLUMNS,
    RUNS_SUFFIX,
    VIEW_COLUMNS,
    StorageNames,
    storage_names,
)
from lwec_tasks.io.names import TableName
from lwec_tasks.io.privileges import check_write_rights
from lwec_tasks.masking import mask_url

#: Columns of a labels table (the view ``<output_table>``, or the wide table of earlier releases), in order.
LABEL_TABLE_COLUMNS = VIEW_COLUMNS

#: PostgreSQL ``pg_class.relkind`` codes, as words.
_PG_RELATION_KINDS = {
    "r": "table", "p": "table", "v": "view", "m": "materialized view", "f": "foreign table",
    "S": "sequence", "i": "index", "I": "index", "c": "composite type", "t": "TOAST table",
}


def column_kind(sql_type: sa.types.TypeEngine) -> str:
    """A column's declared type as one word: integer, float, decimal, boolean, text, uuid, date/time, binary,
    untyped (SQLite columns declared without a type) or the type's own name."""
    checks = (
        (sa.Boolean, "boolean"), (sa.Uuid, "uuid"), (sa.Integer, "integer"), (sa.Float, "float"),
        (sa.Numeric, "decimal"), (sa.String, "text"), ((sa.DateTime, sa.Date, sa.Time, sa.Interval), "date/time"),
        (sa.LargeBinary, "binary"), (sa.types.NullType, "untyped"),
    )
    for kind_of, word in checks:
        if isinstance(sql_type, kind_of):
            return word
    return type(sql_type).__name__


#: Column kinds whose values the pipeline reads as numbers (booleans excluded).
NUMERIC_KINDS = frozenset({"integer", "float", "decimal"})


@dataclass(frozen=True)
class SourceTable:
    """A reflected table (or view) and what the pipeline needs to know about it.

    Attributes
    ----------
    table : the reflected :class:`sqlalchemy.Table` (``table.schema`` None: the default schema)
    columns : column names in table order
    numeric_columns : columns whose declared type is integer, float or decimal (booleans excluded)
    primary_key : names of the primary-key columns (may be empty)
    kinds : column name → :func:`column_kind` of its declared type
    """

    table: sa.Table
    columns: tuple[str, ...]
    numeric_columns: tuple[str, ...]
    primary_key: tuple[str, ...]
    kinds: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def name(self) -> str:
        """The table's name as the user spells it: ``table`` or ``schema.table``."""
        return str(TableName(self.table.name, self.table.schema))

    def check_columns(self, names: Sequence[str], parameter: str) -> None:
        """Raise :class:`LwecInputError` naming every entry of ``names`` not in the table."""
        require_columns(self.columns, names, parameter, self.name)


def describe_source(engine: sa.Engine, name: TableName) -> SourceTable:
    """Reflect the table (or view) ``name`` (see :mod:`lwec_tasks.io.names`).

    Raises
    ------
    LwecInputError
        The table does not exist; the message lists the tables (and views) of
        its schema, or the schemas when the schema does not exist.
    DatabaseUnreachableError, DatabaseRefusedError
        No connection could be made; the database refused to describe it.
    """
    with database_errors(engine, f"describe table {str(name)!r}"):
        if engine.dialect.name == "sqlite" and name.schema is not None:
            _check_schema(engine, sa.inspect(engine), name)
        try:
            reflected = sa.Table(name.name, sa.MetaData(), schema=name.schema, autoload_with=engine)
        except sa.exc.NoSuchTableError:
            raise LwecInputError(_not_found(engine, name)) from None
    kinds = {column.name: column_kind(column.type) for column in reflected.columns}
    return SourceTable(
        table=reflected,
        columns=tuple(kinds),
        numeric_columns=tuple(name for name, kind in kinds.items() if kind in NUMERIC_KINDS),
        primary_key=tuple(column.name for column in reflected.primary_key.columns),
        kinds=kinds,
    )


def _not_found(engine: sa.Engine, name: TableName) -> str:
    """Why ``name`` was not found: the tables of its schema, or that the schema does not exist."""
    inspector = sa.inspect(engine)
    _check_schema(engine, inspector, name)
    tables = inspector.get_table_names(schema=name.schema)
    views = inspector.get_view_names(schema=name.schema)
    # Runs' own tables (PostgreSQL) and the runs, rows and latest relations of labels tables are lwec's storage,
    # not tables to cluster.
    storage = storage_relations(tables, views)
    existing = sorted(table for table in tables if not is_run_table_name(table) and table not in storage)
    existing += sorted(view for view in views if view not in storage)
    listed = [str(TableName(table, name.schema)) for table in existing]
    message = (f"table {str(name)!r} not found in database {mask_url(engine.url)}; "
               f"existing tables: {name_list(listed) if listed else 'none'}")
    dotted = f"{name.schema}.{name.name}"
    if name.schema is not None and dotted in inspector.get_table_names() + inspector.get_view_names():
        message += f"; to name the table {dotted!r}, write it in double quotes: {str(TableName(dotted))}"
    return message


def storage_relations(tables: Sequence[str], views: Sequence[str]) -> set[str]:
    """The names among ``tables`` and ``views`` (of one schema) that are the storage of an lwec labels table ``L``:
    the tables ``L_runs`` and ``L_rows`` (both present) and the view ``L_latest`` beside them. A user's table
    that merely ends in ``_runs`` (without its ``_rows`` sibling) is not storage."""
    tables = set(tables)
    stems = {table[:-len(RUNS_SUFFIX)] for table in tables
             if table.endswith(RUNS_SUFFIX) and f"{table[:-len(RUNS_SUFFIX)]}{ROWS_SUFFIX}" in tables}
    latest = {view for view in views if view.endswith(LATEST_VIEW_SUFFIX)
              and view[:-len(LATEST_VIEW_SUFFIX)] in stems}
    return {f"{stem}{suffix}" for stem in stems for suffix in (RUNS_SUFFIX, ROWS_SUFFIX)} | latest


def _check_schema(engine: sa.Engine, inspector, name: TableName) -> None:
    """:class:`LwecInputError` when ``name`` names a schema the database does not have."""
    if name.schema is None:
        return
    schemas = inspector.get_schema_names()
    if name.schema in schemas:
        return
    where = ("a SQLite schema is an attached database" if engine.dialect.name == "sqlite"
             else "its schemas are")
    raise LwecInputError(
        f"table {str(name)!r} not found: database {mask_url(engine.url)} has no schema {name.schema!r} "
        f"({where}: {name_list(schemas)}); a table name that contains a dot is written in double quotes: "
        f"{str(TableName(f'{name.schema}.{name.name}'))}"
    )


# ----------------------------------------------------------------------------- what a name is


def relation_kind(connection: sa.Connection, name: TableName) -> str | None:
    """What ``name`` is in the database — "table", "view", "materialized view", "sequence", "index", ... —
    or None when nothing has that name."""
    dialect = connection.dialect.name
    if dialect == "postgresql":
        kind = pg_relkind(connection, name)
        return None if kind is None else _PG_RELATION_KINDS.get(kind, f"relation of kind {kind!r}")
    if dialect == "sqlite":
        master = sa.table("sqlite_master", sa.column("type"), sa.column("name"), schema=name.schema)
        # SQLite names are case-insensitive (ASCII).
        statement = sa.select(master.c.type).where(sa.func.lower(master.c.name) == name.name.lower()).limit(1)
        return connection.execute(statement).scalar()
    inspector = sa.inspect(connection)
    if name.name in inspector.get_view_names(schema=name.schema):
        return "view"
    return "table" if inspector.has_table(name.name, schema=name.schema) else None


def pg_relkind(connection: sa.Connection, name: TableName) -> str | None:
    """``name``'s ``pg_class.relkind`` on PostgreSQL ("r" a table, "p" a partitioned table, "v" a view, ...), or
    None when nothing has that name."""
    relations = sa.table("pg_class", sa.column("relname"), sa.column("relkind"), sa.column("relnamespace"),
                         schema="pg_catalog")
    namespaces = sa.table("pg_namespace", sa.column("oid"), sa.column("nspname"), schema="pg_catalog")
    schema = sa.func.current_schema() if name.schema is None else sa.literal(name.schema)
    statement = (
        sa.select(relations.c.relkind)
        .select_from(relations.join(namespaces, namespaces.c.oid == relations.c.relnamespace))
        .where(relations.c.relname == name.name, namespaces.c.nspname == schema)
    )
    return connection.execute(statement).scalar()


def same_table(connection: sa.Connection, first: TableName, second: TableName) -> bool:
    """Whether two names refer to one table (no schema: the default schema; SQLite ignores case)."""
    default = sa.inspect(connection).default_schema_name

    def key(name: TableName) -> tuple:
        parts = (name.schema or default, name.name)
        return tuple(p.lower() if p and connection.dialect.name == "sqlite" else p for p in parts)

    return key(first) == key(second)


# ----------------------------------------------------------------------------- the labels table


def id_family(sql_type: sa.types.TypeEngine | None) -> str | None:
    """The family an id column's type belongs to — integer, decimal, float, text, uuid, binary, date/time,
    boolean — or None when the type does not say (untyped, unknown): such columns are not compared."""
    if sql_type is None:
        return "integer"  # row positions
    kind = column_kind(sql_type)
    known = {"integer", "decimal", "float", "text", "uuid", "binary", "date/time", "boolean"}
    return kind if kind in known else None


#: ``check_label_table(id_type=NOT_CHECKED)``: the source's id type is not known yet.
NOT_CHECKED = object()


#: :func:`labels_layout`: labels stored as a runs table and a rows table behind the view ``<output_table>``.
NARROW = "narrow"
#: :func:`labels_layout`: labels stored in one wide table ``<output_table>`` (earlier releases; migrated on write).
WIDE = "wide"


def labels_layout(connection: sa.Connection, output_table: TableName | StorageNames) -> str | None:
    """How ``output_table``'s labels are stored: :data:`NARROW`, :data:`WIDE`, or None (nothing there yet).

    Narrow: ``<output>_runs`` and ``<output>_rows`` (:mod:`lwec_tasks.io.label_storage`) exist with their
    columns (the view ``<output>`` may be missing; it is made again on the next write). Wide: ``<output>`` is a
    table with the :data:`LABEL_TABLE_COLUMNS`. Anything else under one of these names — a table without the
    expected columns, a view that is not ours, a sequence ... — is :class:`LwecInputError` naming it.
    """
    names = storage_names(output_table)
    kind = relation_kind(connection, names.view)
    inspector = sa.inspect(connection)

    def columns_of(name: TableName) -> list[str] | None:
        found = relation_kind(connection, name)
        if found is None:
            return None
        if found != "table":
            raise LwecInputError(_not_ours(output_table, name, f"is a {found}, not a table"))
        return [column["name"] for column in inspector.get_columns(name.name, schema=name.schema)]

    if kind == "table":
        columns = [column["name"] for column in inspector.get_columns(names.view.name, schema=names.view.schema)]
        missing = [column for column in LABEL_TABLE_COLUMNS if column not in columns]
        if missing:
            raise LwecInputError(
                f"output_table {str(output_table)!r} exists but is not an lwec labels table "
                f"(missing columns {missing}; it has {columns}); choose another name"
            )
    if kind not in (None, "table", "view"):
        raise LwecInputError(_not_a_table(str(output_table), names.view, kind))
    runs, rows = columns_of(names.runs), columns_of(names.rows)
    for name, found, wanted in ((names.runs, runs, ("run", "published", *RUN_COLUMNS)),
                                (names.rows, rows, ("run", "id", "label"))):
        missing = [] if found is None else [column for column in wanted if column not in found]
        if missing:
            raise LwecInputError(_not_ours(output_table, name, f"lacks the columns {missing} (it has {found})"))
    if kind == "table":
        if runs is not None or rows is not None:
            raise LwecInputError(_not_ours(output_table, names.runs if runs is not None else names.rows,
                                           f"exists beside the labels table {str(names.view)!r}"))
        return WIDE
    if runs is not None and rows is not None:
        return NARROW
    if kind == "view":
        raise LwecInputError(_not_a_table(str(output_table), names.view, kind))
    if runs is not None or rows is not None:
        raise LwecInputError(_not_ours(output_table, names.runs if runs is not None else names.rows,
                                       "exists without its other half"))
    return None


def _not_ours(output_table, name: TableName, problem: str) -> str:
    return (f"table {str(name)!r} {problem}: it is not the lwec labels storage of output_table "
            f"{str(output_table)!r} (which keeps its runs in {str(output_table)}{RUNS_SUFFIX!s} and its rows in "
            f"{str(output_table)}{ROWS_SUFFIX!s}); rename it or choose another output_table")


def check_label_table(
    engine: sa.Engine,
    output: TableName,
    source_table: TableName,
    *,
    id_type: sa.types.TypeEngine | None | object = NOT_CHECKED,
    id_column: str | None = None,
) -> None:
    """Check, before any work, that the table ``output`` can receive the labels of ``source_table``.

    It must be a plain identifier (optionally ``schema.table``), differ from
    the source table, and either not exist yet or be lwec labels storage
    (:func:`labels_layout`: narrow, or a wide table of earlier releases), whose
    ``id`` column is of the same family as ``id_type`` (the source's id type;
    None: row positions, integers; default :data:`NOT_CHECKED`: not compared). A mismatched labels table is refused,
    never altered: mixing id types in one table would break the history. On PostgreSQL the connection's role
    must have the rights to write it (:func:`lwec_tasks.io.privileges.check_write_rights`).

    Raises :class:`LwecInputError` naming the problem (or the database errors of
    :mod:`lwec_tasks.io.errors`).
    """
    check_new_table_name(output)
    name = str(output)
    with database_errors(engine, f"describe table {str(output)!r}"), engine.connect() as connection:
        if same_table(connection, output, source_table):
            raise LwecInputError(f"output_table={name!r} is the source table; choose another name")
        if output.schema is not None:
            schemas = sa.inspect(connection).get_schema_names()
            if output.schema not in schemas:
                raise LwecInputError(f"output_table={name!r}: database {mask_url(engine.url)} has no schema "
                                     f"{output.schema!r}; its schemas are {name_list(schemas)}")
        layout = labels_layout(connection, output)
        names = storage_names(output)
        check_write_rights(connection, output, () if layout is None else (output,) if layout == WIDE
                           else (names.runs, names.rows))
        if layout is None:
            return
        holder = output if layout == WIDE else names.rows
        columns = {column["name"]: column["type"]
                   for column in sa.inspect(connection).get_columns(holder.name, schema=holder.schema)}
    if id_type is not NOT_CHECKED:
        check_id_type(output, columns["id"], id_type, source_table, id_column)


def _not_a_table(name: str, output: TableName, kind: str) -> str:
    article = "an" if kind[0] in "aeiou" else "a"
    message = (f"output_table={name!r} is {article} {kind}, not a table; labels are written to a table: "
               "choose another name")
    if kind == "view" and output.name.endswith(LATEST_VIEW_SUFFIX):
        base = output.with_name(output.name[: -len(LATEST_VIEW_SUFFIX)])
        message += f" (this looks like the latest-labels view of {str(base)!r}: pass output_table={str(base)!r})"
    return message


def check_id_type(output_table: TableName, stored: sa.types.TypeEngine, id_type: sa.types.TypeEngine | None,
                  source_table: TableName, id_column: str | None = None) -> None:
    """:class:`LwecInputError` when the labels table's ``id`` type (``stored``) and the source's ids differ in
    family (:func:`id_family`)."""
    have, want = id_family(stored), id_family(id_type)
    if have is None or want is None or have == want:
        return
    ids = f"column {id_column!r} ({id_type})" if id_column else ("row positions" if id_type is None else f"{id_type}")
    raise LwecInputError(
        f"output_table {output_table!r} holds {have} ids (column id is {stored}), but the ids of table "
        f"{source_table!r} are {want}: {ids}; write to another output_table (or drop or rename "
        f"{output_table!r}): one labels table keeps one kind of id"
    )


@dataclass(frozen=True)
class ValueCounts:
    """What one aggregate query tells about a table's values.

    Attributes
    ----------
    rows : rows of the table
    non_null : column → rows where it is not NULL
    rows_with_null : rows where at least one of the ``any_null_of`` columns is NULL
    low, high : the smallest and largest value of the ``bounds_of`` column (None without one, or no value)
    """

    rows: int
    non_null: dict[str, int]
    rows_with_null: int = 0
    low: object = None
    high: object = None


def count_values(engine: sa.Engine, source: SourceTable, columns: Sequence[str],
                 any_null_of: Sequence[str] = (), bounds_of: str | None = None,
                 known_non_null: Mapping[str, int] | None = None) -> ValueCounts:
    """Count rows and non-NULL values of ``columns`` (and rows with a NULL in any of ``any_null_of``), and
    the smallest and largest value of ``bounds_of``, in one aggregate query: one pass over the table on the
    server, nothing but the counts transferred.

    The ``columns`` among ``any_null_of`` are counted one by one only when some row has a NULL in one of them
    (a second pass); otherwise each has a value in every row. Counting them in the first pass would cost a
    third more of it: at 10M rows × 16 columns on PostgreSQL, 1.0–1.3 s against 0.65 s. ``known_non_null``:
    non-NULL rows of columns among ``any_null_of`` counted already (:func:`lwec_tasks.io.levels.column_stats`),
    not counted again.
    """
    table = source.table
    first = [name for name in columns if name not in any_null_of]
    aggregates = [sa.func.count(), *(sa.func.count(table.c[name]) for name in first)]
    if any_null_of:
        has_null = sa.or_(*(table.c[name].is_(None) for name in any_null_of))
        aggregates.append(sa.func.coalesce(sa.func.sum(sa.case((has_null, 1), else_=0)), 0))
    if bounds_of is not None:
        aggregates += [sa.func.min(table.c[bounds_of]), sa.func.max(table.c[bounds_of])]
    with database_errors(engine, f"count the rows of table {source.name!r}"), engine.connect() as connection:
        counts = connection.execute(sa.select(*aggregates).select_from(table)).one()
        rows, with_null = int(counts[0]), int(counts[1 + len(first)]) if any_null_of else 0
        non_null = {name: int(value) for name, value in zip(first, counts[1:1 + len(first)])}
        non_null.update({name: int(value) for name, value in (known_non_null or {}).items()
                         if name in columns and name not in non_null})
        rest = [name for name in columns if name not in non_null]
        if rest and with_null:
            found = connection.execute(sa.select(*(sa.func.count(table.c[name]) for name in rest))).one()
            non_null.update({name: int(value) for name, value in zip(rest, found)})
        else:
            non_null.update(dict.fromkeys(rest, rows))
    low, high = counts[-2:] if bounds_of is not None else (None, None)
    return ValueCounts(rows, {name: non_null[name] for name in columns}, with_null, low, high)


#: How many of a text column's first non-empty values :func:`text_holding_numbers` reads.
NUMBER_SAMPLE = 200


def text_holding_numbers(engine: sa.Engine, source: SourceTable, columns: Sequence[str]) -> tuple[str, ...]:
    """Which of the text ``columns`` hold numbers: their first :data:`NUMBER_SAMPLE` non-NULL, non-empty values
    (one ``LIMIT`` query per column) all read as finite numbers, as a CSV imported as text holds them. A hint for
    the planning, not a check: a feature column is read value by value."""
    import numpy as np
    import pandas as pd

    table, found = source.table, []
    with database_errors(engine, f"look at the first values of table {source.name!r}"), engine.connect() as connection:
        for name in columns:
            column = table.c[name]
            values = connection.execute(sa.select(column).where(column.is_not(None), column != "")
                                        .limit(NUMBER_SAMPLE)).scalars().all()
            numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
            if len(values) and np.isfinite(numbers).all():  # a value that is no number reads as NaN
                found.append(name)
    return tuple(found)


def values_seen_early(engine: sa.Engine, source: SourceTable, features: Sequence[str], id_column: str | None,
                      needed_rows: int) -> bool:
    """Whether the first rows already show what :func:`count_values` would be asked to prove for a run: a value
    in each of ``features``, at least ``needed_rows`` rows with every feature set, and no NULL in
    ``id_column`` (None: row positions).

    One query whose parts each stop at the rows that show them (``LIMIT``), so on a table that passes it costs
    milliseconds, not a pass over the table. The id column is read whole only when its declared type lets it
    hold NULLs. False means "not shown": the full count then says exactly what is wrong, or that nothing is.
    """
    table = source.table

    def first(condition: sa.ColumnElement[bool], limit: int = 1) -> sa.Select:
        return sa.select(sa.literal(1)).select_from(table).where(condition).limit(limit)

    all_set = sa.and_(sa.true(), *(table.c[name].is_not(None) for name in features))
    parts = [sa.select(sa.func.count()).select_from(first(all_set, needed_rows).subquery()).scalar_subquery()]
    parts += [sa.exists(first(table.c[name].is_not(None))) for name in features]
    if id_column is not None and table.c[id_column].nullable:
        parts.append(~sa.exists(first(table.c[id_column].is_(None))))
    with database_errors(engine, f"look at the first rows of table {source.name!r}"), engine.connect() as connection:
        usable, *shown = connection.execute(sa.select(*parts)).one()
    return int(usable) >= needed_rows and all(shown)
