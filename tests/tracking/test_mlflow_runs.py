"""MLflow logging, read back through MlflowClient."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from helpers.pipeline import free_port, unique
from lwec_tasks.tracking import (
    TrackingError,
    default_tracking_uri,
    eci_figure,
    mask_uri,
    resolve_tracking_uri,
    run_writer,
)
from lwec_tasks.tracking.figures import cluster_size_bars, png_bytes


def test_a_logged_run_reads_back_complete(mlflow_store, tmp_path):
    experiment = unique("tracking")
    labels = np.array([0, 0, 1, 1, 1])
    clusters = pd.DataFrame({"cluster": [0, 1], "eci": [0.9, 0.2]})
    with run_writer(mlflow_store, experiment) as writer:
        run_id = writer.start_run("r1", params={"method": "lwea", "theta": 0.4, "feature_columns": "x" * 900},
                                  metrics={"nmi": 0.5, "ari": float("nan"), "skipped": None},
                                  tags={"prefect.flow_run_id": "abc"})
        writer.log_table(run_id, clusters, "eci_per_cluster.csv")
        writer.log_dict(run_id, {"output_table": "labels", "rows": 5}, "labels_location.json")
        drawn = {"eci_distribution.png": png_bytes(eci_figure(np.array([0.9, 0.2]), 0.4)),
                 "cluster_sizes.png": png_bytes(cluster_size_bars(np.bincount(labels), "lwea"))}
        writer.log_files(run_id, drawn, "figures")
        writer.finish(run_id)
    client = MlflowClient(mlflow_store)
    run = client.get_run(run_id)
    assert client.get_experiment(run.info.experiment_id).name == experiment
    assert run.info.status == "FINISHED" and run.info.run_name == "r1"
    assert run.data.params["method"] == "lwea" and run.data.params["theta"] == "0.4"
    assert len(run.data.params["feature_columns"]) == 500
    assert run.data.metrics == {"nmi": 0.5}  # NaN and None are not logged
    assert run.data.tags["prefect.flow_run_id"] == "abc"
    files = {a.path for a in client.list_artifacts(run_id)} | {a.path for a in client.list_artifacts(run_id, "figures")}
    assert files >= {"labels_location.json", "eci_per_cluster.csv", "figures",
                     "figures/eci_distribution.png", "figures/cluster_sizes.png"}
    stored = client.download_artifacts(run_id, "figures/eci_distribution.png", str(tmp_path))
    assert Path(stored).read_bytes() == drawn["eci_distribution.png"]
    assert drawn["eci_distribution.png"].startswith(b"\x89PNG")

    table = pd.read_csv(client.download_artifacts(run_id, "eci_per_cluster.csv", str(tmp_path)))
    assert table.to_dict("list") == clusters.to_dict("list")
    (tmp_path / "figures").mkdir()
    png = client.download_artifacts(run_id, "figures/eci_distribution.png", str(tmp_path))
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_unreachable_store_raises_with_the_password_masked(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    uri = f"http://ops:s3cret@127.0.0.1:{free_port()}"
    with pytest.raises(TrackingError) as error, run_writer(uri, "x") as writer:
        writer.start_run("r", params={}, metrics={}, tags={})
    assert "http://ops:***@127.0.0.1" in str(error.value)
    assert "s3cret" not in str(error.value)


def test_tracking_uri_comes_from_argument_then_environment_then_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    assert resolve_tracking_uri() == f"sqlite:///{tmp_path.resolve()}/mlflow.db" == default_tracking_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")
    assert resolve_tracking_uri() == "http://mlflow:5000"
    assert resolve_tracking_uri("sqlite:///x.db") == "sqlite:///x.db"


def test_mask_uri_hides_only_the_password():
    assert mask_uri("https://u:p@host:5000/path") == "https://u:***@host:5000/path"
    assert mask_uri("sqlite:///tmp/mlflow.db") == "sqlite:///tmp/mlflow.db"
    assert mask_uri("https://mlflow:5000/?token=s3cret&x=1") == "https://mlflow:5000/?token=***&x=1"
    assert "s3cret" not in mask_uri("databricks://profile?access_token=s3cret")


def test_one_masker_serves_tracking_uris_and_database_urls():
    import lwec_tasks.io as io
    import lwec_tasks.masking as masking
    import lwec_tasks.tracking as tracking

    assert mask_uri is io.mask_url is masking.mask_url
    assert tracking.url_has_credentials is io.url_has_credentials is masking.url_has_credentials
    assert mask_uri("postgresql+psycopg://lwec@db/x?password=s3cret") == "postgresql+psycopg://lwec@db/x?password=***"


def test_tracking_uri_can_come_from_a_named_environment_variable(monkeypatch):
    monkeypatch.setenv("SOME_TRACKING_URI", "http://u:p@mlflow:5000")
    assert resolve_tracking_uri("env:SOME_TRACKING_URI") == "http://u:p@mlflow:5000"
