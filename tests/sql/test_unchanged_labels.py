"""A run whose labels are already stored — same run key, parameters and (id, label) rows — is recognised as such."""

from __future__ import annotations

import dataclasses
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import postgres_url_or_skip, unique
from lwec_tasks.io import LabelRows, id_key_type, open_engine, write_labels
from lwec_tasks.io.staging import append_to, create_staging_table, drop_table_quietly, staged_run_matches


def rows_for(ids, labels, **changes):
    rows = LabelRows(run_key="nightly", ids=ids, labels=np.asarray(labels), k=3, method="lwea", theta=0.4,
                     ensemble_size=10, seed=7, source_table="features")
    return dataclasses.replace(rows, **changes)


@pytest.fixture
def labels_table(db_url):
    engine = open_engine(db_url)
    name = unique("unchanged")
    yield engine, name
    with engine.begin() as connection:
        sa.Table(name, sa.MetaData()).drop(connection, checkfirst=True)
    engine.dispose()


def matches(engine, name, rows):
    """Stage the rows as a run's write does, then ask whether the labels table already holds them."""
    staging, id_type = unique("staged"), id_key_type(rows.ids)
    create_staging_table(engine, staging, id_type)
    try:
        append_to(engine, staging, rows.ids, rows.labels)
        return staged_run_matches(engine, name, staging, id_type, rows, len(rows.ids))
    finally:
        drop_table_quietly(engine, staging)


def test_only_exactly_the_stored_run_matches(labels_table):
    engine, name = labels_table
    ids = np.arange(100, 160)
    labels = np.arange(60) % 3
    rows = rows_for(ids, labels)
    assert not matches(engine, name, rows)  # no table yet
    write_labels(engine, name, rows)
    write_labels(engine, name, rows_for(ids, labels, run_key="other"))
    assert matches(engine, name, rows)
    shuffled = np.random.default_rng(0).permutation(60)
    assert matches(engine, name, rows_for(ids[shuffled], labels[shuffled]))  # row order does not matter
    for changed in (dict(labels=(labels + 1) % 3), dict(ids=ids + 1), dict(ids=ids[:-1], labels=labels[:-1]),
                    dict(k=4), dict(method="lwgp"), dict(theta=0.5), dict(ensemble_size=9), dict(seed=None),
                    dict(source_table="elsewhere"), dict(run_key="nightly-2")):
        assert not matches(engine, name, rows_for(**{"ids": ids, "labels": labels, **changed})), changed
    other = rows_for(ids, labels, flow_run_id="another-flow-run")
    assert matches(engine, name, other)  # who wrote them does not matter


@pytest.mark.postgres
def test_postgres_uuid_and_text_ids_are_compared_exactly():
    engine = open_engine(postgres_url_or_skip())
    names = [unique("unchanged_uuid"), unique("unchanged_text")]
    try:
        for name, ids in zip(names, (np.array([uuid.uuid4() for _ in range(20)], dtype=object),
                                     np.array([f"c-{i}" for i in range(20)], dtype=object))):
            rows = rows_for(ids, np.arange(20) % 3)
            write_labels(engine, name, rows)
            assert matches(engine, name, rows)
            assert not matches(engine, name, rows_for(ids, (np.arange(20) + 1) % 3))
    finally:
        with engine.begin() as connection:
            for name in names:
                sa.Table(name, sa.MetaData()).drop(connection, checkfirst=True)
        engine.dispose()
