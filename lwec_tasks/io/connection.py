"""Engines from database URLs, and URLs safe to print or log."""

from __future__ import annotations

import os

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from lwec_tasks.errors import LwecInputError


class DatabaseUnreachableError(ConnectionError):
    """The database could not be reached (worth retrying, unlike bad input)."""


def mask_url(url: str) -> str:
    """Return ``url`` with any password replaced by ``***``.

    Strings that do not parse as a URL are returned with everything before an
    ``@`` hidden, so a malformed URL cannot leak a password either.
    """
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "***@" + url.rsplit("@", 1)[1] if "@" in url else url


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
            f"database_url {mask_url(database_url)!r} names a driver that is not installed: {error}"
        ) from error
