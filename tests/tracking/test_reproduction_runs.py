"""Reproductions are logged like consensus runs: same store resolution, artifact location and run writer."""

import json
from pathlib import Path

import numpy as np
import pytest
from mlflow import MlflowClient

from helpers.pipeline import free_port, unique
from helpers.pools import synthetic_pool
from helpers.tracking import log_model_run
from lwec_tasks.experiments.reproduce import reproduce
from lwec_tasks.tracking import (
    TrackingError,
    log_reproduction,
    resolve_tracking_uri,
    run_writer,
)


@pytest.fixture(scope="module")
def result() -> dict:
    return reproduce(synthetic_pool(), runs=2, ensemble_size=4, methods="LWEA,EAC", ks="2..5")


def test_reproductions_and_consensus_runs_share_the_default_store_and_artifacts(monkeypatch, tmp_path, result):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    consensus_id = log_model_run(resolve_tracking_uri(), "lwec-demo", metrics={"nmi": 0.5})
    parent_id = log_reproduction(result)  # no URI given: the same default as consensus runs

    store = f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    client = MlflowClient(store)
    artifacts = (tmp_path.resolve() / "mlartifacts").as_uri()
    for run_id in (consensus_id, parent_id):
        run = client.get_run(run_id)  # both runs are in the one default store
        assert run.info.status == "FINISHED"
        assert run.info.artifact_uri.startswith(artifacts + "/")
    assert client.get_experiment_by_name("lwec-reproduce").artifact_location == artifacts
    assert client.get_experiment_by_name("lwec-demo").artifact_location == artifacts
    logged = json.loads(Path(client.download_artifacts(parent_id, "reproduction.json", str(tmp_path))).read_text())
    assert logged["methods"]["EAC"]["nmi"] == result["methods"]["EAC"]["nmi"]
    assert not (tmp_path / "mlruns").exists()


def test_each_method_is_a_finished_nested_run(mlflow_store, result):
    experiment = unique("reproduce")
    parent_id = log_reproduction(result, tracking_uri=mlflow_store, experiment=experiment)
    client = MlflowClient(mlflow_store)
    parent = client.get_run(parent_id)
    assert parent.info.run_name == "reproduce toy"
    assert parent.data.params["methods"] == "LWEA,EAC" and parent.data.params["ks"] == "2..5"
    children = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent_id}'")
    assert sorted(c.data.tags["method"] for c in children) == ["EAC", "LWEA"]
    for child in children:
        method = child.data.tags["method"]
        assert child.info.status == "FINISHED" and child.info.run_name == method
        assert child.data.params["method"] == method and child.data.params["ensemble_size"] == "4"
        expected = result["methods"][method]["nmi"]["best_k"]["mean"]
        assert child.data.metrics["nmi_best_k_mean"] == pytest.approx(expected)


def test_the_environment_form_of_the_tracking_uri_works_for_reproductions(monkeypatch, mlflow_store, result):
    monkeypatch.setenv("LWEC_TEST_TRACKING", mlflow_store)
    experiment = unique("reproduce-env")
    parent_id = log_reproduction(result, tracking_uri="env:LWEC_TEST_TRACKING", experiment=experiment)
    assert MlflowClient(mlflow_store).get_run(parent_id).info.status == "FINISHED"


def test_an_unreachable_store_fails_a_reproduction_with_the_password_masked(monkeypatch, result):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    uri = f"http://ops:s3cret@127.0.0.1:{free_port()}"
    with pytest.raises(TrackingError) as error:
        log_reproduction(result, tracking_uri=uri)
    assert "logging to MLflow at http://ops:***@127.0.0.1" in str(error.value)
    assert "s3cret" not in str(error.value)


def test_a_failing_block_marks_its_unfinished_runs_failed(mlflow_store):
    experiment = unique("writer")
    with pytest.raises(TrackingError, match=r"failed \(run \w+\): ValueError: boom") as error, \
            run_writer(mlflow_store, experiment) as writer:
        parent = writer.start_run("parent", params={"long": "x" * 900}, metrics={"nan": np.nan, "one": 1})
        child = writer.start_run("child", parent_run_id=parent)
        writer.finish(child)
        raise ValueError("boom")
    client = MlflowClient(mlflow_store)
    assert parent in str(error.value)
    assert client.get_run(parent).info.status == "FAILED"
    assert client.get_run(child).info.status == "FINISHED"
    assert client.get_run(child).data.tags["mlflow.parentRunId"] == parent
    assert len(client.get_run(parent).data.params["long"]) == 500
    assert client.get_run(parent).data.metrics == {"one": 1.0}


def test_the_cli_reports_where_the_reproduction_went(tmp_path, capsys, monkeypatch):
    from helpers.pools import save_npz
    from lwec_tasks.cli import main

    path = save_npz(tmp_path, synthetic_pool())
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    monkeypatch.setenv("LWEC_TEST_TRACKING", f"http://ops:s3cret@127.0.0.1:{free_port()}")
    json_path = tmp_path / "r.json"
    code = main(["reproduce", str(path), "--runs", "2", "--ensemble-size", "4", "--methods", "EAC", "--ks", "2..5",
                 "--json", str(json_path), "--mlflow", "--tracking-uri", "env:LWEC_TEST_TRACKING"])
    captured = capsys.readouterr()
    assert code == 1 and json_path.exists()  # the scores are kept even when MLflow is down
    assert "lwec reproduce: error: logging to MLflow at http://ops:***@" in captured.err
    assert "s3cret" not in captured.err + captured.out
    assert main(["reproduce", str(path), "--runs", "2", "--mlflow", "--tracking-uri", "env:LWEC_TEST_UNSET"]) == 2
    assert "LWEC_TEST_UNSET" in capsys.readouterr().err
