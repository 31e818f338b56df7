"""Nightly runs: the quality gate (promote or hold), the champion alias and labelling by it, runs named after their
work, the artifacts in Prefect, system metrics in MLflow."""

import re

import pytest
from mlflow import MlflowClient

from flows.assign import assign_flow
from flows.consensus import consensus_flow
from helpers.blobs import blobs_run_parameters, write_blobs_table
from helpers.pipeline import read_labels, unique
from lwec_tasks.cli import main as lwec_main
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.gate import RunHeld
from lwec_tasks.request import ConsensusRequest


@pytest.mark.parametrize("promote_if, message", [
    ("confidence_mean=>0.5", "promote_if condition 'confidence_mean=>0.5' is not <metric><operator><number>"),
    ("confidence_mean>=0.5, pac~0.1", "promote_if condition 'pac~0.1' is not"),
    ("pac<=low", "promote_if condition 'pac<=low': 'low' is not a finite number"),
    ("confidense_mean>=0.5", "promote_if condition 'confidense_mean>=0.5': unknown metric 'confidense_mean'; "
                             "available metrics: confidence_mean, "),
])
def test_a_bad_condition_is_refused_naming_it(promote_if, message, sqlite_url):
    with pytest.raises(LwecInputError, match=re.escape(message)):
        ConsensusRequest(database_url=sqlite_url, table="t", n_clusters=3, promote_if=promote_if)


def test_lwec_run_refuses_a_bad_gate_before_anything_runs(sqlite_url, capsys):
    code = lwec_main(["run", "--database-url", sqlite_url, "--table", "t", "-k", "2", "--promote-if", "pac>>0.1"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "lwec run: error: promote_if condition 'pac>>0.1' is not <metric><operator><number> with an operator among "
        ">=, <=, ==, >, < (e.g. 'confidence_mean>=0.8')")


def test_a_gated_run_is_promoted_then_a_worse_one_held(prefect_server, mlflow_store, sqlite_url, monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    frame = write_blobs_table(sqlite_url, n=120)
    model = unique("gated")
    parameters = blobs_run_parameters(sqlite_url, mlflow_store, "gate", register_model=model, output_table="gated",
                                      ensemble_size=4)
    promoted = consensus_flow(**parameters, run_name="night1", promote_if="confidence_mean>=0.5, pac<=1")
    assert promoted["gate"]["outcome"] == "promoted"
    assert promoted["gate"]["model_alias_uri"] == f"models:/{model}@champion"
    assert set(read_labels(sqlite_url, "gated_latest")["run_key"]) == {"night1"}
    client = MlflowClient(mlflow_store)
    champion = client.get_model_version_by_alias(model, "champion")
    assert champion.run_id == promoted["mlflow_run_id"]

    # Named after its work, in Prefect and in MLflow; CPU and memory sampled; a table and a link artifact.
    run = client.get_run(promoted["mlflow_run_id"])
    assert run.info.run_name == "blobs-k3-lwea" == run.data.tags["prefect.flow_run_name"]
    assert len(client.get_metric_history(run.info.run_id, "system/cpu_utilization_percentage")) >= 2
    assert client.get_metric_history(run.info.run_id, "system/process_memory_rss_megabytes")[0].value > 0
    flow_run_id = read_labels(sqlite_url, "gated", "night1")["flow_run_id"].iloc[0]
    with get_client(sync_client=True) as prefect:
        artifacts = prefect.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    kinds = {artifact.key: artifact for artifact in artifacts}
    assert set(kinds) == {"lwec-consensus-summary", "lwec-cluster-profiles", "lwec-mlflow-run"}
    # The flow run's own artifacts, not its publish-summary task run's: the UI's Artifacts tab lists them under
    # "Flow run" (filed under the task run, the tab showed "Flow run: None" above them).
    assert all(a.task_run_id is None and str(a.flow_run_id) == str(flow_run_id) for a in artifacts), artifacts
    profiles, link = kinds["lwec-cluster-profiles"], kinds["lwec-mlflow-run"]
    assert profiles.type == "table" and '"mean_confidence"' in profiles.data and '"jaccard_previous"' in profiles.data
    assert f"[MLflow run {promoted['mlflow_run_id']}]({promoted['mlflow_run_url']})" in link.data  # a link artifact

    # A run failing two of three conditions is held: readable under its run key, nothing promoted, Failed.
    state = consensus_flow(**parameters, run_name="night2", return_state=True,
                           promote_if="confidence_mean>=1.5,jaccard_previous_mean>=0,n_clusters_found<3")
    assert state.is_failed()
    with pytest.raises(RunHeld) as held:
        state.result()
    message = str(held.value)
    assert re.search(r"confidence_mean=0\.\d+ \(needs >=1\.5\), n_clusters_found=3 \(needs <3\)", message), message
    assert "jaccard_previous_mean=" not in message and message in state.message
    assert len(read_labels(sqlite_url, "gated", "night2")) == len(frame)
    assert set(read_labels(sqlite_url, "gated_latest")["run_key"]) == {"night1"}
    assert client.get_model_version_by_alias(model, "champion").version == champion.version
    assert len(client.search_model_versions(f"name = '{model}'")) == 2

    # New rows are labelled by the champion: the promoted run's labels for its own rows.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    assigned = assign_flow(database_url=sqlite_url, table="blobs", model_uri=f"models:/{model}@champion",
                           output_table="assigned")
    assert assigned["rows_labelled"] == len(frame)
    by_champion = read_labels(sqlite_url, "assigned").set_index("id")["label"]
    night1 = read_labels(sqlite_url, "gated", "night1").set_index("id")["label"]
    assert by_champion.loc[night1.index].tolist() == night1.tolist()
    assert lwec_main(["assign", "--database-url", sqlite_url, "--table", "blobs", "--model-uri",
                      f"models:/{model}@champion", "--tracking-uri", mlflow_store, "--output-table", "by_cli"]) == 0
    assert read_labels(sqlite_url, "by_cli").set_index("id")["label"].loc[night1.index].tolist() == night1.tolist()
