"""A run whose labels are already stored — same run key, parameters and (id, label) rows — is recognised as such."""

from __future__ import annotations

import dataclasses
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import drop_labels_table, postgres_url_or_skip, unique
from lwec_tasks.io import LabelRows, id_key_type, open_engine, write_labels
from lwec_tasks.io.staging import append_to, begin_run, copy_staged, discard_run, run_unchanged


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
        drop_labels_table(connection, name)
    engine.dispose()


def matches(engine, name, rows):
    """Append the rows under a pending run as the write stage does, ask whether the labels table already holds
    them (:func:`run_unchanged`), and discard the pending run."""
    pending = begin_run(engine, name, id_key_type(rows.ids), rows)
    try:
        append_to(engine, pending.target, rows.ids, rows.labels, pending.append_run)
        if pending.staged:
            copy_staged(engine, pending)
        with engine.connect() as connection:
            return run_unchanged(connection, pending, rows, len(rows.ids))
    finally:
        discard_run(engine, pending)


def test_only_exactly_the_stored_run_matches(labels_table):
    engine, name = labels_table
    ids = np.arange(100, 160)
    labels = np.arange(60) % 3
    rows = rows_for(ids, labels)
    assert not matches(engine, name, rows)  # no table yet
    assert not sa.inspect(engine).has_table(f"{name}_runs")  # and none left behind
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
                drop_labels_table(connection, name)
        engine.dispose()
