"""The database each SQL test runs against: a SQLite file, and the PostgreSQL test server when one is reachable."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from helpers.pipeline import postgres_url_or_skip, unique
from lwec_tasks.io import open_engine


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """The URL of a new SQLite database file under ``tmp_path``, or of the PostgreSQL test server (skips when none)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'test.db'}"
        sa.create_engine(url).connect().close()  # create the file
        return url
    return postgres_url_or_skip()


@pytest.fixture
def engine(db_url):
    """An engine of ``db_url``, disposed afterwards."""
    engine = open_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def pg_schema():
    """``(url, schema)``: the PostgreSQL test server's URL and a fresh schema on it, dropped with everything in it
    afterwards (skips when no server is reachable)."""
    url = postgres_url_or_skip()
    schema = unique("lwec_schema")
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.schema.CreateSchema(schema))
    try:
        yield url, schema
    finally:
        with engine.begin() as connection:
            connection.execute(sa.schema.DropSchema(schema, cascade=True))
        engine.dispose()
