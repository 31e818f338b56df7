"""One pipeline, two executors: the same labels, stable ids, retention, latest-run view and model in-process
and on a Dask cluster (a ``LocalCluster`` of two worker processes).

Each test runs on a SQLite file and on PostgreSQL (skipped without a server), on each executor. The tables
are small but cut into four id-range partitions (the partition size is lowered), so every reduction crosses
partitions.
"""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa
from dask_helpers import blobs_table, labels_of

from flows.consensus import consensus_flow
from helpers.pipeline import expected_labels, unique
from lwec_tasks.core.mixes import RUN_DEFAULT_MIX
from lwec_tasks.io.names import parse_table_name

pytestmark = pytest.mark.slow

ROWS = 3000


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request, tmp_path, monkeypatch):
    """(url, source table) of a fresh 3,000-row blobs table; the run is cut into four partitions."""
    import lwec_tasks.stages.planning as planning

    monkeypatch.setattr(planning, "MIN_PARTITION_ROWS", 300)
    monkeypatch.setenv(planning.PARTITION_ROWS_ENV, "800")
    if request.param == "sqlite":
        url, table = f"sqlite:///{tmp_path / 'history.db'}", "blobs"
    else:
        url, table = request.getfixturevalue("postgres_url"), unique("blobs")
    blobs_table(url, table, ROWS, n_features=6, centers=5, cluster_std=2.5, seed=4)
    yield url, table
    if request.param == "postgres":
        _drop_all(url, table)


def _drop_all(url: str, table: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            inspector = sa.inspect(connection)
            preparer = connection.dialect.identifier_preparer
            for view in inspector.get_view_names():
                if view.startswith(table):
                    connection.exec_driver_sql(f"DROP VIEW {preparer.quote(view)}")
            for name in inspector.get_table_names():
                if name.startswith(table):  # a run's partition may have gone with its rows table
                    sa.Table(name, sa.MetaData()).drop(connection, checkfirst=True)
    finally:
        engine.dispose()


def run_keys(url: str, labels_table: str, source_table: str) -> set[str]:
    table = sa.table(labels_table, sa.column("run_key"), sa.column("source_table"))
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return set(connection.execute(sa.select(table.c.run_key).where(table.c.source_table == source_table)
                                          .distinct()).scalars())
    finally:
        engine.dispose()


def mlflow_run_of(url: str, labels_table: str, run_key: str) -> str | None:
    """The ``mlflow_run_id`` the runs table holds for ``run_key``."""
    from lwec_tasks.io.label_storage import runs_clause

    runs = runs_clause(parse_table_name(labels_table))
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.select(runs.c.mlflow_run_id).where(runs.c.run_key == run_key)).scalar_one()
    finally:
        engine.dispose()


def latest_view_rows(url: str, labels_table: str) -> list:
    view = sa.table(f"{labels_table}_latest", sa.column("run_key"), sa.column("source_table"))
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.select(view.c.source_table, view.c.run_key)).all()
    finally:
        engine.dispose()


def flow_parameters(url, table, scheduler, store, **overrides) -> dict:
    parameters = dict(database_url=url, table=table, n_clusters=5, method="lwgp", ensemble_size=6, seed=3,
                      dask_address=scheduler, tracking_uri=store, experiment=unique("history"),
                      output_table=f"{table}_labels")
    return {**parameters, **overrides}


def test_runs_prune_earlier_runs_and_keep_a_latest_view(prefect_server, mlflow_store, executor, database):
    url, table = database
    output = f"{table}_labels"
    other = f"{table}_other"
    blobs_table(url, other, 400, n_features=6, centers=3, seed=5)
    consensus_flow(**flow_parameters(url, other, executor, mlflow_store, output_table=output, keep_runs=1,
                                     dask_address=None), run_name="other")

    parameters = flow_parameters(url, table, executor, mlflow_store)
    for name in ("first", "second", "third"):
        summary = consensus_flow(**parameters, run_name=name, keep_runs=2)
        assert summary["rows_written"] == ROWS
    assert run_keys(url, output, table) == {"second", "third"}
    assert run_keys(url, output, other) == {"other"}  # another source table's runs are never pruned
    rows = latest_view_rows(url, output)
    assert len(rows) == ROWS + 400
    assert {tuple(row) for row in rows} == {(table, "third"), (other, "other")}

    fourth = consensus_flow(**parameters, run_name="fourth", keep_runs=None)  # keep every run
    assert run_keys(url, output, table) == {"second", "third", "fourth"}
    assert mlflow_run_of(url, output, "fourth") == fourth["mlflow_run_id"]  # the runs table links to MLflow
    assert {tuple(row) for row in latest_view_rows(url, output)} == {(table, "fourth"), (other, "other")}
    assert len(labels_of(url, output, "fourth")) == ROWS


def test_a_second_run_writes_the_ids_the_library_renumbering_gives(prefect_server, mlflow_store, executor,
                                                                    database, monkeypatch):
    from mlflow import MlflowClient

    import flows.consensus as consensus_module
    from helpers.renumber import align_to_previous

    url, table = database
    output = f"{table}_labels"
    parameters = flow_parameters(url, table, executor, mlflow_store)
    first = consensus_flow(**parameters, run_name="first")
    assert first["ids_aligned_to"] is None and first["id_agreement"] is None
    # Another method, k and seed: the raw ids of the second run have no reason to agree with the first's.
    second_run = {**parameters, "method": "lwea", "n_clusters": 6, "seed": 8}
    pictured = _record_cluster_map(monkeypatch, consensus_module)
    second = consensus_flow(**second_run, run_name="second")
    monkeypatch.undo()
    raw = consensus_flow(**second_run, run_name="raw", stable_ids=False)
    assert raw["ids_aligned_to"] is None

    earlier, aligned, unaligned = (labels_of(url, output, key) for key in ("first", "second", "raw"))
    assert sorted(unaligned["label"].unique().tolist()) == list(range(6))  # stable_ids=False: 0..k−1
    expected = align_to_previous(unaligned["label"].to_numpy(), unaligned["id"].to_numpy(),
                                 earlier["id"].to_numpy(), earlier["label"].to_numpy())
    assert aligned["id"].tolist() == unaligned["id"].tolist()
    assert aligned["label"].tolist() == expected.labels.tolist()
    assert expected.n_matched == 5 and expected.agreement > 0.5
    assert second["ids_aligned_to"] == "first"
    # The cluster map is coloured by the renumbered (written) ids, not the raw ones.
    positions = pictured["positions"]
    np.testing.assert_array_equal(pictured["labels"], aligned["label"].to_numpy()[positions])
    assert np.any(pictured["labels"] != unaligned["label"].to_numpy()[positions])
    assert "dendrogram.png" in second["figures"] and "cluster_map.png" in second["figures"]
    assert second["id_agreement"] == pytest.approx(expected.agreement)

    run = MlflowClient(mlflow_store).get_run(second["mlflow_run_id"])
    assert run.data.params["ids_aligned_to"] == "first" and run.data.params["stable_ids"] == "True"
    assert run.data.tags["lwec.aligned_to_run_key"] == "first"
    assert run.data.metrics["id_agreement_with_previous_run"] == pytest.approx(expected.agreement)
    assert run.data.metrics["objects_shared_with_previous_run"] == ROWS
    assert "lwec.aligned_to_run_key" not in MlflowClient(mlflow_store).get_run(raw["mlflow_run_id"]).data.tags


@pytest.mark.parametrize("method", ["lwgp", "lwea"])
def test_the_logged_labelling_model_gives_back_the_written_labels(prefect_server, mlflow_store, executor,
                                                                  database, method, monkeypatch):
    import pandas as pd
    from mlflow import MlflowClient

    import flows.consensus as consensus_module
    from lwec_tasks.tracking import load_placement_model

    url, table = database
    output = f"{table}_labels"
    parameters = flow_parameters(url, table, executor, mlflow_store, method=method)
    consensus_flow(**{**parameters, "n_clusters": 4}, run_name="earlier")
    pictured = _record_cluster_map(monkeypatch, consensus_module)
    summary = consensus_flow(**parameters, run_name="modelled")  # ids aligned to "earlier": not 0..k−1
    assert summary["model_uri"] == f"runs:/{summary['mlflow_run_id']}/model"
    figures = {"eci_distribution.png", "cluster_sizes.png", "cluster_map.png", "row_confidence.png",
               "cluster_profiles.png", "consensus_cdf.png", "k_curve.png"}
    if method == "lwea":
        figures.add("dendrogram.png")
    assert set(summary["figures"]) == figures
    logged = MlflowClient(mlflow_store).list_artifacts(summary["mlflow_run_id"], "figures")
    assert {artifact.path for artifact in logged} == {f"figures/{name}" for name in figures}
    assert all(artifact.file_size > 0 for artifact in logged)
    assert set(summary["timings"]) == {"load", "generate", "eci", "consensus", "stable_ids", "evidence", "write",
                                       "model"}

    placement = load_placement_model(summary["model_uri"], mlflow_store)
    assert placement.method == method and placement.n_clusters == 5
    engine = sa.create_engine(url)
    try:
        source = pd.read_sql(sa.select(sa.table(table, *(sa.column(c) for c in ["id", *placement.feature_columns])))
                             .order_by(sa.column("id")), engine)
    finally:
        engine.dispose()
    written = labels_of(url, output, "modelled")
    assert written["id"].tolist() == source["id"].tolist()
    # The cluster map: the local run's seeded sample of the standardised rows, coloured by the written ids.
    positions, rows, sample_labels, legend = pictured["positions"], pictured["rows"], pictured["labels"], \
        pictured["legend"]
    assert len(positions) == min(ROWS, 2000) and np.all(np.diff(positions) > 0)
    np.testing.assert_array_equal(sample_labels, written["label"].to_numpy()[positions])
    features = source[list(placement.feature_columns)].to_numpy()
    np.testing.assert_allclose(rows, ((features - features.mean(axis=0)) / features.std(axis=0))[positions],
                               atol=1e-9)
    assert legend == [str(i) for i in np.unique(sample_labels)]
    assert set(legend) <= {str(i) for i in written["label"].unique()}
    assert summary["ids_aligned_to"] == "earlier"  # the ids gathered for the map are the renumbered ones
    predicted = placement.predict(source[list(placement.feature_columns)].to_numpy())
    given_back = float((predicted == written["label"].to_numpy()).mean())
    assert given_back >= 0.95
    run = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"])
    assert run.data.metrics["model_labels_given_back"] == pytest.approx(given_back, abs=0.01)
    assert run.data.tags["lwec.model_uri"] == summary["model_uri"]


def _record_cluster_map(monkeypatch, consensus_module) -> dict:
    """Record the flow's cluster-map input (sample positions, rows, gathered labels) and the legend of the map
    drawn from them (a Dask run draws its figures on a worker, from the same inputs)."""
    from lwec_tasks.tracking.figures import cluster_map_figure

    recorded = {}
    gather, draw = consensus_module.sample_labels, consensus_module.draw_figures

    def sample_labels(table, labels, positions):
        recorded["positions"] = np.asarray(positions)
        return gather(table, labels, positions)

    def draw_figures(executor, request, reliability, ensemble, labels, shown_labels, evidence=None):
        recorded["rows"], recorded["labels"] = np.asarray(ensemble.sample_rows), np.asarray(shown_labels)
        figure = cluster_map_figure(ensemble.sample_rows, shown_labels, request.method)
        recorded["legend"] = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
        return draw(executor, request, reliability, ensemble, labels, shown_labels, evidence)

    monkeypatch.setattr(consensus_module, "sample_labels", sample_labels)
    monkeypatch.setattr(consensus_module, "draw_figures", draw_figures)
    return recorded


@pytest.mark.parametrize("method, n_clusters", [("lwea", 5), ("lwgp", 5), ("lwea", "auto"), ("lwgp", "auto")])
def test_both_executors_give_the_same_labels_ids_and_model(prefect_server, mlflow_store, dask_scheduler, database,
                                                           method, n_clusters):
    """Same seed, same table: identical labels in-process and on Dask, for a second run too (stable ids aligned
    to the first), with equal labelling models; for "auto", the library's choice of k on the same ensemble."""
    import pandas as pd

    from lwec_tasks import ari
    from lwec_tasks.tracking import load_placement_model

    url, table = database
    output = f"{table}_labels"
    summaries = {}
    for name, address in (("local", None), ("dask", dask_scheduler)):
        parameters = flow_parameters(url, table, address, mlflow_store, method=method, n_clusters=n_clusters,
                                     output_table=f"{output}_{name}")
        consensus_flow(**{**parameters, "n_clusters": 4, "seed": 9}, run_name="earlier")
        summaries[name] = consensus_flow(**parameters, run_name="later")
    local, on_dask = summaries["local"], summaries["dask"]
    assert local["k"] == on_dask["k"] and local["ids_aligned_to"] == on_dask["ids_aligned_to"] == "earlier"
    a, b = labels_of(url, f"{output}_local", "later"), labels_of(url, f"{output}_dask", "later")
    assert a["id"].tolist() == b["id"].tolist() and len(a) == ROWS
    assert a["label"].tolist() == b["label"].tolist()
    assert local["id_agreement"] == pytest.approx(on_dask["id_agreement"])
    # The partition is the library's on the same rows and seed (ids renamed by the alignment).
    engine = sa.create_engine(url)
    try:
        frame = pd.read_sql_table(table, engine)
    finally:
        engine.dispose()
    features = [c for c in frame.columns if c.startswith("f")]
    expected = expected_labels(frame, features, n_clusters, 6, 3, method=method)
    assert ari(expected.loc[a["id"]].to_numpy(), a["label"].to_numpy()) == pytest.approx(1.0)
    models = [load_placement_model(s["model_uri"], mlflow_store) for s in (local, on_dask)]
    assert models[0].digest() == models[1].digest()
    rows = np.random.default_rng(0).normal(size=(500, len(models[0].feature_columns)))
    np.testing.assert_array_equal(models[0].predict(rows), models[1].predict(rows))


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
def test_automatic_k_above_the_selection_sample_is_the_library_s_on_both_executors(
        prefect_server, mlflow_store, dask_scheduler, database, monkeypatch, method):
    """With the choice of k made on a sample (its size lowered to a third of the table), both executors gather
    the rows the library samples: the same k and labels as the library's automatic choice with the run's seed."""
    import pandas as pd
    from sklearn.preprocessing import StandardScaler

    from lwec_tasks import ari, generate_base_clusterings
    from lwec_tasks.core import k_criterion
    from lwec_tasks.core.auto_k import auto_consensus

    monkeypatch.setattr(k_criterion, "SELECTION_SAMPLE", ROWS // 3)
    url, table = database
    output = f"{table}_sampled_k"
    summaries = {}
    for name, address in (("local", None), ("dask", dask_scheduler)):
        summaries[name] = consensus_flow(**flow_parameters(url, table, address, mlflow_store, method=method,
                                                           n_clusters="auto", output_table=f"{output}_{name}"),
                                         run_name="sampled")
    a, b = labels_of(url, f"{output}_local", "sampled"), labels_of(url, f"{output}_dask", "sampled")
    assert a["label"].tolist() == b["label"].tolist() and len(a) == ROWS
    engine = sa.create_engine(url)
    try:
        frame = pd.read_sql_table(table, engine).sort_values("id")
    finally:
        engine.dispose()
    features = [c for c in frame.columns if c.startswith("f")]
    X = StandardScaler().fit_transform(frame[features].to_numpy(dtype=float))
    base = generate_base_clusterings(X, n_clusterings=6, random_state=3, generators=RUN_DEFAULT_MIX)
    selection, expected = auto_consensus(base, method, random_state=3, features=X)
    assert summaries["local"]["k"] == summaries["dask"]["k"] == selection.k
    assert ari(expected, a.set_index("id").loc[frame["id"], "label"].to_numpy()) == pytest.approx(1.0)


def test_in_process_map_runs_every_task_before_raising_the_first_failure():
    """A failed partition task is raised only once the other partitions' tasks are done, so the caller's
    clean-up (e.g. dropping a pending run's table) never races a write still running."""
    import threading
    import time
    from contextlib import closing

    from lwec_tasks.executors.in_process import InProcess

    finished = []
    lock = threading.Lock()

    def task(p):
        if p == 0:
            raise RuntimeError("partition 0 failed")
        time.sleep(0.05 * p)
        with lock:
            finished.append(p)
        return p

    with closing(InProcess(n_threads=2)) as executor:
        with pytest.raises(RuntimeError, match="partition 0 failed"):
            executor.map(task, range(5))
        assert sorted(finished) == [1, 2, 3, 4]
        assert [h.result() for h in executor.map(task, range(1, 4))] == [1, 2, 3]
