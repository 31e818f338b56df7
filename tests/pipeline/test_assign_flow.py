"""The assign flow end to end: a logged consensus model labels the rows of a table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.preprocessing import StandardScaler

from flows.assign import assign_flow
from helpers.pipeline import blobs_frame, read_labels, table_exists, unique, write_frame
from helpers.placement import build_placement
from helpers.throwaway_tables import throwaway_features_table
from helpers.tracking import log_model_run
from lwec_tasks import Ensemble, lwea, lwgp
from lwec_tasks.core.base_clusterings import fit_base_clusterings
from lwec_tasks.core.eci import eci as cluster_eci
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import Standardisation

FEATURES = ["f0", "f1", "f2", "f3"]


def log_consensus_model(store: str, frame: pd.DataFrame, method: str = "lwea", columns=FEATURES):
    """The consensus steps on ``frame``'s rows, the model logged with the run; returns (model URI, placement)."""
    raw = frame[columns].to_numpy(dtype=float)
    scaler = StandardScaler().fit(raw)
    base = fit_base_clusterings(scaler.transform(raw), 6, random_state=3)
    ensemble = Ensemble(base.labels)
    eci = cluster_eci(ensemble, 0.4)
    labels = lwea(ensemble, 3) if method == "lwea" else lwgp(ensemble, 3, random_state=3)
    placement = build_placement(Standardisation(scaler.mean_, scaler.scale_), base, ensemble, eci, labels,
                                method, 0.4, columns, seed=3)
    run_id = log_model_run(store, unique("assign"), placement, frame[columns].head(3), params={"method": method})
    return f"runs:/{run_id}/model", placement


@pytest.fixture
def store(mlflow_store, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    return mlflow_store


@pytest.fixture(scope="module")
def frames():
    """A training sample and a table of other rows from the same blobs."""
    frame = blobs_frame(n=360)
    return frame.iloc[:240].reset_index(drop=True), frame.iloc[240:].reset_index(drop=True)


@pytest.fixture(scope="module")
def models(mlflow_store, frames):
    training, _ = frames
    return {method: log_consensus_model(mlflow_store, training, method) for method in ("lwea", "lwgp")}


def assert_labels_written(url, summary, frame, placement, table):
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    ordered = frame.sort_values("id")
    assert stored["id"].tolist() == ordered["id"].tolist()
    np.testing.assert_array_equal(stored["label"].to_numpy(), placement.predict(ordered[FEATURES].to_numpy()))
    assert set(stored["method"]) == {placement.method} and set(stored["k"]) == {3}
    assert set(stored["ensemble_size"]) == {6} and set(stored["seed"]) == {3}
    assert set(stored["source_table"]) == {table} and stored["flow_run_id"].notna().all()
    assert summary["rows_labelled"] == len(frame)
    assert sum(summary["counts"].values()) == len(frame)
    assert summary["counts"] == stored["label"].value_counts().to_dict()
    assert summary["run_key"].startswith("assign-")


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
def test_sqlite_end_to_end_then_rerun_is_idempotent(prefect_server, store, sqlite_url, frames, models, method):
    _, table_rows = frames
    uri, placement = models[method]
    write_frame(sqlite_url, "fresh", table_rows)
    summary = assign_flow(database_url=sqlite_url, table="fresh", model_uri=uri)
    assert summary["output_table"] == "fresh_lwec_labels" and summary["model_uri"] == uri
    assert_labels_written(sqlite_url, summary, table_rows, placement, "fresh")
    again = assign_flow(database_url=sqlite_url, table="fresh", model_uri=uri,
                        feature_columns=["f3", "f2", "f1", "f0"])  # the same feature set, any order
    assert again["run_key"] == summary["run_key"]
    assert len(read_labels(sqlite_url, "fresh_lwec_labels")) == len(table_rows)


def test_training_rows_get_the_runs_labels_and_ids_by_position(prefect_server, store, sqlite_url, frames, models):
    training, _ = frames
    uri, placement = models["lwgp"]
    write_frame(sqlite_url, "train_rows", training.drop(columns=["id"]), primary_key=None)
    summary = assign_flow(database_url=sqlite_url, table="train_rows", model_uri=uri, output_table="placed")
    stored = read_labels(sqlite_url, "placed")
    assert summary["rows_labelled"] == len(training) and len(stored) == len(training)
    assert sorted(stored["id"]) == list(range(len(training)))  # row positions, as in the consensus flow


@pytest.mark.postgres
def test_postgres_end_to_end_then_rerun_is_idempotent(prefect_server, store, postgres_url, frames, models):
    _, table_rows = frames
    uri, placement = models["lwea"]
    with throwaway_features_table(postgres_url, "fresh", table_rows) as table:
        summary = assign_flow(database_url=postgres_url, table=table, model_uri=uri)
        assert summary["output_table"] == f"{table}_lwec_labels"
        assert_labels_written(postgres_url, summary, table_rows, placement, table)
        assign_flow(database_url=postgres_url, table=table, model_uri=uri)
        assert len(read_labels(postgres_url, summary["output_table"])) == len(table_rows)
        latest = read_labels(postgres_url, f"{summary['output_table']}_latest")  # the view, as after a consensus
        assert set(latest["run_key"]) == {summary["run_key"]} and len(latest) == len(table_rows)


def test_bad_input_fails_clearly_and_writes_nothing(prefect_server, store, sqlite_url, frames, models):
    _, table_rows = frames
    uri, _ = models["lwea"]
    write_frame(sqlite_url, "fresh", table_rows)
    write_frame(sqlite_url, "narrow", table_rows.drop(columns=["f3"]))
    other_uri, _ = log_consensus_model(store, table_rows.rename(columns={"f0": "g0", "f1": "g1"}),
                                       columns=["g0", "g1", "f2"])
    bad = [
        (dict(table="narrow", model_uri=uri), r"feature_columns: column\(s\) \['f3'\] not found in table 'narrow'"),
        (dict(table="fresh", model_uri="runs:/00000000000000000000000000000000/model"),
         r"model URI 'runs:/00000000000000000000000000000000/model' does not resolve"),
        (dict(table="fresh", model_uri="models:/no_such_model/1"), r"model URI 'models:/no_such_model/1'"),
        (dict(table="fresh", model_uri=other_uri), r"column\(s\) \['g0', 'g1'\] not found in table 'fresh'"),
        (dict(table="fresh", model_uri=uri, feature_columns=["f0", "f1", "f2"]),
         r"feature_columns \['f0', 'f1', 'f2'\] differ from the model's feature columns \['f0', 'f1', 'f2', 'f3'\]"),
        (dict(table="fresh", model_uri=uri, output_table="fresh"), "is the source table"),
        (dict(table="fresh", model_uri=uri, output_table="x; drop table fresh"), "is not allowed"),
    ]
    for overrides, message in bad:
        with pytest.raises(LwecInputError, match=message):
            assign_flow(database_url=sqlite_url, **{"output_table": "out", **overrides})
        assert not table_exists(sqlite_url, "out"), overrides
        assert not table_exists(sqlite_url, "fresh_lwec_labels")


def test_rows_with_missing_features_are_refused(prefect_server, store, sqlite_url, frames, models):
    _, table_rows = frames
    with_nan = table_rows.copy()
    with_nan.loc[[2, 4], "f1"] = np.nan
    write_frame(sqlite_url, "with_nan", with_nan)
    with pytest.raises(LwecInputError, match=r"2 row\(s\) of table 'with_nan' have missing or non-finite"):
        assign_flow(database_url=sqlite_url, table="with_nan", model_uri=models["lwea"][0])
    assert not table_exists(sqlite_url, "with_nan_lwec_labels")
