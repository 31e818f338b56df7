"""Shared fixtures: hypothesis settings, Prefect servers, an MLflow store, databases.

Session-scoped servers start once per test session, whichever folder asks first.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from helpers.pipeline import free_port, postgres_url_or_skip, start, stop, wait_for
from helpers.workers import isolate_worker

isolate_worker()

# numba compiles on first use; no per-example deadline.
settings.register_profile("lwec", deadline=None, max_examples=60)
settings.load_profile("lwec")


@dataclass(frozen=True)
class PrefectApi:
    """A running Prefect server: its API URL, the environment for its clients, and its log file."""

    url: str
    env: dict
    log: Path


@pytest.fixture(scope="session")
def prefect_server(prefect_api):
    """Flows run in this process report to the session's ``prefect_api`` server.

    One server per test process, not two: each idles at a few percent of a core all session and takes
    20–60 s to start on a busy machine. Tests tell their runs apart by flow run, deployment or table name.
    """
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: prefect_api.url}):
        yield
        _flush_prefect_logs()


def _flush_prefect_logs() -> None:
    """Send the run logs still queued while the server is up (else they fail against a stopped server at exit)."""
    import logging

    from prefect.logging.handlers import APILogHandler

    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in logging.root.manager.loggerDict)]
    for handler in {h for logger in loggers for h in getattr(logger, "handlers", ())}:
        if isinstance(handler, APILogHandler):
            handler.flush()
            return


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory):
    """A ``prefect server start`` process on localhost with its own home, shared by the session."""
    home = tmp_path_factory.mktemp("prefect-home")
    port = free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "2",
    }
    env.pop("PREFECT_API_URL", None)
    log = home / "server.log"
    server = start([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                   env, log, home)
    api_url = f"http://127.0.0.1:{port}/api"
    try:
        wait_for(lambda: urllib.request.urlopen(f"{api_url}/health", timeout=2).status == 200, 120,
                 "the Prefect server", server, log)
        yield PrefectApi(api_url, {**env, "PREFECT_API_URL": api_url}, log)
    finally:
        stop(server)


@pytest.fixture(scope="session")
def mlflow_store(tmp_path_factory) -> str:
    """A local SQLite MLflow tracking URI shared by the session (creating one takes seconds)."""
    directory = tmp_path_factory.mktemp("mlflow")
    return f"sqlite:///{directory / 'mlflow.db'}"


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'features.db'}"


@pytest.fixture
def postgres_url() -> str:
    return postgres_url_or_skip()
