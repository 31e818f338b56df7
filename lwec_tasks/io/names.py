"""Table names as users give them: ``table``, ``schema.table``, double quotes around a part with a dot.

Grammar: one or two parts separated by ``.``. A part is either written as is
(any characters but ``.``; case and spaces are kept: ``Feature Table``) or in
double quotes, where ``""`` stands for one quote: ``"my.table"``,
``analytics."my.table"``. Text that does not follow the grammar (a stray
quote, say) is taken as one literal table name, so it can only ever be found
or not found. A name is never pasted into SQL: the parts become the ``schema``
and ``name`` of SQLAlchemy table objects, quoted by the dialect.

Standard library only: the preflight checks import this before anything heavy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.validation import check_non_empty_text


@dataclass(frozen=True, repr=False)
class TableName:
    """A table (or view) name and its schema (None: the database's default schema).

    ``str(name)`` is the canonical spelling: parts joined by ``.``, a part in
    double quotes only when it needs them (it contains a dot, starts with a
    quote or is empty), so ``parse_table_name(str(name)) == name``; ``repr(name)`` is that spelling's repr,
    as messages quote a name.
    """

    name: str
    schema: str | None = None

    def __str__(self) -> str:
        parts = [self.name] if self.schema is None else [self.schema, self.name]
        return ".".join(_spelled(part) for part in parts)

    def __repr__(self) -> str:
        return repr(str(self))

    def with_name(self, name: str) -> TableName:
        """The table ``name`` in the same schema."""
        return TableName(name, self.schema)

    def suffixed(self, suffix: str) -> TableName:
        """This name followed by ``suffix``, in the same schema: ``analytics.labels`` → ``analytics.labels_runs``."""
        return TableName(self.name + suffix, self.schema)


def _spelled(part: str) -> str:
    if part == "" or "." in part or part.startswith('"'):
        return '"' + part.replace('"', '""') + '"'
    return part


def parse_table_name(text: str | TableName, parameter: str = "table") -> TableName:
    """``text`` as a :class:`TableName` (a TableName is returned as is).

    ``features`` → (features), ``analytics.features`` → (analytics, features),
    ``"my.table"`` → (my.table), ``analytics."my.table"`` → (analytics, my.table).

    Raises
    ------
    LwecInputError
        ``text`` is not a string, or has more than two parts.
    """
    if isinstance(text, TableName):
        return text
    if not isinstance(text, str) or not text:
        raise LwecInputError(f"{parameter} must be a table name, got {text!r}")
    parts = _split(text)
    if parts is None:
        return TableName(text)
    if len(parts) > 2:
        raise LwecInputError(
            f"{parameter}={text!r} has {len(parts)} dot-separated parts; give table or schema.table, and write a "
            'name that contains a dot in double quotes: "my.table" or analytics."my.table"'
        )
    return TableName(*reversed(parts))  # parts: [name] or [schema, name]


def table_name(parameter: str, value) -> TableName:
    """The table name ``value`` a user gave as ``parameter`` (the grammar above): :class:`LwecInputError` naming
    ``parameter`` when it is not a non-empty string, or has more than two parts."""
    return parse_table_name(check_non_empty_text(parameter, value), parameter)


#: One part: in double quotes (``""`` inside stands for one quote), or not starting with a quote and without dots.
_PART = r'"((?:[^"]|"")*)"|([^."][^.]*)'
_NAME = re.compile(rf"(?:{_PART})(?:\.(?:{_PART}))*")


def _split(text: str) -> list[str] | None:
    """The parts of ``text`` by the grammar above, or None when it does not follow it."""
    if not _NAME.fullmatch(text):
        return None
    return [part.group(2) if part.group(1) is None else part.group(1).replace('""', '"')
            for part in re.finditer(_PART, text)]
