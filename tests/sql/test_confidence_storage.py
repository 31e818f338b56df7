"""The confidence column of the labels storage: written with each label, shown by ``<out>`` and ``<out>_latest``;
storage of an earlier release (rows table and views without it) keeps working and gains it at its next write."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from flows.consensus import consensus_flow
from helpers.pipeline import blobs_frame, unique, write_frame
from lwec_tasks.io.history import create_view, drop_view, latest_labels_query
from lwec_tasks.io.label_storage import labels_query, rows_clause, runs_clause, storage_names
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.run_tables import execute_ddl, quoted


def read(url: str, relation: str) -> pd.DataFrame:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            name = sa.table(relation)
            return pd.read_sql(sa.select(sa.text("*")).select_from(name), connection).sort_values(["run_key", "id"])
    finally:
        engine.dispose()


def as_earlier_release(url: str, output: str) -> None:
    """Remove the confidence column and make both views as an earlier release made them."""
    names = storage_names(parse_table_name(output))
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        for view in (names.latest, names.view):
            drop_view(connection, view)
        execute_ddl(connection, f"ALTER TABLE {quoted(connection, names.rows)} DROP COLUMN confidence")
        create_view(connection, names.view, labels_query(runs_clause(names), rows_clause(names)))
        create_view(connection, names.latest, latest_labels_query(names))
    engine.dispose()


def test_storage_of_an_earlier_release_gains_the_column(db_url, mlflow_store):
    table = unique("conf")
    frame = blobs_frame(n=200, centers=3, seed=4)
    write_frame(db_url, table, frame)
    output = f"{table}_labels"
    common = dict(database_url=db_url, table=table, n_clusters=3, ensemble_size=5, seed=1, output_table=output,
                  tracking_uri=mlflow_store, experiment=unique("conf"))
    consensus_flow(**common, run_name="old")
    as_earlier_release(db_url, output)
    old = read(db_url, output)
    assert "confidence" not in old.columns and len(old) == 200  # the earlier release's view, read as it was

    consensus_flow(**common, run_name="new")
    both = read(db_url, output)
    assert list(both.columns[-1:]) == ["confidence"]
    assert both.loc[both["run_key"] == "old", "confidence"].isna().all()
    new = both[both["run_key"] == "new"]
    assert len(new) == 200 and new["confidence"].between(0, 1).all()
    latest = read(db_url, f"{output}_latest")
    assert latest["run_key"].unique().tolist() == ["new"]
    np.testing.assert_array_equal(latest["confidence"].to_numpy(), new["confidence"].to_numpy())
    engine = sa.create_engine(db_url)
    with engine.begin() as connection:
        names = storage_names(parse_table_name(output))
        for view in (names.latest, names.view):
            drop_view(connection, view)
        for name in (names.rows, names.runs):
            sa.Table(name.name, sa.MetaData(), schema=name.schema).drop(connection, checkfirst=True)
        sa.Table(table, sa.MetaData()).drop(connection)
    engine.dispose()


@pytest.fixture(autouse=True)
def _prefect(prefect_server):
    """The session's temporary Prefect API."""
