"""Database errors as operators read them: one line, URL masked, no SQL, no row values.

Two outcomes, told apart by what the driver reports:

* :class:`DatabaseUnreachableError` — no answer: refused or timed-out
  connections, unknown hosts, a connection lost mid-statement, a server
  shutting down or starting up, too many connections, a SQLite file locked
  by another writer, a DuckDB file held by another process (DuckDB lets one
  process at a time open a file for writing) or a transaction of DuckDB that
  met another one's write. Worth retrying.
* :class:`DatabaseRefusedError` — the database answered with an error that
  retrying will not fix: permission denied, a failed password, a missing
  database, a read-only database, a full disk, a type mismatch, a duplicate
  key. Not retried; a subclass of :class:`LwecInputError`, so the command line
  prints it as one line like any other problem with the input or setup.

The message is the driver's own (PostgreSQL's primary message; never
SQLAlchemy's text, which appends the statement and its parameters), on one
line; values a data error quotes (``invalid input syntax for type bigint:
"row-7"``) are cut off.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.masking import mask_url


class DatabaseUnreachableError(ConnectionError):
    """The database could not be reached (worth retrying, unlike bad input)."""


class DatabaseRefusedError(LwecInputError):
    """The database answered with an error retrying will not fix (permission, space, types, constraints)."""


#: SQLSTATEs (PostgreSQL) of a server that is there but cannot serve now: shutting down, starting up, full.
_UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
#: SQLite primary result codes worth waiting for: busy, locked, cannot open the file (e.g. an unmounted disk).
_SQLITE_TRANSIENT = frozenset({5, 6, 14})
#: MySQL client error codes of lost or refused connections.
_MYSQL_CONNECTION_CODES = frozenset({2002, 2003, 2005, 2006, 2013, 2055})
#: Connection failures in which the server did answer, with a refusal retrying will not change.
_REFUSED_AT_CONNECT = re.compile(
    r"authentication failed|does not exist|no pg_hba\.conf entry|permission denied|not permitted to log in|"
    r"access denied|SSL .*required|certificate",
    re.IGNORECASE,
)
_CONNECTION_WORDS = re.compile(
    r"could not connect|connection refused|connection (?:timed out|timeout)|timeout expired|"
    r"server closed the connection|connection .*(?:lost|reset|closed)|can't connect|could not translate host|"
    r"name or service not known|failed to resolve host|network is unreachable|no route to host",
    re.IGNORECASE,
)
#: DuckDB's errors worth waiting for: its file held by another process, a write conflicting with another transaction's.
_DUCKDB_BUSY = re.compile(r"Could not set lock on file|Conflicting lock is held|write-write conflict|Conflict on",
                          re.IGNORECASE)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")


def is_connection_failure(error: BaseException) -> bool:
    """Whether ``error`` (a SQLAlchemy ``DBAPIError`` or a driver exception) means the database did not answer."""
    if isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated:
        return True
    original = error.orig if isinstance(error, sa.exc.DBAPIError) and error.orig is not None else error
    sqlstate = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    if sqlstate:
        return sqlstate.startswith("08") or sqlstate in _UNAVAILABLE_SQLSTATES
    code = getattr(original, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _SQLITE_TRANSIENT
    if _driver(original) in ("duckdb", "_duckdb"):
        return bool(_DUCKDB_BUSY.search(str(original)))
    kind = type(original).__name__
    if kind not in ("OperationalError", "InterfaceError", "ConnectionTimeout"):
        return False
    args = getattr(original, "args", ())
    if args and isinstance(args[0], int):  # MySQL drivers: (code, message)
        return args[0] in _MYSQL_CONNECTION_CODES
    message = str(original)
    if _REFUSED_AT_CONNECT.search(message):
        return False
    # psycopg and psycopg2 give connection failures no SQLSTATE; other drivers: by the words.
    return (kind == "InterfaceError" or _driver(original) in ("psycopg", "psycopg2")
            or bool(_CONNECTION_WORDS.search(message)))


def _driver(error: BaseException) -> str:
    """The top-level package ``error``'s class comes from (``psycopg``, ``adbc_driver_manager``, ...)."""
    return type(error).__module__.split(".")[0]


def driver_message(error: BaseException) -> str:
    """The driver's reason for ``error`` on one line, without SQL, parameters, row values or passwords."""
    original = error.orig if isinstance(error, sa.exc.DBAPIError) and error.orig is not None else error
    diagnostics = getattr(original, "diag", None)
    text = getattr(diagnostics, "message_primary", None) or str(original)
    if _driver(original) == "adbc_driver_manager":  # "STATUS: [libpq] Failed to ...: ERROR:  reason\nQuery was: ..."
        reasons = re.findall(r"(?:ERROR|FATAL):\s+([^\n]*)", text)
        text = reasons[-1] if reasons else re.sub(r"^[A-Z_]+: (?:\[\w+\] )?", "", text).split("\n")[0]
    sqlstate = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None) or ""
    if sqlstate.startswith("22"):  # data exceptions quote the offending value: keep only what went wrong
        text = re.sub(r':\s*".*$', "", text, flags=re.DOTALL)
    if sqlstate == "23505" and "duplicate" not in text:  # a unique index built over rows already in
        text += ": duplicate key values"
    if isinstance(original, sa.exc.StatementError) or "[SQL:" in text:
        text = text.split("[SQL:")[0]
    text = " ".join(text.split())
    text = _URL.sub(lambda match: mask_url(match.group(0)), text)
    return text or type(original).__name__


def database_error(engine: sa.Engine | sa.Connection | str, error: BaseException, action: str) -> Exception:
    """The exception to raise for a database ``error`` met while trying to ``action`` (e.g. "read table 'x'")."""
    url = engine.engine.url if isinstance(engine, sa.Connection) else getattr(engine, "url", engine)
    reason = driver_message(error)
    if is_connection_failure(error):
        return DatabaseUnreachableError(f"cannot reach database {mask_url(url)}: {reason}")
    return DatabaseRefusedError(f"database {mask_url(url)} refused to {action}: {reason}")


@contextlib.contextmanager
def database_errors(engine: sa.Engine | sa.Connection | str, action: str) -> Iterator[None]:
    """Raise :func:`database_error`'s exception, chained to nothing, for any driver error inside the block.

    Without the chain no traceback shows SQLAlchemy's message, which quotes
    the statement and its parameters. ADBC driver errors are turned alike.
    """
    try:
        yield
    except Exception as error:
        if not isinstance(error, sa.exc.DBAPIError) and _driver(error) != "adbc_driver_manager":
            raise
        raise database_error(engine, error, action) from None
