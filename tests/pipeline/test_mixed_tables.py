"""Real tables end to end: numeric, text and boolean columns with NULLs, odd column names; every row labelled,
the left-out columns named with their reasons, new rows with unseen categories and NULLs labelled."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from mlflow import MlflowClient

from flows.assign import assign_flow
from flows.consensus import consensus_flow
from helpers.mixed import mixed_frame, write_mixed
from helpers.pipeline import read_labels, unique
from lwec_tasks.core.base_clusterings import categorical_k_max, paper_k_max
from lwec_tasks.core.encoding import DEFAULT_RELEVANCE_GATE
from lwec_tasks.core.mixes import RUN_DEFAULT_MIX_CATEGORICAL
from lwec_tasks.preflight import check_assign_request

pytestmark = pytest.mark.slow


LEFT_OUT = {"id": "id column", "target": "label column", "serial": "high-cardinality text (150 distinct values)",
            "flat": "constant", "seen": "date/time"}

LABELLED_FEATURES = ("amount (€)", "size/weight", "colour", "active")


def run_and_assign(url: str, store: str, table: str, monkeypatch):
    frame = mixed_frame()
    write_mixed(url, table, frame)
    summary = consensus_flow(database_url=url, table=table, n_clusters=3, label_column="target", ensemble_size=6,
                             seed=3, experiment=unique("mixed"), tracking_uri=store)
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    assert sorted(stored["id"]) == sorted(frame["id"]) and stored["label"].notna().all()  # every row labelled
    assert summary["columns_left_out"] == LEFT_OUT
    # the NULLs of 'colour' and 'active' fall at random: unknown values, imputed, not a group of their own
    nulls = {name: int(frame[name].isna().sum()) for name in ("amount (€)", "colour", "active")}
    assert summary["imputed_values"] == nulls
    for name in ("colour", "active"):
        column = summary["categorical_columns"][name]
        assert column["null_rows"] == nulls[name] and column["nulls"] == "imputed"
        assert column["null_relevance"] <= DEFAULT_RELEVANCE_GATE
    assert summary["nmi"] > 0.8
    params = MlflowClient(store).get_run(summary["mlflow_run_id"]).data.params
    # a text column that goes with the clusters moves the rows, so the run given no mix takes k-means
    assert summary["categorical_columns"]["colour"]["relevance"] > DEFAULT_RELEVANCE_GATE
    assert params["generators"] == RUN_DEFAULT_MIX_CATEGORICAL
    for name, reason in LEFT_OUT.items():
        assert f"{name}: {reason}" in params["columns_left_out"]
    assert params["imputed_values"] == "; ".join(f"{name}: {n}" for name, n in nulls.items())
    assert f"colour: text, 4 levels, {nulls['colour']} NULL imputed, relevance" in params["categorical_columns"]
    # the text column moves the rows: the naive-Bayes steps ran after the consensus, and the labelling model (their
    # last model) gives every row of the table, its NULLs as they are, the label the run wrote
    assert summary["naive_bayes_moved"] and params["naive_bayes_steps"] == str(len(summary["naive_bayes_moved"]))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    placed = mlflow.pyfunc.load_model(summary["model_uri"]).predict(frame.drop(columns=["target"]))
    np.testing.assert_array_equal(placed, stored.set_index("id").loc[frame["id"], "label"].to_numpy())
    # the profiles: each cluster's level shares of the text and boolean columns beside the numeric means
    client = MlflowClient(store)
    # such a table's base clusterings draw k up to max(∛N, 2k), not the paper's √N
    base = pd.read_csv(client.download_artifacts(summary["mlflow_run_id"], "eci_per_cluster.csv"))
    ks = base.groupby("base_clustering").size()
    assert len(ks) == 6 and ks.max() <= categorical_k_max(len(frame), 3) < paper_k_max(len(frame))
    profiles = pd.read_csv(client.download_artifacts(summary["mlflow_run_id"], "cluster_profiles.csv"))
    shares = [c for c in profiles.columns if c.startswith("colour=") and c.endswith("_share")]
    assert shares == ["colour=blue_share", "colour=green_share", "colour=red_share", "colour=NULL_share"]
    np.testing.assert_allclose(profiles[shares].sum(axis=1), 1.0)
    assert {"amount (€)_mean", "active=True_share", "active=NULL_share"} <= set(profiles.columns)
    assert profiles["colour=red_share"].max() > 0.8  # one cluster is the red one
    assert ((profiles["cohesion"] > 0) & (profiles["cohesion"] <= 1)).all()
    assert {"cluster_profiles.png", "cluster_labels.png"} <= set(summary["figures"])  # drawn for a mixed table too
    # a row with an imputed value is only as sure as what was observed of it
    confidence = stored.set_index("id")["confidence"]
    gaps = frame.loc[frame["amount (€)"].isna(), "id"]
    assert confidence.loc[gaps].max() <= 3 / 4 + 1e-6
    unknown_colour = frame.loc[frame["colour"].isna() & frame["amount (€)"].notna() & frame["active"].notna(), "id"]
    assert len(unknown_colour) and confidence.loc[unknown_colour].max() <= 3 / 4 + 1e-6

    new = mixed_frame(12, seed=9).drop(columns=["target"])
    new["id"] = np.arange(1001, 1013)
    new.loc[0, "colour"] = "purple"  # never seen
    new.loc[1, ["amount (€)", "colour", "active"]] = [np.nan, None, None]
    new_table = f"{table}_new"
    write_mixed(url, new_table, new.assign(target=0))
    # the command's checks let rows with NULLs through when the features are named: the typed model fills them
    check_assign_request(url, new_table, summary["model_uri"], feature_columns=list(LABELLED_FEATURES))
    assigned = assign_flow(database_url=url, table=new_table, model_uri=summary["model_uri"])
    labelled = read_labels(url, assigned["output_table"], assigned["run_key"])
    assert sorted(labelled["id"]) == list(range(1001, 1013)) and labelled["label"].notna().all()
    assert set(labelled["label"]) <= set(stored["label"])
    # the assign flow reads the new rows' gaps as the model does on a frame: the same labels
    placed = mlflow.pyfunc.load_model(summary["model_uri"]).predict(new)
    np.testing.assert_array_equal(labelled.set_index("id").loc[new["id"], "label"].to_numpy(), placed)
    return summary


def test_a_mixed_sqlite_table_is_clustered_whole_and_new_rows_are_labelled(prefect_server, mlflow_store, sqlite_url,
                                                                          monkeypatch):
    summary = run_and_assign(sqlite_url, mlflow_store, "mixed", monkeypatch)
    from lwec_tasks.tracking.model import load_placement_model

    placement = load_placement_model(summary["model_uri"], mlflow_store)
    assert placement.feature_columns == LABELLED_FEATURES
    schema = mlflow.models.get_model_info(summary["model_uri"]).signature.inputs
    assert {spec.name: spec.type.name for spec in schema.inputs} == {
        "amount (€)": "double", "size/weight": "double", "colour": "string", "active": "boolean"}


@pytest.mark.postgres
def test_a_mixed_postgres_table_is_clustered_whole_and_new_rows_are_labelled(prefect_server, mlflow_store,
                                                                            postgres_url, monkeypatch):
    table = unique("mixed")
    try:
        run_and_assign(postgres_url, mlflow_store, table, monkeypatch)
    finally:
        from helpers.pipeline import drop_labels_table

        engine = sa.create_engine(postgres_url)
        with engine.begin() as connection:
            drop_labels_table(connection, f"{table}_lwec_labels")
            drop_labels_table(connection, f"{table}_new_lwec_labels")
            for name in (table, f"{table}_new"):
                sa.Table(name, sa.MetaData()).drop(connection, checkfirst=True)
        engine.dispose()


def test_a_mixed_duckdb_table_is_clustered_whole_and_new_rows_are_labelled(prefect_server, mlflow_store, tmp_path,
                                                                          monkeypatch):
    pytest.importorskip("duckdb_engine", reason="duckdb-engine is not installed (pip install 'lwec[duckdb]')")
    run_and_assign(f"duckdb:///{tmp_path / 'mixed.duckdb'}", mlflow_store, "mixed", monkeypatch)


def test_nulls_missing_at_random_make_no_clusters_of_their_own_under_automatic_k(prefect_server, mlflow_store,
                                                                                 sqlite_url):
    # Three groups apart in the numbers, a text column naming each group with 15 % of its values NULL at random.
    # Kept as a level, the NULL rows of each group were a group of their own in the one-hot space: automatic k
    # found 4 (NMI 0.66). Imputed as unknown, they sit as far from every city as a new value and go with their numbers.
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 900)
    centres = np.array([[0.0, 0.0, 0.0], [6.0, 0.0, 0.0], [0.0, 6.0, 0.0]])
    frame = pd.DataFrame(centres[y] + rng.normal(size=(900, 3)), columns=["a", "b", "c"])
    frame["city"] = np.where(rng.random(900) < 0.15, None, np.array(["Oslo", "Lima", "Pune"], dtype=object)[y])
    frame.insert(0, "id", np.arange(900))
    frame["target"] = y
    frame.to_sql("cities", sa.create_engine(sqlite_url), index=False)
    summary = consensus_flow(database_url=sqlite_url, table="cities", n_clusters="auto", label_column="target",
                             seed=0, experiment=unique("nulls"), tracking_uri=mlflow_store)
    assert summary["categorical_columns"]["city"]["nulls"] == "imputed"
    assert summary["k"] == 3 and summary["nmi"] > 0.95
    from lwec_tasks.request import ConsensusRequest
    from lwec_tasks.tasks.summary import summary_markdown

    request = ConsensusRequest(database_url=sqlite_url, table="cities", n_clusters="auto", label_column="target")
    nulls = int(frame["city"].isna().sum())
    assert f"| Missing values | `city`: {nulls} NULL, missing at random (imputed: unknown) |" in \
        summary_markdown(request, summary)
