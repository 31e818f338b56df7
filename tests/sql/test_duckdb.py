"""DuckDB, the third database: a DuckDB file's table and a DuckDB view over Parquet files give the labels SQLite
gives for the same rows and seed, written back into the DuckDB file the same way (labels storage, ``_latest``
view, pruning); features read as Arrow, labels appended from Arrow."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from helpers.pipeline import blobs_frame, read_rows_portable, unique, write_frame
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.names import parse_table_name

pytest.importorskip("duckdb", reason="duckdb is not installed (pip install 'lwec[duckdb]')")
pytest.importorskip("duckdb_engine", reason="duckdb-engine is not installed (pip install 'lwec[duckdb]')")

FEATURES = ["f0", "f1", "f2", "f3"]
ROWS = 150


#: Rows per partition: the table is read, labelled and written back in three partitions (on threads).
PARTITION_ROWS = 50


def run_flow(url: str, table: str, store: str, **overrides) -> dict:
    import lwec_tasks.stages.planning as planning
    from flows.consensus import consensus_flow

    parameters = dict(database_url=url, table=table, n_clusters=3, feature_columns=FEATURES, id_column="id",
                      label_column="target", ensemble_size=4, seed=5, experiment=unique("duckdb"),
                      tracking_uri=store, output_table="labels")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(planning, "MIN_PARTITION_ROWS", PARTITION_ROWS)
        patch.setenv(planning.PARTITION_ROWS_ENV, str(PARTITION_ROWS))
        return consensus_flow(**{**parameters, **overrides})


def relation(url: str, name: str) -> pd.DataFrame:
    """A labels view's run keys, ids and labels, sorted (what the two databases must agree on)."""
    engine = sa.create_engine(url)
    try:
        view = sa.table(name, sa.column("run_key"), sa.column("id"), sa.column("label"))
        with engine.connect() as connection:
            rows = connection.execute(sa.select(view.c.run_key, view.c.id, view.c.label)
                                      .order_by(view.c.run_key, view.c.id)).all()
    finally:
        engine.dispose()
    return pd.DataFrame(rows, columns=["run_key", "id", "label"]).astype({"id": np.int64, "label": np.int64})


def storage(url: str) -> dict[str, pd.DataFrame]:
    """The labels view and the latest-run view of the output table ``labels``."""
    return {name: relation(url, name) for name in ("labels", "labels_latest")}


def frame() -> pd.DataFrame:
    return blobs_frame(n=ROWS, seed=11)


#: The runs made on each database: (run_name, the flow's other parameters). The second keeps one run only.
RUNS = (("first", {}), ("second", {"keep_runs": 1, "seed": 6}))


@pytest.fixture(scope="module")
def sqlite_answer(prefect_server, mlflow_store, tmp_path_factory) -> dict[str, dict[str, pd.DataFrame]]:
    """What SQLite stores for :data:`RUNS` on :func:`frame` as table ``blobs``: run name → :func:`storage` after
    it."""
    url = f"sqlite:///{tmp_path_factory.mktemp('reference') / 'reference.db'}"
    write_frame(url, "blobs", frame())
    answer = {}
    for name, overrides in RUNS:
        run_flow(url, "blobs", mlflow_store, run_name=name, **overrides)
        answer[name] = storage(url)
    return answer


def test_a_duckdb_table_gets_sqlites_labels_and_history(mlflow_store, tmp_path, sqlite_answer):
    url = f"duckdb:///{tmp_path / 'features.duckdb'}"
    write_frame(url, "blobs", frame())
    for name, overrides in RUNS:
        summary = run_flow(url, "blobs", mlflow_store, run_name=name, **overrides)
        assert summary["output_table"] == "labels" and summary["rows_written"] == ROWS
        stored = storage(url)
        for relation_name, expected in sqlite_answer[name].items():
            pd.testing.assert_frame_equal(stored[relation_name], expected, obj=f"{relation_name} after {name}")
    # The second run kept one run: the first is pruned, and _latest shows the second (as on SQLite).
    assert stored["labels"]["run_key"].unique().tolist() == ["second"]
    assert stored["labels_latest"]["run_key"].unique().tolist() == ["second"]
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        runs = connection.execute(sa.text("SELECT run, run_key, published FROM labels_runs ORDER BY run")).all()
    engine.dispose()
    assert [tuple(run) for run in runs] == [(2, "second", True)]  # numbered by the runs table's own sequence


def test_a_duckdb_view_over_parquet_files_gets_sqlites_labels(mlflow_store, tmp_path, sqlite_answer):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = frame()
    parts = tmp_path / "parquet"
    parts.mkdir()
    half = len(rows) // 2
    for number, part in enumerate((rows.iloc[:half], rows.iloc[half:])):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), parts / f"part-{number}.parquet")
    url = f"duckdb:///{tmp_path / 'lake.duckdb'}"
    engine = sa.create_engine(url)
    files = sa.select(sa.literal_column("*")).select_from(sa.func.read_parquet(str(parts / "*.parquet")))
    with engine.begin() as connection:  # the path rendered as a literal by the dialect
        connection.exec_driver_sql(
            f"CREATE VIEW blobs AS {files.compile(engine, compile_kwargs={'literal_binds': True})}")
    engine.dispose()

    run_flow(url, "blobs", mlflow_store, run_name="first")
    lake = storage(url)
    for name, expected in sqlite_answer["first"].items():
        pd.testing.assert_frame_equal(lake[name], expected, obj=name)


# ----------------------------------------------------------------------------- the I/O underneath, without flows


@pytest.fixture
def duckdb_url(tmp_path) -> str:
    return f"duckdb:///{tmp_path / 'io.duckdb'}"


def test_features_come_as_arrow_and_equal_the_portable_read(duckdb_url, monkeypatch):
    import lwec_tasks.io.bulk_read as bulk_read
    from lwec_tasks.io import describe_source, open_engine, read_rows

    engine = open_engine(duckdb_url)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE t AS SELECT i AS id, i * 0.5 AS half, (i * 0.1)::FLOAT AS single, "
            "(i * 1.25)::DECIMAL(12, 3) AS amount, 'row ' || i AS note, i::SMALLINT AS small, "
            "CASE WHEN i % 7 = 0 THEN NULL ELSE i END AS gaps, i::DECIMAL(20, 0) AS key FROM range(300) t(i)")
    source = describe_source(engine, parse_table_name("t"))
    read = []
    arrow = bulk_read._read_duckdb
    monkeypatch.setattr(bulk_read, "_read_duckdb", lambda *args: read.append(True) or arrow(*args))
    columns = ["id", "half", "single", "amount", "note", "small", "gaps", "key"]
    fast = read_rows(engine, source, columns, order_by="id", exact_columns=["key"], chunk_size=64)
    assert read, "the DuckDB Arrow read was not used"
    portable = read_rows_portable(engine, source, columns, order_by="id", exact_columns=["key"], chunk_size=64)
    pd.testing.assert_frame_equal(fast, portable)
    assert fast["single"].dtype == np.float64 and fast["key"].dtype == np.int64
    assert (fast["single"] == np.float32(0.1 * np.arange(300, dtype=np.float32)).astype(np.float64)).sum() > 0
    engine.dispose()


def test_labels_are_appended_from_arrow_and_odd_names_are_quoted(duckdb_url, monkeypatch):
    import lwec_tasks.io.staging as staging
    from lwec_tasks.io import LabelRows, ensure_latest_view, open_engine, write_labels

    inserted = []
    insert = staging._insert_arrow
    monkeypatch.setattr(staging, "_insert_arrow", lambda *args: inserted.append(True) and insert(*args))
    engine = open_engine(duckdb_url)
    output = 'Odd "labels"; DROP TABLE x'
    for key in ("a", "b"):
        write_labels(engine, parse_table_name(f'"{output.replace(chr(34), 2 * chr(34))}"'), LabelRows(
            run_key=key, ids=np.arange(5), labels=np.arange(5) % 2, k=2, method="lwea", theta=0.4, ensemble_size=3,
            seed=0, source_table="t"), keep_runs=1)
    assert inserted
    quoted = f'"{output.replace(chr(34), 2 * chr(34))}"'
    ensure_latest_view(engine, parse_table_name(quoted))
    with engine.connect() as connection:
        view = sa.table(output, sa.column("run_key"), sa.column("label"))
        latest = sa.table(f"{output}_latest", sa.column("run_key"))
        assert connection.execute(sa.select(view.c.run_key, view.c.label)).all() == [("b", n % 2) for n in range(5)]
        assert set(connection.execute(sa.select(latest.c.run_key)).scalars()) == {"b"}
    engine.dispose()


def label_rows(key, ids, labels=None):
    from lwec_tasks.io import LabelRows

    ids = np.asarray(ids)
    return LabelRows(run_key=key, ids=ids, labels=np.zeros(len(ids), dtype=np.int64) if labels is None else labels,
                     k=2, method="lwea", theta=0.4, ensemble_size=3, seed=0, source_table="t")


def test_a_duplicate_id_fails_the_write_and_its_pruning_changes_nothing(duckdb_url):
    from lwec_tasks.io import DatabaseRefusedError, open_engine, write_labels

    engine = open_engine(duckdb_url)
    for key in ("a", "b"):
        write_labels(engine, parse_table_name("labels"), label_rows(key, [1, 2]))
    before = relation(duckdb_url, "labels")
    with pytest.raises(DatabaseRefusedError, match="duplicate"):  # the Arrow insert fails; the prune is undone
        write_labels(engine, parse_table_name("labels"), label_rows("c", [7, 8, 8]), keep_runs=1)
    pd.testing.assert_frame_equal(relation(duckdb_url, "labels"), before)
    engine.dispose()


def test_latest_views_made_at_once_by_several_threads(duckdb_url):
    import threading

    from lwec_tasks.io import ensure_latest_view, open_engine, write_labels

    engine = open_engine(duckdb_url)
    write_labels(engine, parse_table_name("labels"), label_rows("a", [1]))
    made, errors = [], []

    def create():
        try:
            made.append(ensure_latest_view(engine, parse_table_name("labels")))
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and made == ["labels_latest"] * 4  # a transaction that lost the race looks again
    engine.dispose()


def test_a_run_on_dask_workers_is_refused_naming_duckdb(duckdb_url):
    from lwec_tasks.request import ConsensusRequest

    with pytest.raises(LwecInputError, match="DuckDB file cannot be written from Dask workers"):
        ConsensusRequest(database_url=duckdb_url, table="t", n_clusters=2, dask_address="tcp://127.0.0.1:8786")


def test_a_file_another_process_holds_is_unreachable_not_refused(tmp_path):
    import subprocess
    import sys

    from lwec_tasks.io import DatabaseUnreachableError, describe_source, open_engine

    path = tmp_path / "held.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, duckdb; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
                               "sys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        engine = open_engine(f"duckdb:///{path}")
        with pytest.raises(DatabaseUnreachableError, match="Could not set lock on file"):
            describe_source(engine, parse_table_name("t"))  # worth retrying: the other process may let go of the file
        engine.dispose()
    finally:
        holder.communicate("")
