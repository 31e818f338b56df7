"""Engines from database URLs, and URLs safe to print or log.

The masking functions (:func:`mask_url`, :func:`url_has_credentials`) live in
:mod:`lwec_tasks.masking`, shared with the MLflow edge, and are re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.errors import DatabaseUnreachableError  # noqa: F401 - re-exported for callers of this module
from lwec_tasks.masking import mask_url, url_has_credentials  # noqa: F401 - re-exported for callers of this module

#: Seconds each connection attempt to a server may take: three attempts (the first and
#: :data:`~lwec_tasks.tasks.retry.DB_RETRIES` retries) plus the waits between them stay under 30 s.
CONNECT_TIMEOUT = 5

#: The driver option bounding a connection attempt, per SQLAlchemy backend that has servers (SQLite has none).
CONNECT_TIMEOUT_OPTION = {"postgresql": "connect_timeout", "mysql": "connect_timeout", "mssql": "timeout"}

#: ``application_name`` of lwec's PostgreSQL sessions unless the URL sets its own: a database administrator finds
#: them in ``pg_stat_activity`` by it.
APPLICATION_NAME = "lwec"


#: pip package that provides each database driver module SQLAlchemy may import.
DRIVER_PACKAGES = {
    "psycopg": "psycopg[binary]", "psycopg2": "psycopg2-binary", "asyncpg": "asyncpg", "pg8000": "pg8000",
    "pymysql": "PyMySQL", "MySQLdb": "mysqlclient", "mysql": "mysql-connector-python", "pyodbc": "pyodbc",
    "oracledb": "oracledb", "cx_Oracle": "cx_Oracle", "pymssql": "pymssql", "duckdb": "duckdb-engine",
    "snowflake": "snowflake-sqlalchemy",
}


#: Resolvers of database-URL references ``PREFIX:NAME`` by prefix; each maps NAME to a URL.
URL_RESOLVERS: dict[str, Callable[[str], str]] = {}


def register_url_resolver(prefix: str, resolver: Callable[[str], str]) -> None:
    """Resolve ``database_url`` values of the form ``PREFIX:NAME`` with ``resolver(NAME)``."""
    URL_RESOLVERS[prefix] = resolver


def resolve_database_url(database_url: str) -> str:
    """``database_url`` itself, or the URL a reference names.

    ``env:VAR`` reads environment variable VAR; other prefixes (``block:NAME``,
    ``secret:NAME``) go to the resolver registered for them. References keep
    credentials out of flow parameters (which the Prefect UI shows).
    """
    prefix, _, name = database_url.partition(":")
    if prefix == "env" and name:
        value = os.environ.get(name)
        if not value:
            raise LwecInputError(f"database_url={database_url!r}: environment variable {name!r} is not set")
        return value
    if prefix in URL_RESOLVERS and name:
        return URL_RESOLVERS[prefix](name)
    return database_url


def is_reference(database_url: str) -> bool:
    """Whether ``database_url`` names where the URL is kept (``env:``, ``block:``, ``secret:``), not the URL."""
    prefix, _, name = database_url.partition(":")
    return bool(name) and (prefix == "env" or prefix in URL_RESOLVERS or prefix in ("block", "secret"))


def open_engine(database_url: str, *, connect_timeout: int = CONNECT_TIMEOUT, shared: bool = False,
                parameter: str = "database_url") -> sa.Engine:
    """Create an engine for ``database_url`` (nothing is connected yet): the one place lwec makes engines. The
    run's engine is its :class:`~lwec_tasks.io.label_store.LabelStore`'s; an engine for one block (a partition's
    task, a command-line tool, the check of a database-backed MLflow store) is :func:`opened_engine`'s.

    ``connect_timeout`` (seconds, default :data:`CONNECT_TIMEOUT`) bounds each
    connection attempt on servers (PostgreSQL, MySQL, SQL Server: :data:`CONNECT_TIMEOUT_OPTION`) so an
    unreachable host fails promptly and can be retried; SQLite files ignore it. PostgreSQL sessions
    are named :data:`APPLICATION_NAME` unless the URL names them. ``shared``: for one of several tasks working
    on the same database at once (partitions on threads or Dask workers): a SQLite file gets a long lock wait,
    since its writers take turns. ``parameter`` names the URL in errors (default ``database_url``).
    """
    database_url = resolve_database_url(database_url)
    if shared:
        database_url = with_lock_wait(database_url)
    try:
        url = sa.make_url(database_url)
    except ArgumentError as error:
        raise LwecInputError(f"{parameter} is not a valid SQLAlchemy URL: {mask_url(database_url)!r}") from error
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
            and "uri" not in url.query and not os.path.exists(url.database):
        # sqlite3 would silently create an empty file here.
        raise LwecInputError(f"{parameter} {mask_url(database_url)!r}: SQLite file {url.database!r} does not exist")
    connect_args = {}
    if url.get_backend_name() in CONNECT_TIMEOUT_OPTION:
        connect_args[CONNECT_TIMEOUT_OPTION[url.get_backend_name()]] = connect_timeout
    if url.get_backend_name() == "postgresql" and "application_name" not in url.query:
        connect_args["application_name"] = APPLICATION_NAME
    try:
        return sa.create_engine(url, connect_args=connect_args, pool_pre_ping=True)
    except NoSuchModuleError as error:
        raise LwecInputError(
            f"{parameter} {mask_url(database_url)!r} names a database dialect or driver that SQLAlchemy does "
            f"not know ({url.drivername!r}): {error}"
        ) from error
    except ModuleNotFoundError as error:
        raise LwecInputError(missing_driver_message(database_url, url, error.name or "", parameter)) from error


#: Seconds a SQLite writer waits for the file lock held by another (SQLite has one writer at a time).
SQLITE_LOCK_WAIT_SECONDS = 600


def with_lock_wait(database_url: str) -> str:
    """``database_url`` with a :data:`SQLITE_LOCK_WAIT_SECONDS` lock wait when it is a SQLite file's URL that
    sets none; any other URL as it is (one that does not parse too: :func:`open_engine` says why)."""
    try:
        url = sa.make_url(database_url)
    except ArgumentError:
        return database_url
    if url.get_backend_name() != "sqlite" or "timeout" in url.query:
        return database_url
    return url.update_query_dict({"timeout": str(SQLITE_LOCK_WAIT_SECONDS)}).render_as_string(hide_password=False)


@contextmanager
def opened_engine(database_url: str, **options) -> Iterator[sa.Engine]:
    """:func:`open_engine` for the block (its keyword ``options``), disposed of when it ends."""
    engine = open_engine(database_url, **options)
    try:
        yield engine
    finally:
        engine.dispose()


def missing_driver_message(database_url: str, url: sa.URL, module: str, parameter: str = "database_url") -> str:
    """A one-line error naming the pip package that provides the missing driver ``module``."""
    package = DRIVER_PACKAGES.get(module.split(".")[0], module.split(".")[0])
    return (
        f"{parameter} {mask_url(database_url)!r} needs the database driver {module!r} "
        f"(dialect {url.drivername!r}), which is not installed: pip install '{package}'"
    )
