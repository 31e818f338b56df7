"""Id-range reads (``read_rows(where=...)``) and the staging write path (``append_labels`` + ``publish_labels``)
on real SQLite files and the PostgreSQL test server, for every kind of id."""

from __future__ import annotations

import decimal
import uuid

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.pipeline import unique
from lwec_tasks.io import LabelRows, describe_source, open_engine, parse_table_name, read_rows
from lwec_tasks.io.bulk_read import read_fast
from lwec_tasks.io.source import read_rows_portable
from lwec_tasks.io.staging import (
    append_labels,
    create_staging_table,
    drop_table_quietly,
    publish_labels,
    staging_table_name,
)

N = 40


def id_values(kind: str) -> list:
    """N distinct ids of ``kind``, shuffled."""
    order = np.random.default_rng(3).permutation(N).tolist()
    if kind == "int":
        return [2**40 + 7919 * i for i in order]
    if kind == "text":
        return [f"k-{i:03d}-é'%" for i in order]
    if kind == "uuid":
        return [uuid.UUID(int=(i + 1) * 2**90 + i) for i in order]
    if kind == "numeric":  # beyond 64 bits: float64 or int64 would not hold them
        return [12345678901234567890 + 3 * i for i in order]
    if kind == "decimal":
        return [decimal.Decimal(f"{1000 + i}.25") for i in order]
    raise ValueError(kind)


ID_TYPES = {"int": sa.BigInteger(), "text": sa.Text(), "uuid": sa.Uuid(), "numeric": sa.Numeric(20, 0),
            "decimal": sa.Numeric(20, 2)}
#: Id kinds each database stores exactly (SQLite has no exact integers beyond 64 bits nor decimals).
KINDS = {"sqlite": ["int", "text", "uuid"], "postgresql": ["int", "text", "uuid", "numeric", "decimal"]}


@pytest.fixture
def tables(engine):
    """``tables(prefix)`` → a fresh table name, dropped afterwards."""
    names = []
    yield lambda prefix: names.append(unique(prefix)) or names[-1]
    for name in names:
        drop_table_quietly(engine, name)


def make_source(engine, name, kind, ids) -> None:
    table = sa.Table(name, sa.MetaData(), sa.Column("id", ID_TYPES[kind], primary_key=True, autoincrement=False),
                     sa.Column("f0", sa.Double), sa.Column("f1", sa.Double))
    with engine.begin() as connection:
        table.create(connection)
        connection.execute(sa.insert(table), [
            {"id": value, "f0": None if i % 6 == 0 else i / 4, "f1": -float(i)} for i, value in enumerate(ids)])


def kinds_of(engine):
    return KINDS[engine.dialect.name]


def as_stored(engine, value):
    """``value`` as the database gives it back: SQLite stores SQLAlchemy uuids as 32 hex digits."""
    return value.hex if isinstance(value, uuid.UUID) and engine.dialect.name == "sqlite" else value


# ----------------------------------------------------------------------------- reads of id ranges


@pytest.mark.parametrize("kind", ["int", "text", "uuid", "numeric"])
def test_id_range_read_equals_the_portable_read(engine, tables, kind):
    if kind not in kinds_of(engine):
        pytest.skip(f"{engine.dialect.name} does not store {kind} ids exactly")
    ids = id_values(kind)
    name = tables("ranged")
    make_source(engine, name, kind, ids)
    source = describe_source(engine, name)
    ordered = [as_stored(engine, value) for value in sorted(ids)]
    low, high = ordered[5], ordered[31]
    if kind == "numeric":  # a Python int bound would get a BIGINT bind cast: bound numerics as decimals
        low, high = decimal.Decimal(low), decimal.Decimal(high)
    where = [source.table.c.id >= low, source.table.c.id < high]
    columns = ["id", "f0", "f1"]
    fast = read_rows(engine, source, columns, order_by="id", chunk_size=50, exact_columns=["id"], where=where)
    portable = read_rows_portable(engine, source, columns, order_by="id", chunk_size=50, exact_columns=["id"],
                                  where=where)
    pd.testing.assert_frame_equal(fast, portable, check_exact=True)
    assert fast["id"].tolist() == ordered[5:31]
    assert fast["f0"].isna().any()
    exact = ["id"] if kind == "numeric" else []
    assert read_fast(engine, source.table, columns, ["id"], 50, exact=exact, where=where) is not None \
        or (engine.dialect.name == "sqlite" and kind == "uuid"), "the fast path declined"


@pytest.fixture(params=["int", "text"])
def partitioned(request, engine, tables):
    ids = id_values(request.param)
    name = tables("parts")
    make_source(engine, name, request.param, ids)
    source = describe_source(engine, name)
    return source, sorted(ids), read_rows(engine, source, ["id", "f0", "f1"], order_by="id", chunk_size=1000)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, N), max_size=5))
def test_id_range_partitions_cover_the_table_once(engine, partitioned, cuts):
    source, ordered, whole = partitioned
    edges = [None, *sorted({ordered[c] for c in cuts if c < N}), None]
    parts = []
    for low, high in zip(edges[:-1], edges[1:]):
        where = [*([source.table.c.id >= low] if low is not None else []),
                 *([source.table.c.id < high] if high is not None else [])]
        parts.append(read_rows(engine, source, ["id", "f0", "f1"], order_by="id", chunk_size=1000, where=where))
    joined = pd.concat(parts, ignore_index=True)
    joined = joined.astype(whole.dtypes.to_dict())  # an empty part has float columns
    pd.testing.assert_frame_equal(joined, whole, check_exact=True)


# ----------------------------------------------------------------------------- staging writes


def run_metadata(key):
    return LabelRows(run_key=key, ids=np.empty(0), labels=np.empty(0), k=3, method="lwea", theta=0.5,
                     ensemble_size=4, seed=None, source_table="features")


def stored_labels(engine, name) -> dict:
    parsed = parse_table_name(name)
    table = sa.Table(parsed.name, sa.MetaData(), schema=parsed.schema, autoload_with=engine)
    with engine.connect() as connection:
        return {(row.run_key, row.id): row.label for row in connection.execute(sa.select(table))}


def plain(value):
    """An id as read back, compared by value (psycopg gives numeric(20, 0) as Decimal)."""
    if isinstance(value, decimal.Decimal) and value == value.to_integral_value() and value.as_tuple().exponent == 0:
        return int(value)
    return value


@pytest.mark.parametrize("kind", ["int", "text", "uuid", "numeric", "decimal"])
@pytest.mark.parametrize("as_numpy", [True, False], ids=["numpy", "objects"])
def test_append_and_publish_round_trip(db_url, engine, tables, kind, as_numpy):
    if kind not in kinds_of(engine):
        pytest.skip(f"{engine.dialect.name} does not store {kind} ids exactly")
    ids = id_values(kind)
    labels = [(7 * i) % 5 for i in range(N)]
    out = tables("labels")
    staging = staging_table_name(out)
    id_array = np.array(ids, dtype=np.int64 if kind == "int" and as_numpy else object)
    create_staging_table(engine, staging, ID_TYPES[kind])
    try:
        # Two workers' partitions, each in its own transaction.
        assert append_labels(db_url, staging, id_array[:15], np.array(labels[:15])) == 15
        assert append_labels(db_url, staging, id_array[15:], np.array(labels[15:], dtype=np.int32)) == N - 15
        assert append_labels(db_url, staging, id_array[:0], np.array([], dtype=np.int64)) == 0
        assert publish_labels(engine, out, staging, ID_TYPES[kind], run_metadata("r1"), N) == (N, [])
    finally:
        drop_table_quietly(engine, staging)
    assert not sa.inspect(engine).has_table(parse_table_name(staging).name)
    stored = {(key, plain(value)): label for (key, value), label in stored_labels(engine, out).items()}
    assert stored == {("r1", as_stored(engine, value)): label for value, label in zip(ids, labels)}


def test_publish_refuses_a_row_count_mismatch_and_leaves_the_table(db_url, engine, tables):
    out = tables("labels")
    ids = np.arange(10, dtype=np.int64)
    for key, expected, fails in (("r1", 10, False), ("r1", 11, True), ("r2", 9, True)):
        staging = staging_table_name(out)
        create_staging_table(engine, staging, sa.BigInteger())
        try:
            append_labels(db_url, staging, ids, ids % 3 if key == "r1" else ids % 2)
            before = stored_labels(engine, out) if sa.inspect(engine).has_table(out) else None
            if fails:
                with pytest.raises(RuntimeError, match=rf"staged 10 labels but the run has {expected} rows"):
                    publish_labels(engine, out, staging, sa.BigInteger(), run_metadata(key), expected)
                assert stored_labels(engine, out) == before
            else:
                publish_labels(engine, out, staging, sa.BigInteger(), run_metadata(key), expected)
        finally:
            drop_table_quietly(engine, staging)
    assert stored_labels(engine, out) == {("r1", i): i % 3 for i in range(10)}


def test_append_reports_database_errors_in_one_line_and_writes_nothing(db_url, engine, tables):
    from lwec_tasks.io import DatabaseRefusedError

    staging = tables("checked")
    with engine.begin() as connection:
        sa.Table(staging, sa.MetaData(), sa.Column("id", sa.BigInteger, nullable=False),
                 sa.Column("label", sa.BigInteger, sa.CheckConstraint("label < 3"), nullable=False)).create(connection)
    refused = rf"refused to write labels to table '{staging}': .*(?i:check)"
    with pytest.raises(DatabaseRefusedError, match=refused) as error:
        append_labels(db_url, staging, np.arange(5000), np.arange(5000) % 4)
    assert "\n" not in str(error.value) and "INSERT" not in str(error.value) and "COPY" not in str(error.value)
    with engine.connect() as connection:
        assert connection.execute(sa.text(f"select count(*) from {staging}")).scalar_one() == 0


@pytest.mark.postgres
@pytest.mark.parametrize("kind", ["int", "uuid"])
def test_staging_table_lives_in_the_labels_schema(pg_schema, kind):
    url, schema = pg_schema
    engine = open_engine(url)
    out = f'{schema}."labels.{kind}"'
    staging = staging_table_name(out)
    assert parse_table_name(staging).schema == schema
    ids = id_values(kind)
    try:
        create_staging_table(engine, staging, ID_TYPES[kind])
        assert sa.inspect(engine).has_table(parse_table_name(staging).name, schema=schema)
        append_labels(url, staging, np.array(ids, dtype=object), np.arange(N) % 4)
        publish_labels(engine, out, staging, ID_TYPES[kind], run_metadata("r"), N)
        drop_table_quietly(engine, staging)
        assert sa.inspect(engine).get_table_names(schema=schema) == [f"labels.{kind}"]
        assert stored_labels(engine, out) == {("r", value): i % 4 for i, value in enumerate(ids)}
    finally:
        engine.dispose()
