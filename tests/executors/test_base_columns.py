"""Ensembles from clusterings already in the database: ``base_columns`` names label columns of the table that
are the M base clusterings (no k-means, no features).

The table has ten label columns in several codings (integers 0- and 1-based, sparse integers, text); the
reference is the library run on each column's codes as ``np.unique`` gives them. Runs are cut into four
partitions, on SQLite and PostgreSQL, in-process and on a Dask cluster.
"""

from __future__ import annotations

import hashlib
import json

import mlflow.pyfunc
import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from mlflow import MlflowClient
from prefect.exceptions import ParameterTypeError
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from flows.assign import assign_flow
from flows.consensus import consensus_flow
from helpers.pipeline import read_labels, table_exists, unique, write_frame
from lwec_tasks import lwea, lwgp
from lwec_tasks.cli import main as lwec_main
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.request import ConsensusRequest

pytestmark = pytest.mark.slow

ROWS = 400
COLUMNS = [f"b{m}" for m in range(10)]
WORDS = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"])


def label_frame(n: int = ROWS, seed: int = 5) -> pd.DataFrame:
    """ids 0..n−1 and ten base clusterings of blobs: k-means labels coded 0-based, 1-based, sparse (10·l + 7)
    or as words, in turn."""
    X, _ = make_blobs(n_samples=n, n_features=3, centers=4, cluster_std=2.0, random_state=seed)
    frame = pd.DataFrame({"id": np.arange(n, dtype=np.int64)})
    for m, name in enumerate(COLUMNS):
        labels = KMeans(n_clusters=3 + m % 5, n_init=1, random_state=m).fit_predict(X[:, : 2 + m % 2] if m % 3
                                                                                     else X).astype(np.int64)
        coding = m % 4
        frame[name] = (labels if coding == 0 else labels + 1 if coding == 1 else 10 * labels + 7 if coding == 2
                       else WORDS[(7 * labels) % len(WORDS)])
    return frame


def codes(frame: pd.DataFrame, columns=COLUMNS) -> np.ndarray:
    """(N, M) the reference codes: each column's values by np.unique."""
    return np.column_stack([np.unique(frame[c].to_numpy(), return_inverse=True)[1] for c in columns])


@pytest.fixture
def store(mlflow_store, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    return mlflow_store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request, tmp_path, monkeypatch):
    """(url, table) of the label table; runs are cut into four partitions."""
    import lwec_tasks.stages.planning as planning

    monkeypatch.setattr(planning, "MIN_PARTITION_ROWS", 50)
    monkeypatch.setenv(planning.PARTITION_ROWS_ENV, "100")
    url = (f"sqlite:///{tmp_path / 'labels.db'}" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    table = unique("bases")
    write_frame(url, table, label_frame())
    yield url, table
    if request.param == "postgres":
        engine = sa.create_engine(url)
        with engine.begin() as connection:
            for view in sa.inspect(connection).get_view_names():
                if view.startswith(table):
                    connection.exec_driver_sql(f'DROP VIEW "{view}"')
            for name in sa.inspect(connection).get_table_names():
                if name.startswith(table):  # a run's partition may have gone with its rows table
                    sa.Table(name, sa.MetaData()).drop(connection, checkfirst=True)
        engine.dispose()


def latest_run_id(store: str, experiment: str) -> str:
    client = MlflowClient(store)
    return client.search_runs([client.get_experiment_by_name(experiment).experiment_id],
                              order_by=["attributes.start_time DESC"], max_results=1)[0].info.run_id


def run(url, table, store, **overrides):
    parameters = dict(database_url=url, table=table, n_clusters=4, base_columns=COLUMNS, experiment="bases",
                      tracking_uri=store, seed=3)
    return consensus_flow(**{**parameters, **overrides})


def test_lwea_on_base_columns_is_the_library_cut_and_the_model_labels_from_base_labels(prefect_server, database,
                                                                                       store, executor):
    url, table = database
    frame = label_frame()
    summary = run(url, table, store, dask_address=executor)
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    assert stored["id"].tolist() == frame["id"].tolist()
    assert adjusted_rand_score(stored["label"], lwea(codes(frame), 4)) == 1.0
    assert set(stored["ensemble_size"]) == {10}
    params = MlflowClient(store).get_run(summary["mlflow_run_id"]).data.params
    assert params["base_columns"] == ",".join(COLUMNS) and params["ensemble_size"] == "10"

    assigned = assign_flow(database_url=url, table=table, model_uri=summary["model_uri"],
                           output_table=f"{table}_assigned", dask_address=executor)
    given_back = read_labels(url, f"{table}_assigned", assigned["run_key"])
    np.testing.assert_array_equal(given_back["label"].to_numpy(), stored["label"].to_numpy())
    assert assigned["feature_columns"] == COLUMNS


def test_lwgp_on_base_columns_is_the_library_lwgp(prefect_server, tmp_path, store, executor):
    url, frame = f"sqlite:///{tmp_path / 'l.db'}", label_frame()
    write_frame(url, "bases", frame)
    summary = run(url, "bases", store, method="lwgp", dask_address=executor)
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    assert adjusted_rand_score(stored["label"], lwgp(codes(frame), 4, random_state=3)) >= 0.99
    assign_flow(database_url=url, table="bases", model_uri=summary["model_uri"], output_table="given")
    np.testing.assert_array_equal(read_labels(url, "given")["label"].to_numpy(), stored["label"].to_numpy())
    again = run(url, "bases", store, dask_address=executor)  # LWEA next: its ids follow the LWGP run's
    assert again["ids_aligned_to"] == summary["run_key"] and again["id_agreement"] >= 0.9
    assert set(read_labels(url, "bases_lwec_labels_latest")["run_key"]) == {again["run_key"]}


def test_lwec_run_base_columns_with_k_auto_is_the_library_choice(prefect_server, tmp_path, store, capsys):
    url, frame = f"sqlite:///{tmp_path / 'l.db'}", label_frame()
    write_frame(url, "bases", frame)
    code = lwec_main(["run", "--database-url", url, "--table", "bases", "-k", "auto", "--base-columns",
                      ",".join(COLUMNS), "--tracking-uri", store, "--seed", "3", "--experiment", "bases-auto"])
    assert code == 0, capsys.readouterr()
    stored = read_labels(url, "bases_lwec_labels")
    expected = lwea(codes(frame), "auto")
    assert stored["k"].iloc[0] == len(np.unique(expected))
    assert adjusted_rand_score(stored["label"], expected) == 1.0
    uri = f"runs:/{latest_run_id(store, 'bases-auto')}/model"
    code = lwec_main(["assign", "--database-url", url, "--table", "bases", "--model-uri", uri,
                      "--tracking-uri", store, "--output-table", "given"])
    assert code == 0, capsys.readouterr()
    np.testing.assert_array_equal(read_labels(url, "given")["label"].to_numpy(), stored["label"].to_numpy())
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(store)  # MLflow before 3.3 resolves runs:/ URIs against the global tracking URI only
    try:
        served = mlflow.pyfunc.load_model(uri).predict(frame[["id", *COLUMNS]].head(50))  # extra columns ignored
    finally:
        mlflow.set_tracking_uri(before)
    np.testing.assert_array_equal(np.asarray(served), stored["label"].to_numpy()[:50])


def test_missing_labels_own_cluster_gives_each_a_singleton(prefect_server, tmp_path, store):
    url, frame = f"sqlite:///{tmp_path / 'l.db'}", label_frame().astype({"b1": object, "b3": object})
    frame.loc[[5, 77, 300], "b1"] = None
    frame.loc[[9], "b3"] = None
    write_frame(url, "bases", frame)
    with pytest.raises(LwecInputError, match=r"'b1' has 3 NULL label\(s\), 'b3' has 1 NULL"):
        run(url, "bases", store)
    assert not table_exists(url, "bases_lwec_labels")
    summary = run(url, "bases", store, missing_labels="own_cluster")
    reference = np.empty((len(frame), len(COLUMNS)), dtype=np.int64)
    for m, name in enumerate(COLUMNS):  # each missing label a cluster of its own
        present = frame[name].notna().to_numpy()
        reference[present, m] = np.unique(frame.loc[present, name].to_numpy(), return_inverse=True)[1]
        reference[~present, m] = reference[present, m].max() + 1 + np.arange((~present).sum())
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    assert adjusted_rand_score(stored["label"], lwea(reference, 4)) == 1.0
    params = MlflowClient(store).get_run(summary["mlflow_run_id"]).data.params
    assert params["missing_labels"] == "own_cluster"


def test_unseen_labels_leave_their_column_out(prefect_server, tmp_path, store):
    """A label never seen in fitting (or NULL): the row is placed by its other columns; none seen: an error."""
    url, frame = f"sqlite:///{tmp_path / 'l.db'}", label_frame()
    write_frame(url, "bases", frame)
    summary = run(url, "bases", store)
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    changed = frame.astype({"b0": object}).head(40)
    changed["b0"] = "never seen"
    write_frame(url, "incoming", changed)
    assign_flow(database_url=url, table="incoming", model_uri=summary["model_uri"], output_table="given")
    from lwec_tasks.tracking.model import load_placement_model

    placement = load_placement_model(summary["model_uri"])
    partial = placement.predict(changed[COLUMNS].to_numpy(dtype=object))
    np.testing.assert_array_equal(read_labels(url, "given")["label"].to_numpy(), partial)
    agree = np.mean(partial == stored["label"].to_numpy()[:40])
    assert agree >= 0.9
    with pytest.raises(LwecInputError, match="no base label seen in fitting"):
        placement.predict(np.full((1, 10), "never seen", dtype=object))


@pytest.mark.parametrize("overrides, message", [
    ({"feature_columns": ["b0"]}, "feature_columns and base_columns were both given"),
    ({"base_columns": [*COLUMNS, "nope"]}, r"base_columns: column\(s\) \['nope'\] not found"),
    ({"base_columns": ["id", "b0"]}, r"base_columns \['id'\] are also the id or label column"),
    ({"missing_labels": "drop"}, "missing_labels"),
])
def test_bad_base_columns_are_refused_before_anything_is_written(prefect_server, tmp_path, store, overrides,
                                                                 message):
    url = f"sqlite:///{tmp_path / 'l.db'}"
    write_frame(url, "bases", label_frame(60))
    with pytest.raises((LwecInputError, ParameterTypeError), match=message):  # the flow's form checks choices
        run(url, "bases", store, **overrides)
    assert not table_exists(url, "bases_lwec_labels")


@pytest.mark.parametrize("overrides, message", [
    ({"feature_columns": ["b0"]}, "feature_columns and base_columns were both given"),
    ({"missing_labels": "drop"}, "missing_labels must be 'error' or 'own_cluster'"),
    ({"base_columns": []}, "base_columns is empty"),
])
def test_the_request_checks_base_columns(overrides, message):
    with pytest.raises(LwecInputError, match=message):
        ConsensusRequest(database_url="sqlite://", table="bases", n_clusters=4,
                         **{"base_columns": COLUMNS, **overrides})


def test_base_columns_set_the_ensemble_size_and_keep_other_run_keys():
    request = ConsensusRequest(database_url="sqlite://", table="t", n_clusters=3, base_columns=["a", "b"],
                               ensemble_size=25)
    assert request.ensemble_size == 2 and request.base_columns == ("a", "b")
    plain = ConsensusRequest(database_url="sqlite://", table="t", n_clusters=3, generators="kmeans")
    deciding = {"table": "t", "n_clusters": 3, "feature_columns": None, "id_column": None, "label_column": None,
                "method": "lwea", "ensemble_size": plain.ensemble_size, "theta": plain.theta, "seed": 0,
                "standardize": True, "drop_nonfinite": False}  # the fields before base_columns existed
    digest = hashlib.sha256(json.dumps(deciding, sort_keys=True, default=list).encode()).hexdigest()
    assert plain.run_key == f"lwea-k3-{digest[:12]}"
    assert request.run_key != ConsensusRequest(database_url="sqlite://", table="t", n_clusters=3,
                                               base_columns=["a", "b"], missing_labels="own_cluster").run_key


def test_float_label_columns_are_coded_like_other_label_columns(prefect_server, database, store):
    url, table = database
    frame = label_frame()
    floats = frame[["id"]].copy()
    for m, name in enumerate(COLUMNS[:4]):  # codes as floats: halves (0.25, 0.75, ...) and whole numbers (1.0, ...)
        values = codes(frame, [name])[:, 0].astype(np.float64)
        floats[name] = values / 2 + 0.25 if m % 2 == 0 else values + 1.0
    floating = f"{table}_f"
    write_frame(url, floating, floats)
    summary = run(url, floating, store, base_columns=COLUMNS[:4])
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    assert adjusted_rand_score(stored["label"], lwea(codes(floats, COLUMNS[:4]), 4)) == 1.0
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(store)  # MLflow before 3.3 resolves runs:/ URIs against the global tracking URI only
    try:
        model = mlflow.pyfunc.load_model(summary["model_uri"])  # logged: columns of halves as double in its signature
    finally:
        mlflow.set_tracking_uri(before)
    assert [(spec.name, spec.type.name) for spec in model.metadata.get_input_schema().inputs] == \
        [("b0", "double"), ("b1", "long"), ("b2", "double"), ("b3", "long")]  # whole numbers are integer labels
    served = model.predict(floats[COLUMNS[:4]].head(50).astype({"b1": np.int64, "b3": np.int64}))
    np.testing.assert_array_equal(np.asarray(served).ravel(), stored["label"].to_numpy()[:50])
