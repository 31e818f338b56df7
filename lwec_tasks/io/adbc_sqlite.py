"""Arrow-native connections (ADBC) to the SQLite file behind a SQLAlchemy engine.

The SQLite fast paths read query results as Arrow columns and bind Arrow
columns as statement parameters, so rows never become Python objects. They
need the ``adbc-driver-sqlite`` and ``pyarrow`` packages and a file database
(an in-memory database is private to its own connection); without them
the callers use the portable path (:func:`lwec_tasks.io.bulk_read.adbc_connector`).
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from collections.abc import Iterator

import sqlalchemy as sa

#: Seconds a connection waits for another one's lock (sqlite3's default).
DEFAULT_BUSY_TIMEOUT = 5.0

#: Query parameters of a SQLite URL that SQLAlchemy's pysqlite dialect takes as connect() options.
_PYSQLITE_OPTIONS = frozenset({"uri", "timeout", "isolation_level", "detect_types", "check_same_thread",
                               "cached_statements", "factory"})

#: Rows per Arrow batch of a query (the driver infers each column's type from the first batch).
QUERY_BATCH_ROWS = 65_536


def sqlite_uri(engine: sa.Engine, *, read_only: bool) -> str | None:
    """A ``file:`` URI opening the engine's database file, or None when there is none to share.

    ``read_only`` opens it with ``mode=ro``; otherwise ``mode=rw`` (never creates a file).
    """
    if engine.dialect.name != "sqlite" or engine.dialect.driver != "pysqlite":
        return None
    url = engine.url
    database = url.database
    if not database or database == ":memory:":
        return None
    if str(url.query.get("uri", "")).lower() in ("true", "1"):
        # Already a URI (sqlite:///file:path?mode=ro&uri=true): SQLAlchemy passes the query parameters it does
        # not know itself (mode, cache, immutable, ...) on to SQLite as URI parameters, and so must we.
        parameters = [(key, value) for key, value in url.query.items() if key not in _PYSQLITE_OPTIONS]
        if parameters:
            database += ("&" if "?" in database else "?") + urllib.parse.urlencode(parameters, doseq=True)
        # "memory" URIs are private to their connection.
        if "mode=memory" in database or database.startswith("file::memory:"):
            return None
        return database
    if not os.path.exists(database):
        return None
    path = urllib.parse.quote(os.path.abspath(database))
    return f"file:{path}?mode={'ro' if read_only else 'rw'}"


def busy_timeout_ms(engine: sa.Engine) -> int:
    """The engine's ``timeout`` query option (seconds) in milliseconds, else sqlite3's 5 s default."""
    try:
        seconds = float(engine.url.query.get("timeout", DEFAULT_BUSY_TIMEOUT))
    except (TypeError, ValueError):
        seconds = DEFAULT_BUSY_TIMEOUT
    return max(0, int(seconds * 1000))


@contextlib.contextmanager
def connect(uri: str, busy_timeout: int) -> Iterator:
    """An ADBC DB-API connection (not autocommit: everything runs in one transaction until commit)."""
    import adbc_driver_sqlite.dbapi

    connection = adbc_driver_sqlite.dbapi.connect(uri)
    try:
        with connection.cursor() as cursor:
            # An integer rendered by us, not user text (PRAGMA takes no bound parameters).
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout)}")
        yield connection
    finally:
        with contextlib.suppress(Exception):
            connection.rollback()
        connection.close()


def set_batch_rows(cursor, rows: int | None = None) -> None:
    """Rows per Arrow batch of the cursor's next query (default :data:`QUERY_BATCH_ROWS`)."""
    rows = QUERY_BATCH_ROWS if rows is None else rows
    cursor.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(int(rows))})
