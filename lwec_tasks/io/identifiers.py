"""Rules for the names of tables the pipeline creates.

Input tables and columns are never validated by pattern: they must exist
(checked by reflection) and SQLAlchemy quotes them. Tables the pipeline
*creates* must be plain identifiers, so that a name containing quotes, spaces
or ``;`` is refused before anything is written.
"""

from __future__ import annotations

import re

from lwec_tasks.core.errors import LwecInputError

# Letters, digits, underscore; not starting with a digit; PostgreSQL's 63-byte limit.
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def check_new_table_name(name: str, parameter: str = "output_table") -> str:
    """Return ``name`` if it is a plain identifier, else raise :class:`LwecInputError`."""
    if not isinstance(name, str) or not _PLAIN_IDENTIFIER.fullmatch(name):
        raise LwecInputError(
            f"{parameter}={name!r} is not allowed: use letters, digits and underscores only "
            "(at most 63 characters, not starting with a digit)"
        )
    return name


def default_output_table(source_table: str) -> str:
    """``<source>_lwec_labels`` with anything but letters, digits and ``_`` replaced by ``_``."""
    stem = re.sub(r"[^A-Za-z0-9_]", "_", source_table)[:48] or "features"
    if stem[0].isdigit():
        stem = "t_" + stem
    return f"{stem}_lwec_labels"


def name_list(names, limit: int = 20) -> str:
    """``names`` as a list for an error message, cut after ``limit`` entries."""
    names = list(names)
    if len(names) <= limit:
        return str(names)
    return f"{names[:limit]} and {len(names) - limit} more"
