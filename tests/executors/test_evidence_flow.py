"""The run's evidence end to end, on both executors: row confidences stored with the labels, cluster profiles
against a pandas groupby of the table by its stored labels, run-to-run stability against a direct Jaccard
computation, the summary's cluster lines and the MLflow metrics and figures; the labelling model gives new rows
the run's confidence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from mlflow import MlflowClient

from flows.assign import assign_flow
from flows.consensus import consensus_flow
from helpers.pipeline import blobs_frame, unique, write_frame

FEATURES = ["f0", "f1", "f2", "f3"]


def stored(url: str, relation: str, run_key: str | None = None) -> pd.DataFrame:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            frame = pd.read_sql(sa.text(f'SELECT * FROM "{relation}"'), connection)
    finally:
        engine.dispose()
    if run_key is not None:
        frame = frame[frame["run_key"] == run_key]
    return frame.sort_values("id").reset_index(drop=True)


def profile_artifact(store: str, run_id: str) -> pd.DataFrame:
    client = MlflowClient(store)
    path = client.download_artifacts(run_id, "cluster_profiles.csv")
    return pd.read_csv(path)


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
def test_evidence_on_both_executors(executor, method, sqlite_url, mlflow_store):
    frame = blobs_frame(n=400, centers=4, seed=11)
    write_frame(sqlite_url, "blobs", frame)
    common = dict(database_url=sqlite_url, table="blobs", n_clusters=4, label_column="target", ensemble_size=6,
                  seed=5, method=method, tracking_uri=mlflow_store, experiment=unique("evidence"),
                  dask_address=executor)
    first = consensus_flow(**common, run_name="first")
    labels = stored(sqlite_url, first["output_table"], "first")

    # the confidence is stored with every label, in [0, 1], and read alike through both views
    assert labels["confidence"].notna().all()
    assert ((labels["confidence"] >= 0) & (labels["confidence"] <= 1)).all()
    latest = stored(sqlite_url, f"{first['output_table']}_latest")
    np.testing.assert_array_equal(latest["confidence"].to_numpy(), labels["confidence"].to_numpy())

    # the profiles are a groupby of the table by its stored labels
    by_id = frame.set_index("id").loc[labels["id"]].reset_index()
    by_id["label"] = labels["label"].to_numpy()
    by_id["confidence"] = labels["confidence"].to_numpy()
    grouped = by_id.groupby("label")
    profiles = profile_artifact(mlflow_store, first["mlflow_run_id"])
    assert profiles["cluster"].tolist() == sorted(grouped.groups)
    np.testing.assert_array_equal(profiles["size"], grouped.size().to_numpy())
    np.testing.assert_allclose(profiles["mean_confidence"], grouped["confidence"].mean().to_numpy(), atol=1e-6)
    for name in FEATURES:
        np.testing.assert_allclose(profiles[f"{name}_mean"], grouped[name].mean().to_numpy(), rtol=1e-9, atol=1e-9)
        z = (grouped[name].mean() - frame[name].mean()) / frame[name].std(ddof=0)
        np.testing.assert_allclose(profiles[f"{name}_z"], z.to_numpy(), rtol=1e-7, atol=1e-9)
    assert [c["id"] for c in first["clusters"]] == profiles["cluster"].tolist()
    assert all(c["jaccard_previous"] is None for c in first["clusters"])

    # each cluster's cohesion; with a label column, the cluster × label table is a crosstab of the stored labels
    assert ((profiles["cohesion"] > 0) & (profiles["cohesion"] <= 1)).all()
    assert [c["cohesion"] for c in first["clusters"]] == pytest.approx(profiles["cohesion"].tolist())
    table = pd.read_csv(MlflowClient(mlflow_store).download_artifacts(first["mlflow_run_id"], "cluster_labels.csv"))
    crosstab = pd.crosstab(by_id["label"], by_id["target"])
    assert table["cluster"].tolist() == crosstab.index.tolist()
    np.testing.assert_array_equal(table[[f"target={v}" for v in crosstab.columns]], crosstab.to_numpy())
    np.testing.assert_allclose(table["majority_share"], crosstab.max(axis=1) / crosstab.sum(axis=1))
    assert table["majority_label"].tolist() == crosstab.idxmax(axis=1).tolist()
    assert [c["majority_share"] for c in first["clusters"]] == pytest.approx(table["majority_share"].tolist())
    assert {"cluster_labels.png", "cluster_profiles.png"} <= set(first["figures"])

    # a second run on a changed table: stability against a direct Jaccard over the rows both runs labelled
    changed = frame.iloc[40:].copy()
    changed.loc[changed.index[:60], FEATURES] += 2.5
    write_frame(sqlite_url, "blobs", changed)
    second = consensus_flow(**{**common, "seed": 6}, run_name="second")
    again = stored(sqlite_url, second["output_table"], "second")
    shared = np.intersect1d(labels["id"], again["id"])
    before = labels.set_index("id").loc[shared, "label"]
    after = again.set_index("id").loc[shared, "label"]
    run = MlflowClient(mlflow_store).get_run(second["mlflow_run_id"])
    lines = {c["id"]: c for c in second["clusters"]}
    checked = 0
    for cluster_id in np.unique(after):
        if cluster_id not in set(before):
            assert lines[int(cluster_id)]["jaccard_previous"] is None
            continue
        a, b = set(after.index[after == cluster_id]), set(before.index[before == cluster_id])
        direct = len(a & b) / len(a | b)
        assert lines[int(cluster_id)]["jaccard_previous"] == pytest.approx(direct)
        assert run.data.metrics[f"cluster_{cluster_id}_jaccard_previous"] == pytest.approx(direct)
        checked += 1
    assert checked >= 2
    assert "cluster_profiles.png" in second["figures"] and "consensus_cdf.png" in second["figures"]
    assert 0 <= run.data.metrics["pac"] <= 1
    history = MlflowClient(mlflow_store).get_metric_history(second["mlflow_run_id"], "consensus_cdf")
    assert [m.step for m in sorted(history, key=lambda m: m.step)] == list(range(7))
    assert sorted(history, key=lambda m: m.step)[-1].value == pytest.approx(1.0)

    # k was given: the automatic choice's criterion over k is logged all the same, on all 360 rows here
    assert "k_curve.png" in second["figures"] and "k_selection.png" not in second["figures"]
    assert run.data.metrics["k_criterion_rows"] == len(changed)
    curve = sorted(MlflowClient(mlflow_store).get_metric_history(second["mlflow_run_id"], "k_criterion"),
                   key=lambda m: m.step)
    steps, values = np.array([m.step for m in curve]), np.array([m.value for m in curve])
    assert steps[0] == 2 and np.all(np.diff(steps) == 1) and 4 in steps
    assert run.data.metrics["k_criterion_best_k"] == steps[np.argmax(values)]
    assert "geodesic silhouette" in run.data.params["k_criterion"]  # the criterion with the run's features


def test_assign_gives_new_rows_the_runs_confidence(executor, sqlite_url, mlflow_store, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    frame = blobs_frame(n=300, centers=3, seed=12)
    write_frame(sqlite_url, "blobs", frame)
    summary = consensus_flow(database_url=sqlite_url, table="blobs", n_clusters=3, ensemble_size=6, seed=2,
                             method="lwgp", tracking_uri=mlflow_store, experiment=unique("assign-evidence"),
                             run_name="fit", dask_address=executor)
    fitted = stored(sqlite_url, summary["output_table"], "fit")
    assigned = assign_flow(database_url=sqlite_url, table="blobs", model_uri=summary["model_uri"],
                           output_table="assigned", dask_address=executor)
    placed = stored(sqlite_url, "assigned", assigned["run_key"])
    assert placed["confidence"].between(0, 1).all()
    same = placed["label"].to_numpy() == fitted["label"].to_numpy()
    assert same.mean() > 0.95
    # the same rows in the same clusters: the run's confidence, recomputed by the labelling model
    np.testing.assert_allclose(placed["confidence"].to_numpy()[same], fitted["confidence"].to_numpy()[same],
                               rtol=1e-5, atol=1e-6)
