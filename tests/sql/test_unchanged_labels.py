"""A rerun whose labels are already stored — same run key, parameters and (id, label) rows — writes nothing.

The write stage asks the runs table for the published run of the run key with the same parameters and row
count (:func:`published_run_matching`); only then does each partition compare that run's rows of its id range
with its labels. Unchanged: no rows appended, the stored run and its ``written_at`` left as they were, only
``keep_runs`` pruning applied. Otherwise the labels are written as for a new run.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import drop_labels_table, unique
from lwec_tasks.executors import InProcess
from lwec_tasks.io import LabelRows, open_engine, write_labels
from lwec_tasks.io.label_storage import storage_names
from lwec_tasks.io.label_store import open_label_store
from lwec_tasks.io.names import TableName, parse_table_name
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.io.staging import published_run_matching
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages import planning
from lwec_tasks.stages.read import load_table
from lwec_tasks.stages.write import write_labels as write_stage

N_ROWS = 300

#: id column type and the N_ROWS ids of a source table, per kind of id; uuid and numeric ids on PostgreSQL only
ID_KINDS = {
    "bigint": (sa.BigInteger(), lambda n: list(range(10, 10 + n))),
    "text": (sa.Text(), lambda n: [f"row-{i:04d}" for i in range(n)]),
    "uuid": (sa.Uuid(), lambda n: [uuid.UUID(int=i * 7919 + 12345) for i in range(n)]),
    "numeric": (sa.Numeric(30, 0), lambda n: [10 ** 20 + i for i in range(n)]),
}


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


def test_only_the_published_run_with_the_same_parameters_and_row_count_is_compared(labels_table):
    engine, name = labels_table
    rows = rows_for(np.arange(100, 160), np.arange(60) % 3)
    assert published_run_matching(engine, parse_table_name(name), rows, 60) is None  # no table yet
    assert not sa.inspect(engine).has_table(f"{name}_runs")  # and none made
    write_labels(engine, parse_table_name(name), rows)
    write_labels(engine, parse_table_name(name), rows_for(rows.ids, rows.labels, run_key="other"))
    with engine.connect() as connection:
        runs = storage_names(parse_table_name(name)).runs.name
        stored = connection.execute(sa.text(f"select run from {runs} where run_key = 'nightly'")).scalar_one()
    assert published_run_matching(engine, parse_table_name(name), rows, 60) == stored
    assert published_run_matching(engine, parse_table_name(name), dataclasses.replace(rows, flow_run_id="another"),
                                  60) == stored
    assert published_run_matching(engine, parse_table_name(name), rows, 59) is None
    for changed in (dict(k=4), dict(method="lwgp"), dict(theta=0.5), dict(ensemble_size=9), dict(seed=None),
                    dict(source_table="elsewhere"), dict(run_key="nightly-2")):
        assert published_run_matching(engine, parse_table_name(name), dataclasses.replace(rows, **changed),
                                      60) is None, changed


# ----------------------------------------------------------------------------- the write stage


def labels_of(keys: part.PartitionKeys, changed_id=None) -> np.ndarray:
    """(n,) labels of a partition: the row position modulo 3, the row of ``changed_id`` (if here) labelled 5."""
    labels = np.arange(len(keys.ids), dtype=np.int64) % 3
    labels[np.array([value == changed_id for value in keys.ids.tolist()], dtype=bool)] = 5
    return labels


class Source:
    """A source table of N_ROWS rows read by the read stage in three partitions; ``write`` runs the write stage."""

    def __init__(self, url: str, id_kind: str, monkeypatch):
        self.url, self.name = url, unique("features")
        self.output_table = TableName(f"{self.name}_labels")
        id_type, make_ids = ID_KINDS[id_kind]
        self.ids = make_ids(N_ROWS)
        values = np.random.default_rng(0).normal(size=(N_ROWS, 2))
        # autoincrement=False: SQLAlchemy 2.0 would make a Numeric(20, 0) key an integer serial column
        table = sa.Table(self.name, sa.MetaData(), sa.Column("id", id_type, primary_key=True, autoincrement=False),
                         sa.Column("f0", sa.Float), sa.Column("f1", sa.Float))
        self.engine = open_engine(url)
        with self.engine.begin() as connection:
            table.create(connection)
            connection.execute(sa.insert(table), [{"id": i, "f0": float(a), "f1": float(b)}
                                                  for i, (a, b) in zip(self.ids, values)])
        monkeypatch.setattr(planning, "MIN_PARTITION_ROWS", 50)
        monkeypatch.setenv(planning.PARTITION_ROWS_ENV, "100")
        request = ConsensusRequest(database_url=url, table=self.name, n_clusters=2)
        self.table = load_table(InProcess(1), request, logging.getLogger("test"))
        assert self.table.n_partitions == 3
        self.run = RunMetadata(run_key="nightly", k=6, method="lwea", theta=0.4, ensemble_size=10, seed=7,
                               source_table=self.name)

    def write(self, changed_id=None, keep_runs=None, **changes) -> int:
        labels = self.table.session.map(labels_of, self.table.keys, name="labels", changed_id=changed_id)
        with open_label_store(self.url, self.output_table) as store:
            return write_stage(self.table, labels, store, dataclasses.replace(self.run, **changes),
                               logging.getLogger("test"), keep_runs=keep_runs)

    def runs(self) -> list:
        runs = storage_names(self.output_table).runs.name
        with self.engine.connect() as connection:
            return connection.execute(sa.text(f"select run, run_key, row_count, written_at from {runs} "
                                              "order by run")).all()

    def rows(self) -> list:
        rows = storage_names(self.output_table).rows.name
        with self.engine.connect() as connection:
            return sorted(connection.execute(sa.text(f"select run, id, label from {rows}")).all(), key=str)

    def close(self) -> None:
        with self.engine.begin() as connection:
            drop_labels_table(connection, str(self.output_table))
            sa.Table(self.name, sa.MetaData()).drop(connection)
        self.engine.dispose()


@pytest.fixture
def source(db_url, monkeypatch):
    """``source(id_kind)`` → a :class:`Source` on ``db_url``, dropped with its labels afterwards."""
    made: list[Source] = []

    def make(id_kind: str) -> Source:
        if id_kind in ("uuid", "numeric") and db_url.startswith("sqlite"):
            pytest.skip(f"{id_kind} ids are a PostgreSQL type")
        made.append(Source(db_url, id_kind, monkeypatch))
        return made[-1]

    yield make
    for each in made:
        each.close()


@pytest.mark.parametrize("id_kind", ID_KINDS)
def test_a_rerun_with_the_stored_labels_writes_nothing_and_one_changed_label_rewrites(source, id_kind, caplog):
    source = source(id_kind)
    assert source.write() == N_ROWS
    runs, rows = source.runs(), source.rows()
    with caplog.at_level(logging.INFO, logger="test"):
        assert source.write(flow_run_id="another-flow-run") == 0
    assert source.runs() == runs and source.rows() == rows  # same run, same written_at, same rows
    assert any("Labels for run key 'nightly' already in table" in r.getMessage() and "not rewritten (checked in"
               in r.getMessage() for r in caplog.records)
    changed_id = source.ids[N_ROWS // 2]  # in the middle partition
    assert source.write(changed_id=changed_id) == N_ROWS
    [(run, key, count, _)] = source.runs()
    assert (key, count) == ("nightly", N_ROWS) and run != runs[0].run
    assert sum(label == 5 for _, _, label in source.rows()) == 1


def test_an_unchanged_rerun_still_prunes_with_keep_runs(source):
    source = source("bigint")
    assert source.write(run_key="older") == N_ROWS
    assert source.write() == N_ROWS
    [older, nightly] = source.runs()
    rows = [row for row in source.rows() if row.run == nightly.run]
    assert source.write(keep_runs=1) == 0
    assert source.runs() == [nightly] and source.rows() == rows


def test_a_new_run_key_or_other_parameters_are_written_without_reading_the_stored_rows(source, monkeypatch):
    source = source("bigint")
    assert source.write() == N_ROWS

    def not_compared(*args, **kwargs):
        raise AssertionError("the stored rows were read")

    monkeypatch.setattr(part, "stored_labels_equal", not_compared)
    assert source.write(run_key="nightly-2") == N_ROWS
    assert source.write(seed=8) == N_ROWS
    assert [(run.run_key, run.row_count) for run in source.runs()] == [("nightly-2", N_ROWS), ("nightly", N_ROWS)]
