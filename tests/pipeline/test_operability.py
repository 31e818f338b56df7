"""The flow run after run: automatic k, stable cluster ids, history and retention, the labelling model, figures."""

from itertools import permutations

import mlflow
import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from mlflow import MlflowClient

from flows.consensus import consensus_flow
from helpers.blobs import blobs_run_parameters, write_blobs_table
from helpers.pipeline import drop_labels_table, expected_labels, read_labels, unique
from helpers.wide_labels import label_table_schema

FEATURES = ["f0", "f1", "f2", "f3"]


@pytest.fixture
def blobs(sqlite_url):
    return sqlite_url, write_blobs_table(sqlite_url, n=300, centers=4, seed=11)


def run(url, store, **overrides):
    return consensus_flow(**blobs_run_parameters(url, store, "ops", **{"n_clusters": 4, **overrides}))


def best_renumbering(new: np.ndarray, previous: np.ndarray) -> tuple[np.ndarray, float]:
    """Brute force over every renumbering of ``new`` onto the ids of ``previous`` (k small)."""
    ids = sorted(set(previous) | set(new))
    best, best_agreement = None, -1.0
    for target in permutations(ids, len(set(new))):
        mapping = dict(zip(sorted(set(new)), target))
        renumbered = np.array([mapping[v] for v in new])
        agreement = float(np.mean(renumbered == previous))
        if agreement > best_agreement:
            best, best_agreement = renumbered, agreement
    return best, best_agreement


def test_a_later_run_keeps_the_cluster_ids_of_the_earlier_one(blobs, mlflow_store):
    url, frame = blobs
    first = run(url, mlflow_store, seed=3)
    second = run(url, mlflow_store, seed=4)
    earlier = read_labels(url, first["output_table"], first["run_key"]).set_index("id")["label"]
    later = read_labels(url, second["output_table"], second["run_key"]).set_index("id")["label"]
    raw = expected_labels(frame, FEATURES, k=4, ensemble_size=6, seed=4).loc[later.index].to_numpy()

    best, agreement = best_renumbering(raw, earlier.loc[later.index].to_numpy())
    assert np.mean(later.to_numpy() == earlier.loc[later.index].to_numpy()) == pytest.approx(agreement)
    np.testing.assert_array_equal(later.to_numpy(), best)  # the optimum is unique on well-separated blobs
    assert second["ids_aligned_to"] == first["run_key"]
    assert second["id_agreement"] == pytest.approx(agreement)
    logged = MlflowClient(mlflow_store).get_run(second["mlflow_run_id"]).data
    assert logged.tags["lwec.aligned_to_run_key"] == first["run_key"]
    assert logged.metrics["id_agreement_with_previous_run"] == pytest.approx(agreement)
    assert first["ids_aligned_to"] is None


def test_ids_align_to_a_run_in_a_wide_labels_table_of_an_earlier_release(blobs, mlflow_store):
    """The earlier run is read from a wide labels table (not converted yet: the write converts it after the
    renumbering): the ids agree with it as they would with the same run in the current storage."""
    url, frame = blobs
    first = run(url, mlflow_store, seed=3)
    earlier = read_labels(url, first["output_table"], first["run_key"])
    engine = sa.create_engine(url)
    wide = label_table_schema(first["output_table"], sa.BigInteger())
    with engine.begin() as connection:
        drop_labels_table(connection, first["output_table"])
        wide.create(connection)
        connection.execute(sa.insert(wide), [
            dict(run_key=first["run_key"], id=int(i), label=int(label), k=4, method="lwea", theta=0.4,
                 ensemble_size=6, seed=3, source_table="blobs", flow_run_id=None, written_at=pd.Timestamp.now("UTC"))
            for i, label in zip(earlier["id"], earlier["label"])])
    engine.dispose()

    second = run(url, mlflow_store, seed=4)
    later = read_labels(url, second["output_table"], second["run_key"]).set_index("id")["label"]
    previous = earlier.set_index("id")["label"].loc[later.index].to_numpy()
    raw = expected_labels(frame, FEATURES, k=4, ensemble_size=6, seed=4).loc[later.index].to_numpy()
    best, agreement = best_renumbering(raw, previous)
    np.testing.assert_array_equal(later.to_numpy(), best)
    assert second["ids_aligned_to"] == first["run_key"]
    assert second["id_agreement"] == pytest.approx(agreement)


def test_fresh_ids_skip_an_id_the_earlier_run_gave_only_to_rows_since_deleted(blobs, mlflow_store):
    """The earlier run's cluster ids are the labels its rows carry, also rows the source table no longer
    holds: a new cluster without a partner never takes one of them."""
    url, frame = blobs
    first = run(url, mlflow_store, seed=3)
    engine = sa.create_engine(url)
    with engine.begin() as connection:  # the earlier run also labelled two rows, since deleted, with id 4
        number = connection.exec_driver_sql(f"SELECT run FROM {first['output_table']}_runs").scalar_one()
        gone = int(frame["id"].max()) + 1
        connection.exec_driver_sql(f"INSERT INTO {first['output_table']}_rows (run, id, label) VALUES "
                                   f"({number}, {gone}, 4), ({number}, {gone + 1}, 4)")
    engine.dispose()

    second = run(url, mlflow_store, seed=4, n_clusters=6)
    later = read_labels(url, second["output_table"], second["run_key"])["label"]
    assert second["ids_aligned_to"] == first["run_key"]
    assert 4 not in set(later) and set(later) >= {5, 6}  # two partnerless clusters: 5 and 6, not 4


def test_stable_ids_off_writes_the_consensus_numbering(blobs, mlflow_store):
    url, frame = blobs
    run(url, mlflow_store, seed=3)
    second = run(url, mlflow_store, seed=4, stable_ids=False)
    stored = read_labels(url, second["output_table"], second["run_key"]).set_index("id")["label"]
    expected = expected_labels(frame, FEATURES, k=4, ensemble_size=6, seed=4)
    np.testing.assert_array_equal(stored.to_numpy(), expected.loc[stored.index].to_numpy())
    assert second["ids_aligned_to"] is None


def test_keep_runs_deletes_the_oldest_runs_and_the_view_shows_the_latest(blobs, mlflow_store):
    url, _ = blobs
    summaries = [run(url, mlflow_store, seed=seed, keep_runs=2) for seed in (1, 2, 3)]
    table = summaries[0]["output_table"]
    stored = read_labels(url, table)
    assert set(stored["run_key"]) == {summaries[1]["run_key"], summaries[2]["run_key"]}

    engine = sa.create_engine(url)
    view = sa.Table(f"{table}_latest", sa.MetaData(), autoload_with=engine)
    with engine.connect() as connection:
        latest = pd.read_sql(sa.select(view), connection)
    engine.dispose()
    assert set(latest["run_key"]) == {summaries[2]["run_key"]}
    assert len(latest) == 300


def test_automatic_k_finds_the_blobs_and_logs_its_criterion(blobs, mlflow_store):
    url, _ = blobs
    summary = run(url, mlflow_store, n_clusters="auto", method="lwgp")
    assert summary["k"] == 4 and summary["n_clusters_found"] == 4
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    assert set(stored["k"]) == {4}
    logged = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"]).data
    assert logged.params["n_clusters"] == "auto" and logged.params["k"] == "4"
    assert "k_selection.png" in summary["figures"]


@pytest.fixture
def tracking(mlflow_store):
    """``runs:/`` URIs resolve against the test store."""
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(mlflow_store)
    yield mlflow_store
    mlflow.set_tracking_uri(before)


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
def test_the_logged_model_labels_rows_as_the_run_did(blobs, tracking, method):
    url, frame = blobs
    summary = run(url, tracking, method=method)
    stored = read_labels(url, summary["output_table"], summary["run_key"]).set_index("id")["label"]
    model = mlflow.pyfunc.load_model(summary["model_uri"])
    ordered = frame.set_index("id").loc[stored.index]
    predicted = np.asarray(model.predict(ordered[FEATURES]))
    assert np.mean(predicted == stored.to_numpy()) >= 0.95
    info = mlflow.models.get_model_info(summary["model_uri"])
    assert [c["name"] for c in info.signature.inputs.to_dict()] == FEATURES
    metrics = MlflowClient(tracking).get_run(summary["mlflow_run_id"]).data.metrics
    assert metrics["model_labels_given_back"] >= 0.95


def test_figures_are_logged_where_the_summary_says(blobs, mlflow_store):
    url, _ = blobs
    summary = run(url, mlflow_store, method="lwea")
    assert set(summary["figures"]) == {"eci_distribution.png", "cluster_sizes.png", "cluster_map.png",
                                       "dendrogram.png", "row_confidence.png", "cluster_profiles.png",
                                       "consensus_cdf.png", "k_curve.png", "cluster_labels.png"}
    artifacts = {a.path for a in MlflowClient(mlflow_store).list_artifacts(summary["mlflow_run_id"], "figures")}
    assert {f"figures/{name}" for name in summary["figures"]} == artifacts
    for uri in summary["figures"].values():
        assert uri.endswith(".png")


def test_register_model_adds_a_registry_version(blobs, mlflow_store):
    url, _ = blobs
    name = unique("lwec_model")
    summary = run(url, mlflow_store, register_model=name)
    versions = MlflowClient(mlflow_store).search_model_versions(f"name = '{name}'")
    assert len(versions) == 1 and versions[0].run_id == summary["mlflow_run_id"]
