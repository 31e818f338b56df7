"""``lwec demo``: the README's main job, with its default paths in the working directory."""

import io
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from mlflow import MlflowClient
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

from helpers.pipeline import expected_labels, read_labels
from helpers.processes import left_running
from lwec_tasks.cli import main as lwec_main


def test_demo_builds_digits_runs_the_flow_and_says_where_results_went(prefect_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = io.StringIO()
    with redirect_stdout(out):
        assert lwec_main(["demo"]) == 0
    printed = out.getvalue()

    database = f"sqlite:///{tmp_path / 'lwec_demo.db'}"
    tracking_uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    engine = sa.create_engine(database)
    with engine.connect() as connection:
        digits = pd.read_sql(sa.text("SELECT * FROM digits"), connection)
    engine.dispose()
    assert digits.shape == (1797, 66)  # id, 64 pixels, target

    labels = read_labels(database, "digits_lwec_labels")
    features = [c for c in digits.columns if c not in ("id", "target")]
    expected = expected_labels(digits, features, k=10, ensemble_size=10, seed=0)
    np.testing.assert_array_equal(labels["label"], expected.loc[labels["id"]])

    client = MlflowClient(tracking_uri)
    (run,) = client.search_runs([client.get_experiment_by_name("lwec-demo").experiment_id])
    assert run.data.metrics["nmi"] > 0.5  # digits classes are recoverable
    assert f"run {run.info.run_id} in experiment 'lwec-demo'" in printed
    assert "table 'digits_lwec_labels'" in printed
    assert f"mlflow ui --backend-store-uri {tracking_uri}" in printed
    assert (tmp_path / "mlartifacts").is_dir()  # artifacts beside the store, not in the project
    # Every figure is printed as a file that exists, and the model URI is printed with the assign command.
    figures = [line.split(": ", 1) for line in printed.splitlines() if line.strip().endswith(".png")]
    assert {name.strip() for name, _ in figures} == {"eci_distribution.png", "cluster_sizes.png", "cluster_map.png",
                                                      "dendrogram.png", "row_confidence.png", "cluster_profiles.png",
                                                      "consensus_cdf.png", "k_curve.png", "cluster_labels.png"}
    for _, path in figures:
        assert Path(path).is_file() and Path(path).stat().st_size > 1000, path
    assert f"runs:/{run.info.run_id}/model" in printed and "lwec assign" in printed

    flow_run_id = labels["flow_run_id"].iloc[0]
    with get_client(sync_client=True) as prefect:
        (artifact,) = prefect.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            key=ArtifactFilterKey(any_=["lwec-consensus-summary"])))
    assert run.info.run_id in artifact.data and "digits_lwec_labels" in artifact.data


def test_demo_as_a_program_prints_its_whole_outcome_and_leaves_no_server_behind(tmp_path):
    """Run as ``python -m lwec_tasks`` the command ends its process as soon as the outcome is printed
    (skipping the interpreter's teardown); the output is still complete and the temporary server is gone."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI")}
    process = subprocess.Popen([sys.executable, "-m", "lwec_tasks", "demo", "--dataset", "iris", "-M", "4"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**environment, "PREFECT_LOGGING_LEVEL": "INFO"}, start_new_session=True)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    printed = out.strip().splitlines()
    assert printed[0].startswith("Built table 'iris'") and printed[-1].strip().endswith(".png")
    assert any(line.strip().startswith("dendrogram.png: ") for line in printed)
    assert Path(printed[-1].split(": ", 1)[1]).is_file()
    assert left_running(process.pid) == []  # the temporary server is gone with the command
