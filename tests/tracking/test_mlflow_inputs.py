"""What a consensus run records about its input: the source table as a dataset input and the experiment's
kind — read back from a real local MLflow store."""

import hashlib
import json

from mlflow import MlflowClient

from helpers.pipeline import unique
from lwec_tasks.tracking import SourceTable, run_writer

SOURCE = SourceTable(database="postgresql+psycopg://ops:s3cret@db.internal:5432/analytics?sslmode=require",
                     table="analytics.features", feature_columns=("f0", "f1", "f2"), n_rows=297, n_rows_read=300)


def log_run(store: str, experiment: str, source: SourceTable | None = None) -> str:
    """A run written as the consensus flow writes its own (params, then the source table as dataset input)."""
    with run_writer(store, experiment) as writer:
        run_id = writer.start_run(None, params={"method": "lwea"}, metrics={}, tags={})
        if source is not None:
            writer.log_dataset(run_id, source)
        writer.finish(run_id)
    return run_id


def test_the_source_table_is_the_runs_training_dataset(mlflow_store):
    run_id = log_run(mlflow_store, unique("inputs"), SOURCE)
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
    run_id = log_run(mlflow_store, unique("inputs"))
    assert MlflowClient(mlflow_store).get_run(run_id).inputs.dataset_inputs == []


def test_experiments_lwec_creates_are_model_development_experiments(mlflow_store):
    name = unique("kind")
    run_id = log_run(mlflow_store, name)
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
    log_run(mlflow_store, plain)
    log_run(mlflow_store, genai)
    assert client.get_experiment(plain_id).tags["mlflow.experimentKind"] == "custom_model_development"
    assert client.get_experiment(genai_id).tags["mlflow.experimentKind"] == "genai_development"
