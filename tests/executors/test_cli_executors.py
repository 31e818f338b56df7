"""`lwec run -k auto --dask-address …` and `lwec assign --dask-address …` as an operator runs them: the same
labels as without the address (each command in its own process, against a Prefect server already up)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from dask_helpers import blobs_table, labels_of

pytestmark = pytest.mark.slow


def lwec(cwd, env: dict, *argv) -> str:
    """stdout of ``lwec ARGV`` in a fresh process; fails the test with the output when it exits non-zero."""
    done = subprocess.run([sys.executable, "-m", "lwec_tasks", *argv], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def all_labels(url: str, table: str) -> pd.DataFrame:
    engine = sa.create_engine(url)
    try:
        return pd.read_sql_table(table, engine).sort_values("id", ignore_index=True)
    finally:
        engine.dispose()


def test_auto_k_and_assign_on_dask_give_the_in_process_labels(prefect_api, dask_scheduler, tmp_path, monkeypatch):
    import lwec_tasks.stages.planning as planning

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    blobs_table(url, "blobs", 4000, n_features=6, centers=5, cluster_std=2.5, seed=4)
    env = {**prefect_api.env, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           planning.PARTITION_ROWS_ENV: "1000"}
    monkeypatch.setattr(planning, "MIN_PARTITION_ROWS", 1000)  # the same rule in this process, for the record
    common = ["--database-url", url, "--table", "blobs", "-k", "auto", "--method", "lwgp", "--ensemble-size", "6",
              "--seed", "5"]
    lwec(tmp_path, env, "run", *common, "--run-name", "here", "--output-table", "here_labels")
    out = lwec(tmp_path, env, "run", *common, "--run-name", "there", "--output-table", "there_labels",
               "--dask-address", dask_scheduler)
    here, there = labels_of(url, "here_labels", "here"), labels_of(url, "there_labels", "there")
    assert here["id"].tolist() == there["id"].tolist() and len(here) == 4000
    assert here["label"].tolist() == there["label"].tolist()

    model_uri = next(line.split()[1] for line in out.splitlines() if line.startswith("Model:"))
    for name, extra in (("assigned_here", []), ("assigned_there", ["--dask-address", dask_scheduler])):
        lwec(tmp_path, env, "assign", "--database-url", url, "--table", "blobs", "--model-uri", model_uri,
             "--output-table", name, *extra)
    a, b = (all_labels(url, name) for name in ("assigned_here", "assigned_there"))
    assert a["id"].tolist() == b["id"].tolist() == there["id"].tolist()
    np.testing.assert_array_equal(a["label"].to_numpy(), b["label"].to_numpy())
    assert np.mean(b["label"].to_numpy() == there["label"].to_numpy()) >= 0.95  # the model gives the run's labels back
