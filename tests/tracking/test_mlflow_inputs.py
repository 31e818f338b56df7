"""What a consensus run records about its input: the source table as a dataset input, the experiment's
kind, and ids of any type in labels.csv — read back from a real local MLflow store."""

import hashlib
import json
import uuid
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from helpers.pipeline import unique
from lwec_tasks.tracking import RunRecord, SourceTable, log_run

SOURCE = SourceTable(database="postgresql+psycopg://ops:s3cret@db.internal:5432/analytics?sslmode=require",
                     table="analytics.features", feature_columns=("f0", "f1", "f2"), n_rows=297, n_rows_read=300)


def record(ids, source: SourceTable | None = None) -> RunRecord:
    labels = np.arange(len(ids)) % 2
    return RunRecord(params={"method": "lwea"}, metrics={}, tags={},
                     labels=pd.DataFrame({"id": ids, "label": labels}),
                     clusters=pd.DataFrame({"cluster": [0, 1], "eci": [0.9, 0.2]}), source=source)


def logged_labels(store: str, run_id: str, tmp_path) -> pd.DataFrame:
    import mlflow.artifacts

    root = MlflowClient(store).get_run(run_id).info.artifact_uri  # MLflow 3.1 resolves runs:/ in the default store
    path = mlflow.artifacts.download_artifacts(artifact_uri=f"{root}/labels.csv", dst_path=str(tmp_path))
    return pd.read_csv(path, dtype=str)


def test_the_source_table_is_the_runs_training_dataset(mlflow_store):
    run_id = log_run(record([1, 2, 3], SOURCE), tracking_uri=mlflow_store, experiment=unique("inputs"))
    (given,) = MlflowClient(mlflow_store).get_run(run_id).inputs.dataset_inputs
    dataset = given.dataset
    assert {tag.key: tag.value for tag in given.tags} == {"mlflow.data.context": "training"}
    assert dataset.name == "analytics.features"
    assert dataset.source_type == "sql_table"
    masked = "postgresql+psycopg://ops:***@db.internal:5432/analytics?sslmode=require"
    assert json.loads(dataset.source) == {"url": masked, "table": "analytics.features"}
    assert json.loads(dataset.schema) == {"mlflow_colspec": [
        {"type": "double", "name": name, "required": True} for name in ("f0", "f1", "f2")]}
    assert json.loads(dataset.profile) == {"num_rows": 297, "num_rows_read": 300, "num_features": 3,
                                           "database": masked, "table": "analytics.features"}
    identity = {"source_type": "sql_table", "url": masked, "table": "analytics.features",
                "feature_columns": ["f0", "f1", "f2"], "num_rows": 297}
    assert dataset.digest == hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]
    assert "s3cret" not in dataset.source + dataset.profile


def test_the_digest_follows_the_source_not_the_password():
    same_place = SourceTable(SOURCE.database.replace("s3cret", "rotated"), SOURCE.table, SOURCE.feature_columns,
                             SOURCE.n_rows)
    assert same_place.digest() == SOURCE.digest()
    for changed in (SourceTable(SOURCE.database, "analytics.other", SOURCE.feature_columns, SOURCE.n_rows),
                    SourceTable(SOURCE.database, SOURCE.table, ("f0", "f1"), SOURCE.n_rows),
                    SourceTable(SOURCE.database, SOURCE.table, SOURCE.feature_columns, 298)):
        assert changed.digest() != SOURCE.digest()


def test_a_record_without_a_source_logs_no_dataset(mlflow_store):
    run_id = log_run(record([1, 2]), tracking_uri=mlflow_store, experiment=unique("inputs"))
    assert MlflowClient(mlflow_store).get_run(run_id).inputs.dataset_inputs == []


def test_experiments_lwec_creates_are_model_development_experiments(mlflow_store):
    name = unique("kind")
    run_id = log_run(record([1, 2]), tracking_uri=mlflow_store, experiment=name)
    client = MlflowClient(mlflow_store)
    experiment = client.get_experiment(client.get_run(run_id).info.experiment_id)
    assert experiment.name == name
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"


def test_an_existing_experiment_gets_a_kind_only_when_it_has_none(mlflow_store, tmp_path):
    client = MlflowClient(mlflow_store)
    plain, genai = unique("plain"), unique("genai")
    plain_id = client.create_experiment(plain, artifact_location=(tmp_path / "plain").as_uri())
    genai_id = client.create_experiment(genai, artifact_location=(tmp_path / "genai").as_uri(),
                                        tags={"mlflow.experimentKind": "genai_development"})
    log_run(record([1, 2]), tracking_uri=mlflow_store, experiment=plain)
    log_run(record([1, 2]), tracking_uri=mlflow_store, experiment=genai)
    assert client.get_experiment(plain_id).tags["mlflow.experimentKind"] == "custom_model_development"
    assert client.get_experiment(genai_id).tags["mlflow.experimentKind"] == "genai_development"


@pytest.mark.parametrize("ids, written", [
    (np.array([uuid.UUID(int=7), uuid.UUID("6f1c2b9e-8d1a-4e0b-9a57-2f3c4d5e6f70")], dtype=object),
     ["00000000-0000-0000-0000-000000000007", "6f1c2b9e-8d1a-4e0b-9a57-2f3c4d5e6f70"]),
    (np.array([Decimal("10"), Decimal("12345678901234567890.50")], dtype=object),
     ["10", "12345678901234567890.50"]),
    (np.array([2**70, 3], dtype=object), [str(2**70), "3"]),
    (np.array([b"\x00\xff", b"ab"], dtype=object), ["00ff", "6162"]),
    (np.array(["a-1", "b,2"], dtype=object), ["a-1", "b,2"]),
    (np.array([9007199254740993, -4], dtype=np.int64), ["9007199254740993", "-4"]),
], ids=["uuid", "decimal", "huge-int", "bytes", "text", "bigint"])
def test_ids_of_any_type_reach_labels_csv(mlflow_store, tmp_path, ids, written):
    run_id = log_run(record(ids), tracking_uri=mlflow_store, experiment=unique("ids"))
    labels = logged_labels(mlflow_store, run_id, tmp_path)
    assert labels["id"].tolist() == written
    assert labels["label"].tolist() == ["0", "1"]
