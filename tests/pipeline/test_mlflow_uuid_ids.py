"""A PostgreSQL table keyed by uuid: the labels are written and the MLflow run logs them, ids as text."""

import uuid

import pytest
import sqlalchemy as sa

from flows.consensus import consensus_flow
from helpers.pipeline import blobs_frame, drop_labels_table, read_labels, unique

FEATURES = ["f0", "f1", "f2", "f3"]


@pytest.fixture
def uuid_table(postgres_url):
    """A blobs table whose primary key ``id`` is a PostgreSQL ``uuid``; dropped afterwards with its labels."""
    frame = blobs_frame(n=120)
    frame["id"] = [uuid.UUID(int=int(value) * 7919 + 12345) for value in frame["id"]]
    name = unique("uuid_keyed")
    table = sa.Table(name, sa.MetaData(), sa.Column("id", sa.Uuid(), primary_key=True),
                     *[sa.Column(column, sa.Float()) for column in FEATURES], sa.Column("target", sa.BigInteger()))
    engine = sa.create_engine(postgres_url)
    with engine.begin() as connection:
        table.create(connection)
        connection.execute(sa.insert(table), frame[["id", *FEATURES, "target"]].to_dict("records"))
    try:
        yield name, frame
    finally:
        with engine.begin() as connection:
            drop_labels_table(connection, f"{name}_lwec_labels")
            table.drop(connection, checkfirst=True)
        engine.dispose()


@pytest.mark.postgres
def test_uuid_ids_reach_the_labels_table_and_the_mlflow_run(prefect_server, postgres_url, uuid_table, mlflow_store,
                                                            tmp_path):
    name, frame = uuid_table
    summary = consensus_flow(database_url=postgres_url, table=name, n_clusters=3, label_column="target",
                             ensemble_size=6, seed=3, experiment=unique("uuid"), tracking_uri=mlflow_store)
    stored = read_labels(postgres_url, summary["output_table"], summary["run_key"])
    assert len(stored) == 120
    assert sorted(str(value) for value in stored["id"]) == sorted(str(value) for value in frame["id"])
