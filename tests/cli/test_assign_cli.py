"""``lwec assign``: a logged consensus model labels a table from the command line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from helpers.pipeline import blobs_frame, read_labels, table_exists, unique, write_frame
from helpers.placement import build_placement
from helpers.tracking import log_model_run
from lwec_tasks import Ensemble, lwgp
from lwec_tasks.cli import main
from lwec_tasks.core.base_clusterings import fit_base_clusterings
from lwec_tasks.core.eci import eci as cluster_eci
from lwec_tasks.core.placement import Standardisation

FEATURES = ["f0", "f1", "f2", "f3"]


@pytest.fixture
def logged_model(mlflow_store, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    frame = blobs_frame(n=200)
    raw = frame[FEATURES].to_numpy(dtype=float)
    scaler = StandardScaler().fit(raw)
    base = fit_base_clusterings(scaler.transform(raw), 5, random_state=1)
    ensemble = Ensemble(base.labels)
    eci = cluster_eci(ensemble, 0.4)
    labels = lwgp(ensemble, 3, random_state=1)
    placement = build_placement(Standardisation(scaler.mean_, scaler.scale_), base, ensemble, eci, labels,
                                "lwgp", 0.4, FEATURES, seed=1)
    run_id = log_model_run(mlflow_store, unique("cli-assign"), placement)
    return f"runs:/{run_id}/model", placement, mlflow_store


def test_lwec_assign_labels_a_table_and_says_where(prefect_server, logged_model, sqlite_url, capsys):
    uri, placement, store = logged_model
    frame = blobs_frame(n=90, seed=11)
    write_frame(sqlite_url, "incoming", frame)
    code = main(["assign", "--database-url", sqlite_url, "--table", "incoming", "--model-uri", uri,
                 "--tracking-uri", store, "--output-table", "incoming_labels"])
    out = capsys.readouterr().out
    assert code == 0
    assert "90 rows labelled by " + uri in out and "'incoming_labels'" in out
    stored = read_labels(sqlite_url, "incoming_labels")
    ordered = frame.sort_values("id")
    np.testing.assert_array_equal(stored["label"], placement.predict(ordered[FEATURES].to_numpy()))
    assert stored["run_key"].iloc[0] in out


@pytest.mark.parametrize("extra, message", [
    (["--model-uri", "runs:/ffffffffffffffffffffffffffffffff/model"],
     "model URI 'runs:/ffffffffffffffffffffffffffffffff/model' does not resolve"),
    (["--feature-columns", "f0,f1"], "differ from the model's feature columns"),
])
def test_lwec_assign_reports_bad_input_in_one_line(prefect_api, logged_model, sqlite_url, tmp_path, extra, message):
    """The console command in its own process, against a Prefect server: exit 2, one line, nothing written."""
    uri, _, store = logged_model
    write_frame(sqlite_url, "incoming", blobs_frame(n=30))
    argv = ["assign", "--database-url", sqlite_url, "--table", "incoming", "--model-uri", uri, *extra]
    done = subprocess.run([sys.executable, "-m", "lwec_tasks", *argv], capture_output=True, text=True, timeout=300,
                          env={**prefect_api.env, "MLFLOW_TRACKING_URI": store}, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("lwec assign: error: ") and message in last
    assert "Traceback" not in done.stderr
    assert not table_exists(sqlite_url, "incoming_lwec_labels")


def test_lwec_assign_verbose_prints_the_traceback(prefect_server, logged_model, sqlite_url, capsys):
    write_frame(sqlite_url, "incoming", blobs_frame(n=30))
    argv = ["assign", "--database-url", sqlite_url, "--table", "incoming", "--model-uri", "models:/nothing/1", "-v"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert 'flows/assign.py", line' in err and "lwec assign: error: model URI 'models:/nothing/1'" in err
