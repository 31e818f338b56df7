"""The table read and the base clusterings generated while Prefect's temporary server starts (``lwec run``),
taken by the run's tasks."""

import numpy as np
import pytest
import sqlalchemy as sa

from flows.consensus import consensus_flow
from helpers.blobs import blobs_run_parameters, write_blobs_table
from helpers.pipeline import expected_labels, read_labels
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.preflight import check_consensus_request, request_key
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.stages import ahead
from lwec_tasks.stages import read as read_stage
from lwec_tasks.tasks import stages as stage_tasks

FEATURES = ["f0", "f1", "f2", "f3"]


@pytest.fixture(autouse=True)
def nothing_held_between_tests():
    ahead._AHEAD.clear()
    yield
    ahead._AHEAD.clear()


def test_the_run_takes_the_table_and_base_clusterings_done_ahead_without_doing_them_again(
        prefect_server, mlflow_store, sqlite_url, monkeypatch):
    frame = write_blobs_table(sqlite_url)
    parameters = blobs_run_parameters(sqlite_url, mlflow_store, "ahead")
    request = ConsensusRequest(**parameters)
    check_consensus_request(request)
    ahead.work_ahead(request)
    (work,) = ahead._AHEAD.values()
    assert work.table.n_rows == len(frame)
    assert any("Loaded 240 rows" in r.getMessage() for r in work.table_lines)
    assert work.ensemble.ks.shape == (6,) and any("Generated 6 base clusterings" in r.getMessage()
                                                  for r in work.ensemble_lines)

    def again(*args, **kwargs):
        raise AssertionError("done a second time")

    monkeypatch.setattr(read_stage, "read_partitions", again)
    monkeypatch.setattr(stage_tasks, "base_clusterings", again)
    # The flow gets the URL through an environment variable (as `lwec run` passes one with a password).
    monkeypatch.setenv("LWEC_AHEAD_DATABASE_URL", sqlite_url)
    summary = consensus_flow(**{**parameters, "database_url": "env:LWEC_AHEAD_DATABASE_URL"})

    stored = read_labels(sqlite_url, summary["output_table"], summary["run_key"])
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
    np.testing.assert_array_equal(stored["label"].to_numpy(), expected.loc[stored["id"]].to_numpy())
    # The work's own seconds count as the stages'.
    assert summary["timings"]["load"] >= work.table.seconds
    assert summary["timings"]["generate"] >= work.ensemble_seconds > 0
    assert ahead._AHEAD == {}


@pytest.mark.parametrize("other", [{"feature_columns": ["f0", "f1"]}, {"seed": 4}, {"ensemble_size": 5}])
def test_work_done_for_another_request_is_not_taken(prefect_server, mlflow_store, sqlite_url, monkeypatch, other):
    """Another read, or other base clusterings of the same read (which released the rows they were drawn from)."""
    frame = write_blobs_table(sqlite_url)
    parameters = blobs_run_parameters(sqlite_url, mlflow_store, "ahead")
    ahead.work_ahead(ConsensusRequest(**{**parameters, **other}))
    reads, generated = [], []
    read, generate = read_stage.read_partitions, stage_tasks.base_clusterings
    monkeypatch.setattr(read_stage, "read_partitions", lambda *a, **k: reads.append(a) or read(*a, **k))
    monkeypatch.setattr(stage_tasks, "base_clusterings", lambda *a, **k: generated.append(a) or generate(*a, **k))

    summary = consensus_flow(**parameters)

    assert len(reads) == len(generated) == 1
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


def test_bad_input_met_while_working_ahead_fails_at_once_and_nothing_is_kept(sqlite_url):
    frame = write_blobs_table(sqlite_url)
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE blobs SET f2 = NULL WHERE id = :id"), {"id": int(frame["id"].iloc[5])})
    engine.dispose()
    with pytest.raises(LwecInputError, match="f2"):
        ahead.work_ahead(ConsensusRequest(database_url=sqlite_url, table="blobs", n_clusters=3,
                                          label_column="target"))
    assert ahead._AHEAD == {}


def test_a_failure_of_the_database_is_left_to_the_tasks(sqlite_url, monkeypatch):
    write_blobs_table(sqlite_url)

    def unreachable(*args, **kwargs):
        raise sa.exc.OperationalError("SELECT", {}, Exception("connection refused"))

    monkeypatch.setattr(read_stage, "read_partitions", unreachable)
    ahead.work_ahead(ConsensusRequest(database_url=sqlite_url, table="blobs", n_clusters=3))
    assert ahead._AHEAD == {}
