"""MLflow's process-wide state (:mod:`lwec_tasks.tracking.fluent`): set for a block, then as it was."""

from __future__ import annotations

import mlflow
import pytest

from lwec_tasks.tracking.fluent import using_tracking_uri
from lwec_tasks.tracking.store import TRACKING_URI_ENV


@pytest.fixture
def unset(monkeypatch):
    monkeypatch.delenv(TRACKING_URI_ENV, raising=False)
    mlflow.set_tracking_uri(None)
    yield
    mlflow.set_tracking_uri(None)


def test_a_uri_set_in_the_process_is_set_again(unset, tmp_path):
    mlflow.set_tracking_uri("sqlite:///before.db")
    with using_tracking_uri(f"sqlite:///{tmp_path}/block.db"):
        assert mlflow.get_tracking_uri() == f"sqlite:///{tmp_path}/block.db"
    assert mlflow.get_tracking_uri() == "sqlite:///before.db"


def test_a_uri_from_the_variable_is_left_to_the_variable(unset, monkeypatch, tmp_path):
    monkeypatch.setenv(TRACKING_URI_ENV, "sqlite:///from-variable.db")
    with using_tracking_uri(f"sqlite:///{tmp_path}/block.db"):
        assert mlflow.get_tracking_uri() == f"sqlite:///{tmp_path}/block.db"
    monkeypatch.setenv(TRACKING_URI_ENV, "sqlite:///changed.db")
    assert mlflow.get_tracking_uri() == "sqlite:///changed.db"  # not pinned to the block's or the old value


def test_without_any_uri_none_is_left_set(unset, tmp_path):
    with using_tracking_uri(f"sqlite:///{tmp_path}/block.db"):
        pass
    assert not mlflow.is_tracking_uri_set()
