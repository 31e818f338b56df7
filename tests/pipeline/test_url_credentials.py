"""No credential from a URL is printed: a real ``lwec run`` logging to a real MLflow tracking server (http) whose
URI carries a password, everything written to stdout and stderr captured (file descriptors 1 and 2)."""

from __future__ import annotations

import threading

import pytest
from mlflow import MlflowClient

from helpers.blobs import BLOBS_TABLE, write_blobs_table
from lwec_tasks.cli import main as lwec_main
from lwec_tasks.tracking.runs import SUPPRESS_URL_PRINTING

PASSWORD = "s3cretPW42"


@pytest.fixture
def mlflow_server(tmp_path, monkeypatch):
    """``http://127.0.0.1:<port>`` of MLflow's tracking server application (SQLite store, proxied artifacts),
    served from a thread of this process for one test (``mlflow server`` as a process takes a minute to start)."""
    try:
        from mlflow.server import constants
    except ImportError:
        pytest.skip("MLflow releases without mlflow.server.constants resolve a client's mlflow-artifacts URIs "
                    "against the server's store when both share a process, as this in-process server would")

    monkeypatch.setenv(constants.BACKEND_STORE_URI_ENV_VAR, f"sqlite:///{tmp_path / 'server.db'}")
    monkeypatch.setenv(constants.SERVE_ARTIFACTS_ENV_VAR, "true")
    monkeypatch.setenv(constants.ARTIFACTS_DESTINATION_ENV_VAR, str(tmp_path / "artifacts"))
    monkeypatch.setenv(constants.ARTIFACT_ROOT_ENV_VAR, "mlflow-artifacts:/")
    from mlflow.server import app, handlers
    from werkzeug.serving import make_server

    monkeypatch.setattr(handlers, "_tracking_store", None)  # the store of the URI set above
    monkeypatch.setattr(handlers, "_model_registry_store", None)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


def test_a_password_in_an_http_tracking_uri_is_never_printed(prefect_server, mlflow_server, tmp_path, capfd,
                                                            monkeypatch):
    monkeypatch.setenv(SUPPRESS_URL_PRINTING, "false")
    monkeypatch.delenv(SUPPRESS_URL_PRINTING)  # unset now, and again after the test
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    database = f"sqlite:///{tmp_path / 'features.db'}"
    write_blobs_table(database, n=200, centers=3, seed=4)
    tracking_uri = mlflow_server.replace("http://", f"http://ops:{PASSWORD}@")
    code = lwec_main(["run", "--database-url", database, "--table", BLOBS_TABLE, "-k", "3", "--ensemble-size", "4",
                      "--seed", "1", "--experiment", "secrets", "--tracking-uri", tracking_uri])
    captured = capfd.readouterr()
    output = captured.out + captured.err
    assert code == 0, output[-4000:]
    assert PASSWORD not in output
    assert "ops:***@127.0.0.1" in output  # the URI is shown, masked
    client = MlflowClient(tracking_uri)
    (run,) = client.search_runs([client.get_experiment_by_name("secrets").experiment_id])
    assert run.info.status == "FINISHED"  # logged through the server the URI names
