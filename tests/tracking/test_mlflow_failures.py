"""An MLflow store that is down or refuses: a one-line TrackingError within seconds, never minutes.

Real sockets throughout: a closed port, a local HTTP server answering 403 / 500 / late, a PostgreSQL URL
on a closed port.
"""

import importlib.util
import os
import time

import pytest
from tracking.http_answers import answering_server, closed_port, mlflow_error_body, unset_mlflow_http_settings

from helpers.tracking import log_model_run
from lwec_tasks.tracking import TrackingError
from lwec_tasks.tracking.limits import HTTP_REQUEST_DEFAULTS


def failure(uri: str) -> tuple[TrackingError, float]:
    """The TrackingError of logging a run to ``uri``, and the seconds it took to come."""
    started = time.perf_counter()
    with pytest.raises(TrackingError) as error:
        log_model_run(uri, "lwec", metrics={"nmi": 0.5})
    return error.value, time.perf_counter() - started


@pytest.fixture
def lwec_defaults(monkeypatch):
    """MLflow's HTTP settings unset, so lwec's defaults apply (restored after the test)."""
    unset_mlflow_http_settings(monkeypatch)


def test_a_closed_port_fails_within_seconds_with_the_store_named(lwec_defaults):
    port = closed_port()
    error, seconds = failure(f"http://ops:s3cret@127.0.0.1:{port}")
    message = str(error)
    assert seconds < 15
    assert message == (f"logging to MLflow at http://ops:***@127.0.0.1:{port} failed: "
                       "the connection was refused (MlflowException)")
    assert not error.retryable  # MLflow already retried every request
    assert {name: os.environ[name] for name in HTTP_REQUEST_DEFAULTS} == HTTP_REQUEST_DEFAULTS


def test_settings_the_user_made_are_kept(lwec_defaults, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "7")
    failure(f"http://127.0.0.1:{closed_port()}")
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "0"
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "7"
    factor = "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"
    assert os.environ[factor] == HTTP_REQUEST_DEFAULTS[factor]


def test_a_server_refusing_with_403_fails_at_once(lwec_defaults):
    with answering_server(403, b"<html><body>Forbidden</body></html>") as server:
        error, seconds = failure(server.url)
    assert seconds < 5 and len(server.paths) == 1  # a refusal is not retried
    assert str(error) == (f"logging to MLflow at {server.url} failed: "
                          "the store refused the request with HTTP 403 (MlflowException)")
    assert not error.retryable


def test_an_mlflow_error_answer_is_quoted(lwec_defaults):
    body = mlflow_error_body("PERMISSION_DENIED", "User ops may not read experiment 'lwec'.\nAsk an admin.")
    with answering_server(403, body, "application/json") as server:
        error, seconds = failure(server.url)
    assert seconds < 5
    assert str(error) == (f"logging to MLflow at {server.url} failed: RestException: PERMISSION_DENIED: "
                          "User ops may not read experiment 'lwec'.")


def test_a_server_failing_with_500_is_asked_three_times(lwec_defaults):
    with answering_server(500, b"internal error") as server:
        error, seconds = failure(server.url)
    assert seconds < 15
    assert len(server.paths) == 3  # the first request and lwec's default of 2 retries
    assert "failed: the store answered HTTP 500 to every attempt (MlflowException)" in str(error)


def test_a_server_that_never_answers_times_out(lwec_defaults, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "1")
    with answering_server(200, b"{}", "application/json", delay=30) as server:
        error, seconds = failure(server.url)
    assert seconds < 15 and len(server.paths) == 3
    assert "failed: the store did not answer in time (MlflowException)" in str(error)


def test_a_database_store_that_is_down_fails_at_once_and_may_be_retried(lwec_defaults):
    uri = f"postgresql+psycopg://lwec:s3cret@127.0.0.1:{closed_port()}/mlflow"
    error, seconds = failure(uri)
    assert seconds < 15  # MLflow alone would retry for about 100 s
    assert str(error).startswith("logging to MLflow at postgresql+psycopg://lwec:***@127.0.0.1:")
    assert "s3cret" not in str(error) and "\n" not in str(error)
    assert error.retryable


def test_a_database_store_whose_driver_is_missing_names_the_tracking_uri_and_the_package(lwec_defaults):
    if importlib.util.find_spec("pg8000") is not None:
        pytest.skip("pg8000 is installed here: its absence is what this test needs")
    error, _ = failure(f"postgresql+pg8000://lwec:s3cret@127.0.0.1:{closed_port()}/mlflow")
    assert "tracking_uri 'postgresql+pg8000://lwec:***@127.0.0.1:" in str(error)
    assert "pip install 'pg8000'" in str(error) and "s3cret" not in str(error)
    assert not error.retryable  # installing the driver, not waiting, mends it


def test_retryable_survives_pickling():
    import pickle

    error = pickle.loads(pickle.dumps(TrackingError("down", retryable=True)))
    assert str(error) == "down" and error.retryable
