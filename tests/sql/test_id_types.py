"""Ids of any type — uuid, text, bigint, numeric — survive read, write, the earlier-run read-back and the matching."""

from __future__ import annotations

import decimal
import uuid
from types import SimpleNamespace

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import drop_labels_table, ingest_only, latest_earlier_run, postgres_url_or_skip, unique
from helpers.renumber import align_to_previous
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import (
    LabelRows,
    check_label_table,
    describe_source,
    id_key_type,
    open_engine,
    read_rows,
    write_labels,
)
from lwec_tasks.io.bulk_read import FAST_PATH_ENV
from lwec_tasks.io.columns import plan_columns
from lwec_tasks.io.features import id_values as read_ids
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.stages.partitions import matchable_ids

N = 30


def id_values(kind: str) -> list:
    rng = np.random.default_rng(5)
    if kind == "uuid":
        return [uuid.UUID(int=int(v)) for v in rng.integers(1, 2**62, size=N)]
    if kind == "text":
        return [f"cust-{i:03d}-é" for i in rng.permutation(N)]
    if kind == "bigint":
        return [int(v) for v in 2**40 + rng.permutation(N) * 7919]
    if kind == "numeric":  # 20 digits: float64 would merge neighbours
        return [12345678901234567890 + int(i) for i in rng.permutation(N)]
    raise ValueError(kind)


SQL_TYPES = {"uuid": "uuid", "text": "text", "bigint": "bigint", "numeric": "numeric(20, 0)"}


@pytest.fixture
def pg():
    url = postgres_url_or_skip()
    engine = open_engine(url)
    created: list[str] = []
    yield engine, created
    with engine.begin() as connection:
        for name in reversed(created):
            drop_labels_table(connection, name)
    engine.dispose()


def make_source(engine, created, sql_type: str, ids: list) -> str:
    name = unique("ids")
    created.append(name)
    rng = np.random.default_rng(1)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            f'CREATE TABLE "{name}" (id {sql_type} PRIMARY KEY, f0 double precision, f1 double precision)')
        connection.execute(sa.text(f'INSERT INTO "{name}" VALUES (:id, :f0, :f1)'),
                           [{"id": i, "f0": float(rng.normal()), "f1": float(rng.normal())} for i in ids])
    return name


def load(engine, name):
    source = describe_source(engine, parse_table_name(name))
    plan = plan_columns(source.columns, source.numeric_columns, source.primary_key, table=name, kinds=source.kinds)
    frame = read_rows(engine, source, plan.columns_to_read, order_by=plan.id_column, exact_columns=["id"])
    return source, SimpleNamespace(ids=read_ids(frame["id"], "id"))


def rows_for(key, ids, labels, source):
    return LabelRows(run_key=key, ids=ids, labels=np.asarray(labels), k=3, method="lwea", theta=0.4,
                     ensemble_size=4, seed=0, source_table=source)


@pytest.mark.postgres
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "portable"])
@pytest.mark.parametrize("kind", ["uuid", "text", "bigint", "numeric"])
def test_postgres_ids_round_trip_exactly(pg, monkeypatch, kind, fast):
    engine, created = pg
    monkeypatch.setenv(FAST_PATH_ENV, "1" if fast else "0")
    ids = id_values(kind)
    name = make_source(engine, created, SQL_TYPES[kind], ids)
    source, features = load(engine, name)
    assert sorted(features.ids.tolist(), key=str) == sorted(ids, key=str)
    assert all(type(a) is type(b) or isinstance(a, int) for a, b in zip(features.ids.tolist(), ids))
    id_type = id_key_type(features.ids, source.table.c.id.type)
    out = f"{name}_labels"
    created.append(out)
    check_label_table(engine, parse_table_name(out), parse_table_name(name), id_type=id_type, id_column="id")
    labels = np.arange(N) % 3
    if fast:
        ingest_only(monkeypatch)  # every kind is staged by ADBC ingestion (uuids and numerics as text)
    assert write_labels(engine, parse_table_name(out), rows_for("first", features.ids, labels, name),
                        id_type=id_type) == N
    stored_type = sa.inspect(engine).get_columns(out)[1]["type"]
    assert type(stored_type).__name__.lower().startswith(SQL_TYPES[kind].split("(")[0][:4])
    check_label_table(engine, parse_table_name(out), parse_table_name(name), id_type=id_type,
                      id_column="id")  # the labels table fits its source

    earlier = latest_earlier_run(engine, out, name, "second")
    assert earlier.run_key == "first"
    by_id = dict(zip(earlier.ids.tolist(), earlier.labels.tolist()))
    assert by_id == dict(zip(features.ids.tolist(), labels.tolist()))
    # The next run's clusters are a relabelling: the matching gives every object its earlier id back.
    now, before = matchable_ids(features.ids, earlier.ids)
    renumbered = align_to_previous((labels + 1) % 3, now, before, earlier.labels)
    assert renumbered.agreement == 1.0 and renumbered.labels.tolist() == labels.tolist()


@pytest.mark.postgres
def test_postgres_uuid_ids_of_fast_and_portable_reads_are_equal(pg, monkeypatch):
    engine, created = pg
    name = make_source(engine, created, "uuid", id_values("uuid"))
    source = describe_source(engine, parse_table_name(name))
    fast = read_rows(engine, source, ["id", "f0"], order_by="id")
    monkeypatch.setenv(FAST_PATH_ENV, "0")
    portable = read_rows(engine, source, ["id", "f0"], order_by="id")
    assert fast["id"].tolist() == portable["id"].tolist()
    assert all(isinstance(value, uuid.UUID) for value in fast["id"])


@pytest.mark.postgres
def test_postgres_fractional_numeric_ids_stay_decimals(pg):
    engine, created = pg
    ids = [decimal.Decimal("1.25"), decimal.Decimal("2.50"), decimal.Decimal("12345678901234567.75"), 7]
    name = make_source(engine, created, "numeric(20, 2)", ids)
    frame = read_rows(engine, describe_source(engine, parse_table_name(name)), ["id"], order_by="id",
                      exact_columns=["id"])
    assert frame["id"].tolist() == [decimal.Decimal("1.25"), decimal.Decimal("2.50"), 7,
                                    decimal.Decimal("12345678901234567.75")]


@pytest.fixture
def sqlite_engine(tmp_path):
    url = f"sqlite:///{tmp_path / 'ids.db'}"
    sa.create_engine(url).connect().close()
    engine = open_engine(url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("sql_type, kind", [("TEXT", "text"), ("BIGINT", "bigint"), ("NUMERIC", "bigint")])
def test_sqlite_ids_round_trip(sqlite_engine, sql_type, kind):
    ids = id_values(kind)
    name = make_source(sqlite_engine, [], sql_type, ids)
    source, features = load(sqlite_engine, name)
    assert sorted(features.ids.tolist(), key=str) == sorted(ids, key=str)
    id_type = id_key_type(features.ids, source.table.c.id.type)
    write_labels(sqlite_engine, parse_table_name("labels"), rows_for("a", features.ids, np.arange(N) % 3, name),
                 id_type=id_type)
    earlier = latest_earlier_run(sqlite_engine, "labels", name, "b")
    assert sorted(earlier.ids.tolist(), key=str) == sorted(ids, key=str)


def test_a_labels_table_keeps_one_kind_of_id(db_url):
    engine = open_engine(db_url)
    out = unique("kinds_labels")
    try:
        write_labels(engine, parse_table_name(out), rows_for("a", np.array([1, 2, 3]), [0, 1, 1], "numbers"))
        check_label_table(engine, parse_table_name(out), parse_table_name("numbers"), id_type=sa.BigInteger(),
                          id_column="id")
        check_label_table(engine, parse_table_name(out), parse_table_name("positions"),
                          id_type=None)  # row positions are integers too
        with pytest.raises(LwecInputError, match=rf"output_table '{out}' holds integer ids .* but the ids of table "
                                                 r"'words' are text: column 'code' \(TEXT\); write to another "
                                                 r"output_table"):
            check_label_table(engine, parse_table_name(out), parse_table_name("words"), id_type=sa.Text(),
                              id_column="code")
        with pytest.raises(LwecInputError, match="holds integer ids.*are uuid"):
            check_label_table(engine, parse_table_name(out), parse_table_name("keys"), id_type=sa.Uuid(),
                              id_column="key")
        check_label_table(engine, parse_table_name(out), parse_table_name("untyped"),
                          id_type=sa.types.NullType())  # no declared type: not compared
    finally:
        with engine.begin() as connection:
            drop_labels_table(connection, out)
        engine.dispose()
