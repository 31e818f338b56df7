"""Database URLs kept in Prefect blocks: ``block:NAME`` (SqlAlchemyConnector) and ``secret:NAME`` (Secret)."""

from __future__ import annotations

import numpy as np
import pytest
from mlflow import MlflowClient

from flows.consensus import consensus_flow
from helpers.pipeline import blobs_frame, expected_labels, read_labels, unique, write_frame
from lwec_tasks.core.errors import LwecInputError

FEATURES = ["f0", "f1", "f2", "f3"]


def run_from(database_url: str, mlflow_store: str) -> dict:
    return consensus_flow(database_url=database_url, table="blobs", n_clusters=3, label_column="target",
                          ensemble_size=4, seed=2, experiment=unique("blocks"), tracking_uri=mlflow_store)


def assert_labels_written(sqlite_url: str, frame, summary: dict, mlflow_store: str, reference: str) -> None:
    stored = read_labels(sqlite_url, summary["output_table"], summary["run_key"])
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=4, seed=2)
    np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])
    params = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"]).data.params
    assert params["database"] == reference  # the reference is logged, never the URL it stands for


def test_a_sqlalchemy_connector_block_supplies_the_url(prefect_server, mlflow_store, sqlite_url):
    from prefect_sqlalchemy import ConnectionComponents, SqlAlchemyConnector

    frame = blobs_frame()
    write_frame(sqlite_url, "blobs", frame)
    name = unique("lwec-db").replace("_", "-")
    path = sqlite_url.removeprefix("sqlite:///")
    SqlAlchemyConnector(connection_info=ConnectionComponents(driver="sqlite", database=path)).save(name)
    summary = run_from(f"block:{name}", mlflow_store)
    assert_labels_written(sqlite_url, frame, summary, mlflow_store, f"block:{name}")


def test_a_secret_block_supplies_the_url(prefect_server, mlflow_store, sqlite_url):
    from prefect.blocks.system import Secret

    frame = blobs_frame()
    write_frame(sqlite_url, "blobs", frame)
    name = unique("lwec-url").replace("_", "-")
    Secret(value=sqlite_url).save(name)
    summary = run_from(f"secret:{name}", mlflow_store)
    assert_labels_written(sqlite_url, frame, summary, mlflow_store, f"secret:{name}")


@pytest.mark.parametrize("reference, message", [
    ("block:no-such-connector", "no SqlAlchemyConnector block named 'no-such-connector'"),
    ("secret:no-such-secret", "no Secret block named 'no-such-secret'"),
])
def test_a_missing_block_is_named(prefect_server, mlflow_store, reference, message):
    with pytest.raises(LwecInputError, match=message):
        run_from(reference, mlflow_store)
