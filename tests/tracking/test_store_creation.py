"""A SQLite MLflow store is created whole or not at all, even when the creating process is killed; an incomplete
store from elsewhere is named with its fix."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from lwec_tasks.tracking.store import IncompleteStoreError, sqlite_store_whole, tracking_client

CREATE = """
import sys
from lwec_tasks.tracking.store import sqlite_store_whole
print("creating", flush=True)
sqlite_store_whole(sys.argv[1])
print("created", flush=True)
"""


def tables(path) -> set[str]:
    with sqlite3.connect(path) as connection:
        return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@pytest.mark.parametrize("delay", [0.5, 1.5, 3.0])
def test_a_store_whose_creator_is_killed_is_absent_or_whole_and_the_next_run_uses_it(tmp_path, delay):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    process = subprocess.Popen([sys.executable, "-c", CREATE, uri], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert process.stdout.readline().strip() == "creating"
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    store = tmp_path / "mlflow.db"
    if store.exists():  # linked into place only once whole
        assert {"alembic_version", "experiments", "runs"} <= tables(store)
    client = tracking_client(uri)  # the next run: creates it, or uses the whole one
    experiment = client.create_experiment(f"after-kill-{delay}")
    run = client.create_run(experiment)
    client.log_param(run.info.run_id, "k", 3)
    assert client.get_run(run.info.run_id).data.params == {"k": "3"}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".creating")] == []


def test_an_incomplete_store_is_named_with_its_fix(tmp_path):
    store = tmp_path / "mlflow.db"
    with sqlite3.connect(store) as connection:  # tables made, no schema version recorded
        connection.execute("CREATE TABLE experiments (experiment_id INTEGER)")
    with pytest.raises(IncompleteStoreError, match=rf"{store}.*incomplete.*mv {store} {store}.broken"):
        sqlite_store_whole(f"sqlite:///{store}")


def test_an_empty_file_becomes_a_whole_store_and_other_stores_are_left_alone(tmp_path):
    store = tmp_path / "mlflow.db"
    store.touch()
    sqlite_store_whole(f"sqlite:///{store}")
    assert "alembic_version" in tables(store)
    sqlite_store_whole("http://127.0.0.1:1/")  # not contacted
    sqlite_store_whole(f"postgresql://nobody@127.0.0.1:1/{tmp_path.name}")
