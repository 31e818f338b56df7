"""Fixtures for the pipeline tests: a Prefect test server, an MLflow store, databases.

Test modules load them with ``pytest_plugins = ["pipeline_fixtures"]``: registered
once, the session-scoped Prefect server starts once per session.
"""

from __future__ import annotations

import pytest

from pipeline_helpers import postgres_url_or_skip


@pytest.fixture(scope="session")
def prefect_server():
    """One temporary Prefect API for the whole session (~20 s once, then ~1–2 s per flow)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


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
