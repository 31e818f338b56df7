"""The rights a PostgreSQL role needs to write a labels table, checked before a run computes anything.

A run writes its labels storage (:mod:`lwec_tasks.io.label_storage`) in the labels table's schema: it creates the
runs and rows tables and the views when they are missing, and on every run a table of that run's rows (attached
to the rows table) and a staging table. So the role needs ``USAGE`` and ``CREATE`` on that schema, and, once the
storage exists, must own its rows and runs tables (attaching and detaching a run's table is the owner's right)
or be a member of the role that owns them. Reading the source needs only ``USAGE`` on its schema and ``SELECT``
on the table (docs/pipeline.md, "Least privilege").

Other databases are not checked here; their errors are reported as they come (:mod:`lwec_tasks.io.errors`).
"""

from __future__ import annotations

import sqlalchemy as sa

from lwec_tasks.io.errors import DatabaseRefusedError
from lwec_tasks.io.names import TableName

#: The schema rights a run needs on the labels table's schema.
SCHEMA_RIGHTS = ("USAGE", "CREATE")


def check_write_rights(connection: sa.Connection, output: TableName, storage: tuple[TableName, ...] = ()) -> None:
    """On PostgreSQL: :class:`~lwec_tasks.io.errors.DatabaseRefusedError` (one line, naming the role, the missing
    right and the grant that gives it) unless the connection's role can write the labels of ``output``:
    :data:`SCHEMA_RIGHTS` on its schema and, for each existing table of ``storage`` (the
    storage's runs and rows tables), ownership or membership in the owning role. Other dialects: nothing."""
    if connection.dialect.name != "postgresql":
        return
    role, default_schema = connection.execute(sa.text("SELECT current_user, current_schema()")).one()
    schema = output.schema or default_schema
    lacking = [right for right in SCHEMA_RIGHTS if not connection.execute(
        sa.text("SELECT has_schema_privilege(:schema, :right)"), {"schema": schema, "right": right}).scalar()]
    if lacking:
        raise DatabaseRefusedError(
            f"output_table {str(output)!r}: role {role!r} lacks {' and '.join(lacking)} on schema {schema!r}, "
            f"which writing the labels needs (each run creates its tables there); grant it: GRANT "
            f"{', '.join(lacking)} ON SCHEMA {_quoted(schema)} TO {_quoted(role)}")
    for table in storage:
        owner = connection.execute(
            sa.text("SELECT pg_get_userbyid(c.relowner), pg_has_role(c.relowner, 'USAGE') FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :schema AND c.relname = :name"),
            {"schema": table.schema or default_schema, "name": table.name}).first()
        if owner is not None and not owner[1]:
            raise DatabaseRefusedError(
                f"output_table {str(output)!r}: role {role!r} does not own table {str(table)!r} (its owner is "
                f"{owner[0]!r}), which each run attaches its rows to; run as {owner[0]!r} or a member of it "
                f"(GRANT {_quoted(owner[0])} TO {_quoted(role)}), or write to another output_table")


def _quoted(identifier: str) -> str:
    """``identifier`` as PostgreSQL reads it in a statement: double-quoted when it is not a plain lower-case
    name."""
    if identifier.isidentifier() and identifier == identifier.lower():
        return identifier
    return '"' + identifier.replace('"', '""') + '"'
