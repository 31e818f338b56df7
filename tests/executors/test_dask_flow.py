"""The consensus flow with ``dask_address``: the same labels as the local flow, and nothing half-written.

A session-scoped scheduler with two worker processes runs on loopback (see conftest.py). Each comparison
runs the local flow and the Dask flow on the same table and seed and compares the stored labels by id.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import sqlalchemy as sa
from dask_helpers import FailingWrites, KMeansSample, MemoryLimit, blobs_table, labels_of, table_names
from mlflow import MlflowClient

from flows.consensus import consensus_flow
from helpers.pipeline import drop_labels_table, free_port, unique
from lwec_tasks import ari
from lwec_tasks.core.errors import LwecMemoryError
from lwec_tasks.executors import DaskUnreachableError

pytestmark = pytest.mark.slow


def compare(url: str, scheduler: str, store: str, record_property=None, **parameters) -> dict:
    """Run the flow in-process and on Dask; return both summaries, both label vectors (by id) and agreement."""
    common = dict(database_url=url, table="blobs", label_column="target", seed=3, tracking_uri=store,
                  experiment=unique("dask"), **parameters)
    keys = unique("local"), unique("dask")
    started = time.perf_counter()
    local = consensus_flow(**common, run_name=keys[0])
    local_seconds = time.perf_counter() - started
    started = time.perf_counter()
    on_dask = consensus_flow(**common, run_name=keys[1], dask_address=scheduler)
    dask_seconds = time.perf_counter() - started
    output = local["output_table"]
    a, b = labels_of(url, output, keys[0]), labels_of(url, output, keys[1])
    assert a["id"].tolist() == b["id"].tolist()
    result = {
        "local": local, "dask": on_dask, "local_labels": a["label"].to_numpy(), "dask_labels": b["label"].to_numpy(),
        "ari": ari(a["label"], b["label"]), "identical": float(np.mean(a["label"].to_numpy() == b["label"].to_numpy())),
    }
    report = (f"{parameters.get('method', 'lwea')} on {len(a)} rows: ARI {result['ari']:.6f}, identical "
              f"{result['identical']:.6f}; local {local_seconds:.1f} s, Dask {dask_seconds:.1f} s")
    print(report)
    if record_property is not None:
        record_property("agreement", report)
    return result


@pytest.fixture(scope="module")
def large_table(tmp_path_factory):
    """300,000 rows × 16 features: 20 overlapping Gaussian blobs (make_blobs(random_state=1, cluster_std=6))."""
    url = f"sqlite:///{tmp_path_factory.mktemp('large') / 'features.db'}"
    blobs_table(url, "blobs", 300_000)
    return url


@pytest.fixture(scope="module")
def small_table(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('small') / 'features.db'}"
    blobs_table(url, "blobs", 20_000, n_features=8, centers=6, cluster_std=3.0)
    return url


@pytest.mark.parametrize("regime", ["microclusters", "sampled microclusters"])
def test_lwgp_on_dask_agrees_with_the_local_flow_on_300000_rows(prefect_server, mlflow_store, dask_scheduler,
                                                                dask_client, large_table, monkeypatch,
                                                                record_property, regime):
    sampled = regime == "sampled microclusters"
    if sampled:  # k-means' replicates on a seeded sample of the ~8,600 microclusters, then Lloyd on all of them
        import lwec_tasks.core.lwgp as core_lwgp

        monkeypatch.setattr(core_lwgp, "SAMPLE_THRESHOLD", KMeansSample.threshold)
        monkeypatch.setattr(core_lwgp, "SAMPLE_SIZE", KMeansSample.size)
        dask_client.register_plugin(KMeansSample())
    try:
        result = compare(large_table, dask_scheduler, mlflow_store, record_property, method="lwgp", n_clusters=20,
                         ensemble_size=8)
    finally:
        if sampled:
            dask_client.unregister_worker_plugin(KMeansSample.name)
    assert result["ari"] >= 0.99 and result["identical"] >= 0.99
    metrics = MlflowClient(mlflow_store).get_run(result["dask"]["mlflow_run_id"]).data.metrics
    assert metrics["n_microclusters"] > KMeansSample.threshold or not sampled
    local, on_dask = result["local"], result["dask"]
    assert on_dask["rows_written"] == on_dask["n_objects"] == local["n_objects"] == 300_000
    assert on_dask["nmi"] == pytest.approx(local["nmi"], abs=0.01)
    assert on_dask["ari"] == pytest.approx(local["ari"], abs=0.01)
    assert on_dask["n_clusters_found"] == local["n_clusters_found"]
    assert set(on_dask["timings"]) == set(local["timings"]) == {"load", "generate", "eci", "consensus", "stable_ids",
                                                                "evidence", "write", "model"}


def test_lwea_and_lwgp_on_dask_equal_the_local_flow(prefect_server, mlflow_store, dask_scheduler, small_table,
                                                     record_property):
    # 20,000 rows: the sample is the whole table, so the base clusterings are the local ones, unpatched.
    for method in ("lwea", "lwgp"):
        result = compare(small_table, dask_scheduler, mlflow_store, record_property, method=method, n_clusters=6,
                         ensemble_size=10)
        assert result["ari"] >= 0.99 and result["identical"] >= 0.99, method
        assert result["dask"]["nmi"] == pytest.approx(result["local"]["nmi"], abs=1e-3)

    run = MlflowClient(mlflow_store).get_run(result["dask"]["mlflow_run_id"])
    assert run.data.params["dask_scheduler"] == dask_scheduler and run.data.tags["lwec.executor"] == "dask"
    assert run.data.params["n_objects"] == "20000" and "eci_mean" in run.data.metrics
    # The source table is the run's dataset input on Dask as in-process.
    (dataset_input,) = run.inputs.dataset_inputs
    local_input = MlflowClient(mlflow_store).get_run(result["local"]["mlflow_run_id"]).inputs.dataset_inputs[0]
    assert dataset_input.dataset.digest == local_input.dataset.digest
    assert dataset_input.dataset.schema == local_input.dataset.schema
    paths = {a.path for a in MlflowClient(mlflow_store).list_artifacts(run.info.run_id)}
    assert {"eci_per_cluster.csv", "labels_location.json"} <= paths


def test_lwea_cuts_that_split_a_microcluster_match_exactly(prefect_server, mlflow_store, dask_scheduler, tmp_path):
    """θ = 0.05, k = 12 on these rows splits microclusters (their objects' own merges come after the cut),
    the exact case where rows of one label row get different labels. Text ids: partitions by id quantiles."""
    url = f"sqlite:///{tmp_path / 'split.db'}"
    frame = blobs_table(url, "blobs", 3000, n_features=4, centers=4, cluster_std=3.0, seed=2, text_ids=True)
    _assert_local_cut_splits(frame, theta=0.05, k=12, ensemble_size=6, seed=3)
    result = compare(url, dask_scheduler, mlflow_store, method="lwea", n_clusters=12, theta=0.05, ensemble_size=6,
                     generators="kmeans")
    np.testing.assert_array_equal(result["dask_labels"], result["local_labels"])


def test_a_mix_of_generators_gives_the_same_labels_on_both_executors_as_in_the_library(
        prefect_server, mlflow_store, dask_scheduler, tmp_path):
    from sklearn.preprocessing import StandardScaler

    from lwec_tasks import generate_base_clusterings, lwea

    mix = "kmeans,genie,spectral,gmm,subspace,dbscan"
    url = f"sqlite:///{tmp_path / 'mix.db'}"
    frame = blobs_table(url, "blobs", 3000, n_features=4, centers=4, cluster_std=3.0, seed=2)
    result = compare(url, dask_scheduler, mlflow_store, method="lwea", n_clusters=4, ensemble_size=6, generators=mix)
    np.testing.assert_array_equal(result["dask_labels"], result["local_labels"])
    X = StandardScaler().fit_transform(frame[[c for c in frame.columns if c.startswith("f")]].to_numpy())
    expected = lwea(generate_base_clusterings(X, 6, random_state=3, generators=mix), 4)
    assert ari(expected, result["local_labels"]) == 1.0


def _assert_local_cut_splits(frame, theta, k, ensemble_size, seed):
    from sklearn.preprocessing import StandardScaler

    from lwec_tasks import Ensemble, generate_base_clusterings
    from lwec_tasks.core.eci import ensemble_eci
    from lwec_tasks.core.lwea import lwea_dendrogram

    X = StandardScaler().fit_transform(frame[[c for c in frame.columns if c.startswith("f")]].to_numpy())
    ensemble = Ensemble(generate_base_clusterings(X, ensemble_size, random_state=seed))
    dendrogram = lwea_dendrogram(ensemble, ensemble_eci(ensemble, theta))
    splits = []
    original = dendrogram._split_microclusters
    dendrogram._split_microclusters = lambda raw, split, merged: (splits.append(len(split)), original(raw, split,
                                                                                                      merged))[1]
    dendrogram.cut(k)
    assert splits, "this case no longer splits a microcluster; pick another θ / k"


@pytest.mark.postgres
def test_postgres_read_path_with_text_ids(prefect_server, mlflow_store, dask_scheduler, postgres_url):
    from helpers.pipeline import read_labels

    blobs_table(postgres_url, "blobs", 20_000, n_features=8, centers=6, cluster_std=3.0, text_ids=True)
    try:
        result = compare(postgres_url, dask_scheduler, mlflow_store, method="lwgp", n_clusters=6, ensemble_size=8,
                         output_table="blobs_dask_labels")
        assert result["ari"] >= 0.99 and result["identical"] >= 0.99
        stored = read_labels(postgres_url, "blobs_dask_labels", result["dask"]["run_key"])
        assert len(stored) == 20_000 and stored["id"].str.startswith("r").all()
        assert not [name for name in table_names(postgres_url) if "lwec_stage" in name]
    finally:
        engine = sa.create_engine(postgres_url)
        with engine.begin() as connection:
            for name in ("blobs_dask_labels", "blobs"):
                drop_labels_table(connection, name)
        engine.dispose()


def test_an_unreachable_scheduler_fails_within_seconds_and_writes_nothing(prefect_server, mlflow_store, small_table):
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.perf_counter()
    with pytest.raises(DaskUnreachableError, match=address.replace(".", r"\.")):
        consensus_flow(database_url=small_table, table="blobs", n_clusters=6, label_column="target",
                       dask_address=address, output_table="never_written", tracking_uri=mlflow_store,
                       experiment=unique("down"))
    assert time.perf_counter() - started < 20
    assert not [name for name in table_names(small_table) if name.startswith("never_written")]


def test_a_failing_worker_leaves_the_labels_table_as_it_was(prefect_server, mlflow_store, dask_scheduler,
                                                            dask_client, small_table):
    parameters = dict(database_url=small_table, table="blobs", n_clusters=6, label_column="target", method="lwgp",
                      ensemble_size=6,
                      dask_address=dask_scheduler, tracking_uri=mlflow_store, experiment=unique("fail"),
                      output_table="kept_labels", run_name="kept")
    first = consensus_flow(**parameters)
    before = labels_of(small_table, "kept_labels", "kept")
    assert len(before) == first["rows_written"] == 20_000
    last_id = int(before["id"].max())  # in the last partition; the first ones may already be staged

    dask_client.register_plugin(FailingWrites(last_id))
    try:
        with pytest.raises(RuntimeError, match="injected failure"):
            consensus_flow(**{**parameters, "n_clusters": 5})
        with pytest.raises(RuntimeError, match="injected failure"):
            consensus_flow(**{**parameters, "output_table": "fresh_labels"})
    finally:
        dask_client.unregister_worker_plugin(FailingWrites.name)
    after = labels_of(small_table, "kept_labels", "kept")
    assert after.equals(before)  # same labels, same k, same flow run id and time: untouched
    names = table_names(small_table)
    assert not [name for name in names if name.startswith("fresh_labels") or "lwec_stage" in name]
    engine = sa.create_engine(small_table)
    with engine.connect() as connection:  # the failed runs' rows went with them
        assert connection.exec_driver_sql("select count(*) from kept_labels_rows").scalar_one() == 20_000
        assert connection.exec_driver_sql("select count(*) from kept_labels_runs").scalar_one() == 1
    engine.dispose()
    # Rerun as it was: the workers find the stored labels in their id ranges, and nothing is written.
    assert consensus_flow(**parameters)["rows_written"] == 0
    assert labels_of(small_table, "kept_labels", "kept").equals(before)


def test_lwea_beyond_a_workers_memory_is_refused(prefect_server, mlflow_store, dask_scheduler, dask_client,
                                                 small_table):
    dask_client.register_plugin(MemoryLimit(5_000_000))
    try:
        refusal = r"exact LWEA on \d+ microclusters .* needs [\d.]+ MiB but only [\d.]+ MiB"
        with pytest.raises(LwecMemoryError, match=refusal):
            consensus_flow(database_url=small_table, table="blobs", n_clusters=6, label_column="target",
                           ensemble_size=10, dask_address=dask_scheduler, tracking_uri=mlflow_store,
                           experiment=unique("memory"), output_table="too_big")
    finally:
        dask_client.unregister_worker_plugin(MemoryLimit.name)
    assert not [name for name in table_names(small_table) if name.startswith("too_big")]
