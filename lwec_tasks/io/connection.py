"""Engines from database URLs, and URLs safe to print or log."""

from __future__ import annotations

import os
import re

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from lwec_tasks.core.errors import LwecInputError


class DatabaseUnreachableError(ConnectionError):
    """The database could not be reached (worth retrying, unlike bad input)."""


#: Query-string parameters whose values are credentials (compared case-insensitively).
SECRET_QUERY_KEYS = frozenset({
    "password", "pwd", "passwd", "pass", "sslpassword", "token", "access_token", "auth_token",
    "secret", "client_secret", "api_key", "apikey", "sslkey_password",
})
#: Query-string parameters holding a whole driver connection string (``KEY=value;...``).
_CONNECTION_STRING_KEYS = frozenset({"odbc_connect", "connection_string", "connect_string"})
_CONNECTION_STRING_SECRET = re.compile(
    r"(?i)(?<![A-Za-z_])(pwd|password|passwd|pass|token|access_token|accesstoken|secret)(\s*=\s*)"
    r"(\{(?:[^}]|\}\})*\}|[^;]*)"
)
MASK = "***"

#: pip package that provides each database driver module SQLAlchemy may import.
DRIVER_PACKAGES = {
    "psycopg": "psycopg[binary]",
    "psycopg2": "psycopg2-binary",
    "asyncpg": "asyncpg",
    "pg8000": "pg8000",
    "pymysql": "PyMySQL",
    "MySQLdb": "mysqlclient",
    "mysql": "mysql-connector-python",
    "pyodbc": "pyodbc",
    "oracledb": "oracledb",
    "cx_Oracle": "cx_Oracle",
    "pymssql": "pymssql",
    "duckdb": "duckdb-engine",
    "snowflake": "snowflake-sqlalchemy",
}


def mask_query_value(key: str, value: str) -> str:
    """``value`` of query parameter ``key``, with credentials replaced by ``***``."""
    lowered = key.lower()
    if lowered in SECRET_QUERY_KEYS:
        return MASK
    if lowered in _CONNECTION_STRING_KEYS:
        return _CONNECTION_STRING_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", value)
    return value


def mask_url(url: str | sa.URL) -> str:
    """Return ``url`` with any password replaced by ``***``.

    Passwords in the user-info part and credentials in the query string
    (``password``, ``pwd``, ``sslpassword``, ``token``, ``PWD=`` inside
    ``odbc_connect``, ...) are hidden. Strings that do not parse as a URL are
    returned with everything before an ``@`` hidden and any query string
    dropped, so a malformed URL cannot leak a password either.
    """
    try:
        parsed = url if isinstance(url, sa.URL) else sa.make_url(url)
    except ArgumentError:
        text = url.split("?", 1)[0] + ("?***" if "?" in url else "")
        return "***@" + text.rsplit("@", 1)[1] if "@" in text else text
    query = {
        key: tuple(mask_query_value(key, v) for v in value) if isinstance(value, tuple)
        else mask_query_value(key, value)
        for key, value in parsed.query.items()
    }
    rendered = parsed.set(query=query).render_as_string(hide_password=True)
    return rendered.replace("%2A%2A%2A", MASK)


def url_has_credentials(url: str | sa.URL) -> bool:
    """Whether ``url`` carries a password (in its user-info part or its query string)."""
    try:
        parsed = url if isinstance(url, sa.URL) else sa.make_url(url)
    except ArgumentError:
        return "@" in url or "?" in url
    if parsed.password is not None:
        return True
    for key, value in parsed.query.items():
        for item in value if isinstance(value, tuple) else (value,):
            if mask_query_value(key, item) != item:
                return True
    return False


def resolve_database_url(database_url: str) -> str:
    """``database_url`` itself, or for ``env:VAR`` the value of environment variable VAR.

    The ``env:`` form keeps credentials out of flow parameters (which the
    Prefect UI shows).
    """
    if not database_url.startswith("env:"):
        return database_url
    variable = database_url[len("env:"):]
    value = os.environ.get(variable)
    if not value:
        raise LwecInputError(f"database_url={database_url!r}: environment variable {variable!r} is not set")
    return value


def open_engine(database_url: str, *, connect_timeout: int = 10) -> sa.Engine:
    """Create an engine for ``database_url`` (nothing is connected yet).

    ``connect_timeout`` (seconds) bounds each connection attempt on servers
    (PostgreSQL, MySQL) so an unreachable host fails promptly and can be
    retried; SQLite files ignore it.
    """
    database_url = resolve_database_url(database_url)
    try:
        url = sa.make_url(database_url)
    except ArgumentError as error:
        raise LwecInputError(f"database_url is not a valid SQLAlchemy URL: {mask_url(database_url)!r}") from error
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
            and "uri" not in url.query and not os.path.exists(url.database):
        # sqlite3 would silently create an empty file here.
        raise LwecInputError(f"database_url {mask_url(database_url)!r}: SQLite file {url.database!r} does not exist")
    connect_args = {}
    if url.get_backend_name() in ("postgresql", "mysql"):
        connect_args["connect_timeout"] = connect_timeout
    try:
        return sa.create_engine(url, connect_args=connect_args, pool_pre_ping=True)
    except NoSuchModuleError as error:
        raise LwecInputError(
            f"database_url {mask_url(database_url)!r} names a database dialect or driver that SQLAlchemy does "
            f"not know ({url.drivername!r}): {error}"
        ) from error
    except ModuleNotFoundError as error:
        raise LwecInputError(missing_driver_message(database_url, url, error.name or "")) from error


def missing_driver_message(database_url: str, url: sa.URL, module: str) -> str:
    """A one-line error naming the pip package that provides the missing driver ``module``."""
    package = DRIVER_PACKAGES.get(module.split(".")[0], module.split(".")[0])
    return (
        f"database_url {mask_url(database_url)!r} needs the database driver {module!r} "
        f"(dialect {url.drivername!r}), which is not installed: pip install '{package}'"
    )


def check_driver(database_url: str) -> None:
    """Raise :class:`LwecInputError` now if ``database_url`` is malformed or its driver is missing."""
    open_engine(database_url).dispose()
