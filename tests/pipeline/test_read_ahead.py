"""The table read while Prefect's temporary server starts (``lwec run``), taken by the run's load task."""

import numpy as np
import pytest
import sqlalchemy as sa

from flows.consensus import consensus_flow
from helpers.blobs import blobs_run_parameters, write_blobs_table
from helpers.pipeline import expected_labels, read_labels
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.preflight import check_consensus_request, request_key
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.stages import read as read_stage

FEATURES = ["f0", "f1", "f2", "f3"]


@pytest.fixture(autouse=True)
def nothing_held_between_tests():
    read_stage._READ_AHEAD.clear()
    yield
    read_stage._READ_AHEAD.clear()


def test_the_run_takes_the_table_read_ahead_without_reading_it_again(prefect_server, mlflow_store, sqlite_url,
                                                                     monkeypatch):
    frame = write_blobs_table(sqlite_url)
    parameters = blobs_run_parameters(sqlite_url, mlflow_store, "ahead")
    request = ConsensusRequest(**parameters)
    check_consensus_request(request)
    read_stage.read_ahead(request)
    ((held, lines),) = read_stage._READ_AHEAD.values()
    assert held.n_rows == len(frame) and held.read_ahead and any("Loaded 240 rows" in r.getMessage() for r in lines)

    def read_again(*args, **kwargs):
        raise AssertionError("the table was read a second time")

    monkeypatch.setattr(read_stage, "read_partitions", read_again)
    # The flow gets the URL through an environment variable (as `lwec run` passes one with a password).
    monkeypatch.setenv("LWEC_AHEAD_DATABASE_URL", sqlite_url)
    summary = consensus_flow(**{**parameters, "database_url": "env:LWEC_AHEAD_DATABASE_URL"})

    stored = read_labels(sqlite_url, summary["output_table"], summary["run_key"])
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
    np.testing.assert_array_equal(stored["label"].to_numpy(), expected.loc[stored["id"]].to_numpy())
    assert summary["timings"]["load"] >= held.seconds  # the read's own seconds count as the load stage's
    assert read_stage._READ_AHEAD == {}


def test_a_table_read_for_another_request_is_not_taken(prefect_server, mlflow_store, sqlite_url, monkeypatch):
    frame = write_blobs_table(sqlite_url)
    parameters = blobs_run_parameters(sqlite_url, mlflow_store, "ahead")
    read_stage.read_ahead(ConsensusRequest(**{**parameters, "feature_columns": ["f0", "f1"]}))
    reads = []
    original = read_stage.read_partitions
    monkeypatch.setattr(read_stage, "read_partitions", lambda *a, **k: reads.append(a) or original(*a, **k))

    summary = consensus_flow(**parameters)

    assert len(reads) == 1
    stored = read_labels(sqlite_url, summary["output_table"], summary["run_key"])
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
    np.testing.assert_array_equal(stored["label"].to_numpy(), expected.loc[stored["id"]].to_numpy())


def test_the_request_key_ignores_only_what_the_read_does_not_depend_on(sqlite_url, monkeypatch):
    parameters = dict(database_url=sqlite_url, table="blobs", n_clusters=3)
    monkeypatch.setenv("LWEC_AHEAD_DATABASE_URL", sqlite_url)
    key = request_key(ConsensusRequest(**parameters))
    assert request_key(ConsensusRequest(**{**parameters, "database_url": "env:LWEC_AHEAD_DATABASE_URL",
                                           "run_name": "nightly-{date}", "tracking_uri": "sqlite:///x.db"})) == key
    for change in (dict(table="other"), dict(n_clusters=4), dict(drop_nonfinite=True), dict(standardize=False),
                   dict(chunk_size=7), dict(id_column="id"), dict(database_url=sqlite_url + "x")):
        assert request_key(ConsensusRequest(**{**parameters, **change})) != key, change


def test_bad_input_met_while_reading_ahead_fails_at_once_and_nothing_is_kept(sqlite_url):
    frame = write_blobs_table(sqlite_url)
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE blobs SET f2 = NULL WHERE id = :id"), {"id": int(frame["id"].iloc[5])})
    engine.dispose()
    with pytest.raises(LwecInputError, match="f2"):
        read_stage.read_ahead(ConsensusRequest(database_url=sqlite_url, table="blobs", n_clusters=3,
                                               label_column="target"))
    assert read_stage._READ_AHEAD == {}


def test_a_failure_of_the_database_is_left_to_the_load_task(sqlite_url, monkeypatch):
    write_blobs_table(sqlite_url)

    def unreachable(*args, **kwargs):
        raise sa.exc.OperationalError("SELECT", {}, Exception("connection refused"))

    monkeypatch.setattr(read_stage, "read_partitions", unreachable)
    read_stage.read_ahead(ConsensusRequest(database_url=sqlite_url, table="blobs", n_clusters=3))
    assert read_stage._READ_AHEAD == {}


READ_IN_THE_BACKGROUND = """
import sys, threading
from lwec_tasks.preflight import check_consensus_request
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.stages import read as read_stage

request = ConsensusRequest(**{parameters!r})
check_consensus_request(request)  # as the command does before the read
off_main = []
sys.addaudithook(lambda event, args: off_main.append(args[0])
                 if event == "import" and threading.current_thread() is not threading.main_thread() else None)
wait = read_stage.start_read_ahead(request)
wait()
((table, _),) = read_stage._READ_AHEAD.values()
print("rows", table.n_rows, "partitions", table.n_partitions)
print("imported off the main thread:", sorted(set(off_main)))
"""


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_read_in_the_background_imports_nothing_while_the_command_imports_the_flow(database, tmp_path, request):
    """Imports in two threads at once can meet half-initialised modules: what the read imports is imported
    before its thread starts. Checked in a fresh interpreter, where nothing was imported by other tests."""
    import subprocess
    import sys

    url = request.getfixturevalue("sqlite_url" if database == "sqlite" else "postgres_url")
    write_blobs_table(url, n=50_000)
    parameters = blobs_run_parameters(url, str(tmp_path / "mlruns"), "background")
    done = subprocess.run([sys.executable, "-c", READ_IN_THE_BACKGROUND.format(parameters=parameters)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "rows 50000 partitions" in done.stdout and "partitions 1\n" not in done.stdout
    assert "imported off the main thread: []" in done.stdout, done.stdout
