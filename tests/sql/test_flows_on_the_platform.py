"""The flows on tables as data platforms hold them: uuid ids in a schema, a view in the way of the output, a
refused privilege, key-like columns, and a rerun after MLflow failed."""

from __future__ import annotations

import decimal
import logging
import socket
import time
import uuid

import pandas as pd
import pytest
import sqlalchemy as sa
from mlflow import MlflowClient

from flows.assign import assign_flow
from flows.consensus import consensus_flow
from helpers.pipeline import blobs_frame, free_port, read_labels, unique, write_frame
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import DatabaseRefusedError, DatabaseUnreachableError
from lwec_tasks.tracking import TrackingError

FEATURES = ["f0", "f1", "f2", "f3"]


def parameters(url, store, table, **overrides) -> dict:
    return {"database_url": url, "table": table, "n_clusters": 3, "ensemble_size": 4, "seed": 3,
            "label_column": "target", "experiment": unique("platform"), "tracking_uri": store, **overrides}


def task_runs(state, prefix: str) -> list:
    """The task runs of the flow run behind ``state`` whose names start with ``prefix``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        this_run = FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        return [t for t in client.read_task_runs(flow_run_filter=this_run) if t.name.startswith(prefix)]


def labels_in(url: str, schema: str | None, table: str) -> pd.DataFrame:
    engine = sa.create_engine(url)
    stored = sa.Table(table, sa.MetaData(), schema=schema, autoload_with=engine)
    with engine.connect() as connection:
        rows = connection.execute(sa.select(stored).order_by(stored.c.run_key, stored.c.id)).mappings().all()
    engine.dispose()
    return pd.DataFrame(rows)


def write_features(url: str, schema: str | None, table: str, frame: pd.DataFrame, id_type=sa.BigInteger) -> None:
    columns = [sa.Column("id", id_type, primary_key=True, autoincrement=False),
               *(sa.Column(name, sa.Float) for name in FEATURES),
               sa.Column("target", sa.BigInteger)]
    created = sa.Table(table, sa.MetaData(), *columns, schema=schema)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        created.create(connection)
        connection.execute(sa.insert(created), frame[["id", *FEATURES, "target"]].to_dict("records"))
    engine.dispose()


# ----------------------------------------------------------------------------- ids and schemas


@pytest.mark.postgres
def test_postgres_uuid_ids_in_a_schema_end_to_end(prefect_server, mlflow_store, pg_schema, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)  # where lwec assign looks the model up
    url, schema = pg_schema
    frame = blobs_frame(n=90)
    frame["id"] = [uuid.UUID(int=i * 7_919 + 1) for i in range(len(frame))]
    write_features(url, schema, "features", frame, sa.Uuid)
    table = f"{schema}.features"

    summary = consensus_flow(**parameters(url, mlflow_store, table))
    stored = labels_in(url, schema, "features_lwec_labels")
    assert sorted(stored["id"]) == sorted(frame["id"]) and all(isinstance(v, uuid.UUID) for v in stored["id"])
    assert set(stored["source_table"]) == {table}
    engine = sa.create_engine(url)
    assert "features_lwec_labels_latest" in sa.inspect(engine).get_view_names(schema=schema)
    engine.dispose()
    assert summary["output_table"] == f"{schema}.features_lwec_labels" and summary["rows_written"] == len(frame)

    again = consensus_flow(**parameters(url, mlflow_store, table, n_clusters=4))
    assert again["ids_aligned_to"] == summary["run_key"] and again["id_agreement"] > 0.5
    assigned = assign_flow(database_url=url, table=table, model_uri=summary["model_uri"],
                           output_table=f"{schema}.assigned")
    placed = labels_in(url, schema, "assigned")
    assert assigned["rows_labelled"] == len(frame) and sorted(placed["id"]) == sorted(frame["id"])


@pytest.mark.postgres
def test_postgres_numeric_ids_keep_every_digit(prefect_server, mlflow_store, pg_schema):
    url, schema = pg_schema
    frame = blobs_frame(n=60)
    # float64 would merge neighbours; Decimal, since older drivers bind a Python int beyond int64 as an integer
    frame["id"] = [decimal.Decimal(12345678901234567890 + i) for i in range(len(frame))]
    write_features(url, schema, "numbered", frame, sa.Numeric(20, 0))
    summary = consensus_flow(**parameters(url, mlflow_store, f"{schema}.numbered"))
    stored = labels_in(url, schema, "numbered_lwec_labels")
    assert summary["rows_written"] == len(frame)
    assert sorted(int(v) for v in stored["id"]) == sorted(frame["id"])


# ----------------------------------------------------------------------------- refused before anything runs


def test_the_latest_view_as_output_is_refused_at_once(prefect_server, mlflow_store, sqlite_url):
    write_frame(sqlite_url, "blobs", blobs_frame(n=60))
    consensus_flow(**parameters(sqlite_url, mlflow_store, "blobs"))
    state = consensus_flow(**parameters(sqlite_url, mlflow_store, "blobs", output_table="blobs_lwec_labels_latest",
                                        n_clusters=4), return_state=True)
    assert state.is_failed()
    with pytest.raises(LwecInputError) as error:
        state.result()
    assert str(error.value) == (
        "output_table='blobs_lwec_labels_latest' is a view, not a table; labels are written to a table: choose "
        "another name (this looks like the latest-labels view of 'blobs_lwec_labels': pass "
        "output_table='blobs_lwec_labels')")
    assert [t.run_count for t in task_runs(state, "load-features")] == [1]  # not retried


def test_an_output_table_keyed_by_other_ids_is_refused(prefect_server, mlflow_store, sqlite_url):
    frame = blobs_frame(n=60)
    write_frame(sqlite_url, "blobs", frame)
    words = frame.assign(id=[f"row-{i}" for i in range(len(frame))])
    write_frame(sqlite_url, "words", words)
    consensus_flow(**parameters(sqlite_url, mlflow_store, "words", output_table="shared_labels"))
    with pytest.raises(LwecInputError, match=r"output_table 'shared_labels' holds text ids .* but the ids of table "
                                             r"'blobs' are integer"):
        consensus_flow(**parameters(sqlite_url, mlflow_store, "blobs", output_table="shared_labels"))
    assert set(read_labels(sqlite_url, "shared_labels")["source_table"]) == {"words"}


@pytest.mark.postgres
def test_postgres_a_refused_privilege_fails_at_once_in_one_line(prefect_server, mlflow_store, pg_schema):
    url, schema = pg_schema
    write_features(url, schema, "private", blobs_frame(n=60))
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.text(f'REVOKE SELECT ON "{schema}".private FROM CURRENT_USER'))
    engine.dispose()
    state = consensus_flow(**parameters(url, mlflow_store, f"{schema}.private"), return_state=True)
    with pytest.raises(DatabaseRefusedError) as error:
        state.result()
    message = str(error.value)
    assert message.startswith("database postgresql+psycopg://lwec:***@") and "permission denied for table private" \
        in message
    assert "\n" not in message and "SELECT" not in message
    assert [t.run_count for t in task_runs(state, "load-features")] == [1]  # not retried


def test_a_silent_database_fails_the_run_within_thirty_seconds_in_one_line(prefect_server, mlflow_store):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"postgresql+psycopg://lwec:s3cret@127.0.0.1:{silent.getsockname()[1]}/lwec"
        started = time.monotonic()
        state = consensus_flow(**parameters(url, mlflow_store, "features"), return_state=True)
        seconds = time.monotonic() - started
    with pytest.raises(DatabaseUnreachableError) as error:
        state.result()
    message = str(error.value)
    assert message.startswith("cannot reach database postgresql+psycopg://lwec:***@127.0.0.1:")
    assert "\n" not in message and "s3cret" not in message
    assert [t.run_count for t in task_runs(state, "load-features")] == [3]  # the first attempt and two retries
    assert seconds < 30


# ----------------------------------------------------------------------------- which columns are used


def test_the_run_logs_its_columns_and_warns_about_a_key(prefect_server, mlflow_store, sqlite_url, caplog):
    frame = blobs_frame(n=60)
    frame["customer_key"] = frame["id"] * 13  # an integer with a distinct value in every row
    write_frame(sqlite_url, "customers", frame)
    with caplog.at_level(logging.INFO, logger="prefect.task_runs"):
        consensus_flow(**parameters(sqlite_url, mlflow_store, "customers"))
    messages = [r.getMessage() for r in caplog.records]
    assert any("clustering on 5 column(s) ['f0', 'f1', 'f2', 'f3', 'customer_key']; left out: id (id column), "
               "target (label column), note (high-cardinality text (60 distinct values))" in m
               for m in messages), messages
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'customer_key'" in m and "looks like a key (named like a key and an integer with a distinct value "
               "in each of the 60 rows)" in m and "feature_columns=['f0', 'f1', 'f2', 'f3']" in m
               for m in warnings), warnings


# ----------------------------------------------------------------------------- a rerun after MLflow failed


def test_a_rerun_after_mlflow_failed_logs_without_rewriting_the_labels(prefect_server, mlflow_store, sqlite_url,
                                                                        monkeypatch, caplog):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    write_frame(sqlite_url, "blobs", blobs_frame(n=60))
    down = parameters(sqlite_url, f"http://127.0.0.1:{free_port()}", "blobs")
    with pytest.raises(TrackingError, match="labels were written to table 'blobs_lwec_labels'"):
        consensus_flow(**down)
    written = read_labels(sqlite_url, "blobs_lwec_labels")

    with caplog.at_level(logging.INFO, logger="prefect.task_runs"):
        summary = consensus_flow(**{**down, "tracking_uri": mlflow_store})
    assert summary["rows_written"] == 0
    again = read_labels(sqlite_url, "blobs_lwec_labels")
    pd.testing.assert_frame_equal(again, written)  # same rows, same flow_run_id and written_at: not rewritten
    assert any(f"Labels for run key {summary['run_key']!r} already in table 'blobs_lwec_labels'; not rewritten"
               in r.getMessage() for r in caplog.records)
    run = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"])
    assert run.data.tags["lwec.run_key"] == summary["run_key"]
