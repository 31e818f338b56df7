"""Isolation of pytest-xdist workers: each worker process gets its own Prefect home and PostgreSQL database.

Two workers sharing a Prefect home would share its SQLite database, profiles and result storage; two sharing a
PostgreSQL database would see each other's tables (tests that check what a run left behind list them). A home and
a database per worker keep them apart as two separate CI jobs would."""

from __future__ import annotations

import os
import sys
import tempfile

from helpers.pipeline import POSTGRES_URL_ENV


def isolate_worker() -> None:
    """Give this xdist worker (``$PYTEST_XDIST_WORKER`` = ``gw0``, ``gw1``, …) a fresh ``$PREFECT_HOME`` and point
    ``$LWEC_TEST_POSTGRES_URL`` at a database of its own, ``<database>_<worker>``, created when absent.

    Called from the root conftest before any test module imports Prefect; does nothing outside xdist. Where the
    test role may not create databases, the worker keeps the shared one (and says so on stderr)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix=f"prefect-home-{worker}-")
    url = os.environ.get(POSTGRES_URL_ENV)
    if url:
        os.environ[POSTGRES_URL_ENV] = _database_of_worker(url, worker)


def _database_of_worker(url: str, worker: str) -> str:
    """The URL of database ``<database>_<worker>`` on ``url``'s server, created if needed; ``url`` itself when the
    server cannot be reached or the role may not create it."""
    import sqlalchemy as sa

    base = sa.make_url(url)
    name = f"{base.database}_{worker}"
    try:
        engine = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                exists = connection.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :name"),
                                            {"name": name}).first()
                if not exists:
                    quoted = connection.dialect.identifier_preparer.quote(name)
                    connection.execute(sa.text(f"CREATE DATABASE {quoted}"))
        finally:
            engine.dispose()
    except (sa.exc.SQLAlchemyError, ImportError) as error:
        print(f"xdist worker {worker}: sharing {base.database!r} ({type(error).__name__}: {error})".splitlines()[0],
              file=sys.stderr)
        return url
    return base.set(database=name).render_as_string(hide_password=False)


def computed_once(tmp_path_factory, name: str, compute):
    """``compute()``'s JSON-able result, computed by the first xdist worker that asks and read back by the others.

    Workers share the parent of their base temporary directories; the result is kept there as ``<name>.json``,
    keyed by this test run's id, under a file lock, so a module-scoped fixture that pytest-xdist's work stealing
    sets up on several workers costs its computation once per run. Outside xdist it is ``compute()``."""
    import fcntl
    import json

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return compute()
    path = tmp_path_factory.getbasetemp().parent / f"{name}-{run}.json"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return json.loads(path.read_text())
        result = compute()
        path.write_text(json.dumps(result))
        return result
