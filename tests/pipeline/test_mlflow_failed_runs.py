"""The consensus flow with MLflow down or refusing: the labels are written, the flow run ends Failed within a
minute with one line saying where the labels are and what to rerun; and a run that logs records its source.

Real sockets: a closed port and a local HTTP server answering 403 stand in for MLflow.
"""

import json
import time

import pytest
from mlflow import MlflowClient
from tracking.http_answers import answering_server, closed_port, unset_mlflow_http_settings

from flows.consensus import consensus_flow
from helpers.blobs import blobs_run_parameters, write_blobs_table
from helpers.pipeline import read_labels
from lwec_tasks.tracking import TrackingError

#: What the brief promises: a failed MLflow logging ends the run within this many seconds.
FAIL_WITHIN_SECONDS = 60


@pytest.fixture
def blobs(sqlite_url, monkeypatch):
    unset_mlflow_http_settings(monkeypatch)  # lwec's request limits, not the test session's
    return sqlite_url, write_blobs_table(sqlite_url, n=300, centers=4, seed=11)


def failed_run(url: str, tracking_uri: str):
    """Run the flow logging to ``tracking_uri``; return its final state and the seconds it took."""
    started = time.perf_counter()
    state = consensus_flow(**blobs_run_parameters(url, tracking_uri, "down", n_clusters=4), return_state=True)
    return state, time.perf_counter() - started


def tracking_attempts(state) -> int:
    """How many times the flow run's log-to-mlflow task ran."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        this_run = FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        task_runs = client.read_task_runs(flow_run_filter=this_run)
    (task_run,) = [t for t in task_runs if t.name.startswith("log-to-mlflow")]
    return task_run.run_count


def assert_labels_kept_and_rerun_explained(state, url: str, shown_uri: str, reachable: bool = False) -> str:
    with pytest.raises(TrackingError) as raised:
        state.result()
    message = str(raised.value)
    labels = read_labels(url, "blobs_lwec_labels")
    (run_key,) = set(labels["run_key"])
    assert len(labels) == 300
    assert message.startswith(f"labels were written to table 'blobs_lwec_labels' (run key '{run_key}', 300 rows), "
                              f"but logging to MLflow at {shown_uri} failed: ")
    if reachable:  # it answered: waiting for it changes nothing
        assert message.endswith(f"; MLflow was reachable, so rerunning as it is would fail the same way; run key "
                                f"'{run_key}' stays published without an MLflow run")
    else:
        assert message.endswith(f"; rerun the same command once MLflow is back: it reuses run key '{run_key}' "
                                "and logs the MLflow run")
    assert "\n" not in message
    assert state.is_failed() and message in state.message
    return message


def test_mlflow_on_a_closed_port_fails_the_run_within_a_minute(prefect_server, blobs, monkeypatch):
    url, _ = blobs
    port = closed_port()
    monkeypatch.setenv("LWEC_TEST_TRACKING_DOWN", f"http://ops:s3cret@127.0.0.1:{port}")
    state, seconds = failed_run(url, "env:LWEC_TEST_TRACKING_DOWN")
    assert seconds < FAIL_WITHIN_SECONDS
    message = assert_labels_kept_and_rerun_explained(state, url, f"http://ops:***@127.0.0.1:{port}")
    assert "the connection was refused" in message and "s3cret" not in state.message
    assert tracking_attempts(state) == 1  # MLflow retried each request already


def test_mlflow_refusing_with_403_fails_the_run_at_once(prefect_server, blobs):
    url, _ = blobs
    with answering_server(403, b"<html>Forbidden</html>") as server:
        state, seconds = failed_run(url, server.url)
    assert seconds < FAIL_WITHIN_SECONDS
    message = assert_labels_kept_and_rerun_explained(state, url, server.url, reachable=True)
    assert "the store refused the request with HTTP 403" in message
    assert tracking_attempts(state) == 1 and len(server.paths) == 1



def test_a_database_store_that_is_down_is_tried_three_times_within_a_minute(prefect_server, blobs):
    url, _ = blobs
    port = closed_port()
    state, seconds = failed_run(url, f"postgresql+psycopg://lwec:s3cret@127.0.0.1:{port}/mlflow")
    assert seconds < FAIL_WITHIN_SECONDS
    message = assert_labels_kept_and_rerun_explained(state, url, f"postgresql+psycopg://lwec:***@127.0.0.1:{port}/mlflow")
    assert "the connection was refused" in message and "s3cret" not in state.message
    assert tracking_attempts(state) == 3  # the first attempt and LWEC_MLFLOW_RETRIES' default of 2


def test_lwec_mlflow_retries_must_be_a_whole_number(monkeypatch):
    from lwec_tasks.core.errors import LwecInputError
    from lwec_tasks.tasks.retry import retries_from_environment

    monkeypatch.setenv("LWEC_MLFLOW_RETRIES", " 0 ")
    assert retries_from_environment("LWEC_MLFLOW_RETRIES", 2) == 0
    monkeypatch.setenv("LWEC_MLFLOW_RETRIES", "")
    assert retries_from_environment("LWEC_MLFLOW_RETRIES", 2) == 2
    monkeypatch.setenv("LWEC_MLFLOW_RETRIES", "-1")
    with pytest.raises(LwecInputError, match="LWEC_MLFLOW_RETRIES='-1': expected a whole number"):
        retries_from_environment("LWEC_MLFLOW_RETRIES", 2)

def test_a_logged_run_records_its_source_table_and_experiment_kind(prefect_server, sqlite_url, mlflow_store):
    write_blobs_table(sqlite_url, n=120, centers=3, seed=5)
    summary = consensus_flow(**blobs_run_parameters(sqlite_url, mlflow_store, "source",
                                                    feature_columns=["f0", "f1", "f2", "f3"]))
    client = MlflowClient(mlflow_store)
    run = client.get_run(summary["mlflow_run_id"])
    (given,) = run.inputs.dataset_inputs
    assert given.dataset.name == "blobs" and given.dataset.source_type == "sql_table"
    assert json.loads(given.dataset.source) == {"url": sqlite_url, "table": "blobs"}
    assert [c["name"] for c in json.loads(given.dataset.schema)["mlflow_colspec"]] == ["f0", "f1", "f2", "f3"]
    assert json.loads(given.dataset.profile)["num_rows"] == 120
    assert {t.key: t.value for t in given.tags} == {"mlflow.data.context": "training"}
    kind = client.get_experiment(run.info.experiment_id).tags["mlflow.experimentKind"]
    assert kind == "custom_model_development"


def test_the_message_for_a_rerun_whose_labels_were_already_there():
    from lwec_tasks.request import ConsensusRequest
    from lwec_tasks.tasks.summary import tracking_failure_message

    request = ConsensusRequest(database_url="sqlite:///x.db", table="t", n_clusters=4,
                               tracking_uri="http://ops:s3cret@mlflow:5000")
    message = tracking_failure_message(request, 0, ConnectionError("Connection refused by mlflow:5000\nmore"), 300)
    assert message == (f"labels were written to table 't_lwec_labels' (run key '{request.run_key}', 300 rows, "
                       "already there from an earlier run), but logging to MLflow at http://ops:***@mlflow:5000 "
                       "failed: the connection was refused (ConnectionError); rerun the same command once "
                       f"MLflow is back: it reuses run key '{request.run_key}' and logs the MLflow run")


@pytest.mark.parametrize(("error", "reachable"), [
    (ConnectionError("HTTPConnectionPool(host='mlflow', port=5000): Max retries exceeded"), False),
    (TimeoutError("ConnectTimeout: timed out"), False),
    (RuntimeError("sqlite3.OperationalError: database is locked"), False),
    (RuntimeError("Input example does not match the model signature. at http://ops:s3cret@mlflow:5000"), True),
    (PermissionError("API request to endpoint /api/2.0/mlflow/runs/create failed with error code 403"), True),
    (RuntimeError("table mcp_servers already exists"), True),
])
def test_the_message_advises_a_rerun_only_when_mlflow_was_unreachable(error, reachable):
    from lwec_tasks.request import ConsensusRequest
    from lwec_tasks.tasks.summary import tracking_failure_message

    request = ConsensusRequest(database_url="sqlite:///x.db", table="t", n_clusters=4,
                               tracking_uri="http://ops:s3cret@mlflow:5000")
    message = tracking_failure_message(request, 300, error, 300)
    assert message.startswith(f"labels were written to table 't_lwec_labels' (run key '{request.run_key}', 300 "
                              "rows), but logging to MLflow at http://ops:***@mlflow:5000 failed: ")
    assert "s3cret" not in message and "\n" not in message
    assert ("once MLflow is back" in message) is not reachable
    assert ("MLflow was reachable, so rerunning as it is would fail the same way" in message) is reachable
