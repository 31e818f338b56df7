"""Rules for the names of tables the pipeline creates.

Input tables and columns are never validated by pattern: they must exist
(checked by reflection) and SQLAlchemy quotes them. Tables the pipeline
*creates* must be plain identifiers, optionally in a schema
(``schema.table``, see :mod:`lwec_tasks.io.names`), so that a name containing
quotes, spaces or ``;`` is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import re

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.names import TableName, parse_table_name

# Letters, digits, underscore; not starting with a digit (the length is checked with the names derived from it).
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Suffix of the latest-run view's name: ``<labels_table>_latest``.
LATEST_VIEW_SUFFIX = "_latest"

#: Suffixes of the two tables beside the output table's name (:mod:`lwec_tasks.io.label_storage`).
RUNS_SUFFIX, ROWS_SUFFIX = "_runs", "_rows"

#: Suffix of the runs table's index on ``run_key``: ``<runs>_by_key`` (shortened by :func:`fitted_name`).
RUN_KEY_INDEX_SUFFIX = "_by_key"

#: Longest identifier, in UTF-8 bytes, PostgreSQL keeps (longer ones are silently cut there).
MAX_IDENTIFIER_BYTES = 63


def check_new_table_name(name: str | TableName, parameter: str = "output_table") -> TableName:
    """``name`` as the :class:`TableName` of a table lwec creates if its table part is a plain identifier, else
    :class:`LwecInputError`. ``name`` is the text a user gave (read as :mod:`lwec_tasks.io.names` says) or a
    :class:`TableName` already read, checked the same way (messages quote its canonical spelling).

    ``labels`` and ``analytics.labels`` are accepted; the schema part may be any
    existing schema's name (``"Sales Data".labels``), since it is quoted by the
    dialect and never created here.

    The name must leave room for every name lwec derives from it under PostgreSQL's 63 bytes (on every
    database, so that names are the same everywhere): the tables ``_runs`` and ``_rows`` and the view
    ``_latest`` beside it (:data:`STORAGE_SUFFIXES`), so at most 56 bytes; else :class:`LwecInputError` naming
    ``parameter`` (and its command-line option) and the name that would not fit. The names lwec gives no one
    to type (the runs table's index, the runs' own tables) are shortened instead (:func:`fitted_name`,
    :func:`run_table_name`). Called before anything runs (the run's parameters, the preflight checks).
    """
    if isinstance(name, TableName):
        parsed, given = name, str(name)
    else:
        parsed, given = (parse_table_name(name, parameter) if isinstance(name, str) and name else None), name
    if parsed is None or not _PLAIN_IDENTIFIER.fullmatch(parsed.name) or parsed.schema == "":
        raise LwecInputError(
            f"{parameter}={given!r} is not allowed: use letters, digits and underscores only "
            f"(at most {MAX_IDENTIFIER_BYTES - LONGEST_SUFFIX_BYTES} characters, not starting with a digit), "
            "optionally after a schema: schema.table"
        )
    for suffix in sorted(STORAGE_SUFFIXES, key=lambda suffix: -len(suffix.encode("utf-8"))):  # longest first
        suffixed_name(parsed, suffix, "view" if suffix == LATEST_VIEW_SUFFIX else "table", parameter, given,
                      "an output table")
    return parsed


#: Suffixes of the names lwec gives beside an output table that users query by name, kept whole: an output
#: table's name must leave room for each (:func:`check_new_table_name`).
STORAGE_SUFFIXES = (RUNS_SUFFIX, ROWS_SUFFIX, LATEST_VIEW_SUFFIX)

#: Longest suffix lwec adds to an output table's name (``_latest``; ``_runs`` and ``_rows`` are shorter).
LONGEST_SUFFIX_BYTES = max(len(suffix.encode("utf-8")) for suffix in STORAGE_SUFFIXES)

#: What a default output table's name ends with.
DEFAULT_OUTPUT_SUFFIX = "_lwec_labels"


def default_output_table(source: TableName) -> TableName:
    """``<source>_lwec_labels`` in the source's schema, anything but letters, digits and ``_`` replaced by ``_``.

    ``features`` → ``features_lwec_labels``; ``analytics.features`` → ``analytics.features_lwec_labels``. The
    name and every name lwec derives from it (``_latest``, ``_runs``, ``_rows``) fit PostgreSQL's 63 bytes: a
    longer source name is cut and 8 hex digits of its MD5 added (``<first 35 characters>_<hash>_lwec_labels``),
    so one source name always gives the same output name.
    """
    stem = re.sub(r"[^A-Za-z0-9_]", "_", source.name) or "features"
    if stem[0].isdigit():
        stem = "t_" + stem
    room = MAX_IDENTIFIER_BYTES - LONGEST_SUFFIX_BYTES - len(DEFAULT_OUTPUT_SUFFIX)
    if len(stem) > room:
        digest = hashlib.md5(source.name.encode("utf-8")).hexdigest()[:8]
        stem = f"{stem[:room - len(digest) - 1]}_{digest}"
    return source.with_name(f"{stem}{DEFAULT_OUTPUT_SUFFIX}")


def suffixed_name(table: TableName, suffix: str, kind: str, parameter: str, given: str, base: str) -> TableName:
    """``table`` + ``suffix`` (same schema), checked to fit PostgreSQL's 63-byte identifiers (longer names would be
    cut there silently): else :class:`LwecInputError` saying which name lwec derives (the ``kind`` of name:
    "view", "table") from the name ``given`` as ``parameter`` (``output_table``: the command's
    ``--output-table``), and how long ``base`` ("an output table", ...) may be."""
    name = table.suffixed(suffix)
    size = len(name.name.encode("utf-8"))
    if size > MAX_IDENTIFIER_BYTES:
        option = f"{parameter} (--{parameter.replace('_', '-')})"
        raise LwecInputError(
            f"{option}={given!r} is too long: the {kind} lwec makes beside it, {name.name!r}, would be {size} "
            f"bytes, and PostgreSQL identifiers are at most {MAX_IDENTIFIER_BYTES} bytes; give "
            f"{option} {base} name of at most {MAX_IDENTIFIER_BYTES - len(suffix.encode('utf-8'))} bytes"
        )
    return name


def fitted_name(table: TableName, suffix: str) -> TableName:
    """``table`` + ``suffix`` (same schema) when that fits PostgreSQL's 63 bytes; else ``table``'s name cut
    (whole UTF-8 characters) and 8 hex digits of its MD5 added: ``<first bytes>_<hash><suffix>``, exactly 63
    bytes or less. For names lwec makes that no one types (the runs table's index): one ``table`` always gives
    the same name, different ones different names (the hash), on every database."""
    name = f"{table.name}{suffix}"
    if len(name.encode("utf-8")) <= MAX_IDENTIFIER_BYTES:
        return table.with_name(name)
    tail = f"_{hashlib.md5(table.name.encode('utf-8')).hexdigest()[:8]}{suffix}"
    stem = table.name.encode("utf-8")[:MAX_IDENTIFIER_BYTES - len(tail.encode("utf-8"))]
    return table.with_name(stem.decode("utf-8", errors="ignore") + tail)


def run_key_index_name(runs: TableName) -> TableName:
    """The name of the index on ``run_key`` of the runs table ``runs``: ``<runs>_by_key``, shortened by
    :func:`fitted_name` when that would pass 63 bytes (an output table of 52 to 56 bytes)."""
    return fitted_name(runs, RUN_KEY_INDEX_SUFFIX)


#: Between the rows table's name and the run in a run's own table name: in no name lwec gives anything else.
RUN_MARK = "$"

#: The end of every name :func:`run_table_name` gives: ``$<run>`` or ``$<8 hex digits>$<run>``.
_RUN_TABLE_END = re.compile(r"\$(?:[0-9a-f]{8}\$)?\d+$")


def run_table_name(rows: TableName, run: int | str) -> TableName:
    """The name of run ``run``'s own table beside the rows table ``rows`` (PostgreSQL): ``<rows>$<run>``, in the
    rows table's schema.

    ``$`` is in no name lwec gives a relation otherwise (output tables are letters, digits and ``_``), so no
    labels storage can take the name of another's run table. When the name would pass PostgreSQL's 63 bytes,
    the rows table's name is cut and 8 hex digits of its MD5 added: ``<first bytes>$<hash>$<run>``.
    """
    suffix = f"{RUN_MARK}{run}"
    if len(rows.name.encode("utf-8") + suffix.encode("utf-8")) > MAX_IDENTIFIER_BYTES:
        suffix = f"{RUN_MARK}{hashlib.md5(rows.name.encode('utf-8')).hexdigest()[:8]}{suffix}"
        stem = rows.name.encode("utf-8")[:MAX_IDENTIFIER_BYTES - len(suffix.encode("utf-8"))]
        return rows.with_name(stem.decode("utf-8", errors="ignore") + suffix)
    return rows.with_name(rows.name + suffix)


def is_run_table_name(name: str) -> bool:
    """Whether the table name ``name`` is one :func:`run_table_name` gives a run (a number, not a word)."""
    return _RUN_TABLE_END.search(name) is not None


def latest_view_name(labels_table: TableName, parameter: str = "output_table") -> TableName:
    """``<labels_table>_latest`` (in the labels table's schema), checked to fit PostgreSQL's 63-byte identifiers.

    The name is quoted by the dialect wherever it is used, so any characters
    are safe; only its length (which PostgreSQL would silently cut) and NUL
    characters are refused, with :class:`LwecInputError` naming it and the ``parameter`` that gave
    ``labels_table``.
    """
    view = suffixed_name(labels_table, LATEST_VIEW_SUFFIX, "view", parameter, str(labels_table), "an output table")
    if "\x00" in str(view):
        raise LwecInputError(f"view name {str(view)!r} contains a NUL character")
    return view


def name_list(names, limit: int = 20) -> str:
    """``names`` as a list for an error message, cut after ``limit`` entries."""
    names = list(names)
    if len(names) <= limit:
        return str(names)
    return f"{names[:limit]} and {len(names) - limit} more"
