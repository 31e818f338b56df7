"""Id-range reads (``read_rows(where=...)``) and the write path (``begin_run`` + ``write_partition`` +
``finish_run``) on real SQLite files and the PostgreSQL test server, for every kind of id."""

from __future__ import annotations

import decimal
import uuid

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.pipeline import drop_labels_table, read_rows_portable, unique
from lwec_tasks.io import LabelRows, describe_source, open_engine, parse_table_name, read_rows
from lwec_tasks.io.bulk_read import read_fast
from lwec_tasks.io.label_storage import storage_names
from lwec_tasks.io.run_tables import run_rows_name
from lwec_tasks.io.staging import (
    begin_run,
    discard_run,
    drop_table_quietly,
    finish_run,
    staging_table_name,
)
from lwec_tasks.stages.partitions import PartitionKeys, write_partition

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
    with engine.begin() as connection:
        for name in names:
            drop_labels_table(connection, name)


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
    source = describe_source(engine, parse_table_name(name))
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
    source = describe_source(engine, parse_table_name(name))
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


def write_run(engine, db_url, out, kind, key, parts, expected=None, reflect=False):
    """One run written as the write stage does: begun, each part appended by a worker (given the target's
    columns, or reflecting them), finished."""
    pending = begin_run(engine, parse_table_name(out), ID_TYPES[kind], run_metadata(key))
    columns = None if reflect else pending.target_columns
    try:
        written = sum(write_partition(db_url, pending.target, PartitionKeys(ids, None), labels, pending.append_run,
                                      columns) for ids, labels in parts)
        return finish_run(engine, pending, run_metadata(key), written if expected is None else expected, written)
    except BaseException:
        discard_run(engine, pending)
        raise
    finally:
        if pending.staged:
            drop_table_quietly(engine, pending.target)


@pytest.mark.parametrize("kind", ["int", "text", "uuid", "numeric", "decimal"])
@pytest.mark.parametrize("as_numpy", [True, False], ids=["numpy", "objects"])
@pytest.mark.parametrize("reflect", [False, True], ids=["columns-given", "reflected"])
def test_append_and_publish_round_trip(db_url, engine, tables, kind, as_numpy, reflect):
    if kind not in kinds_of(engine):
        pytest.skip(f"{engine.dialect.name} does not store {kind} ids exactly")
    ids = id_values(kind)
    labels = [(7 * i) % 5 for i in range(N)]
    out = tables("labels")
    id_array = np.array(ids, dtype=np.int64 if kind == "int" and as_numpy else object)
    before = set(sa.inspect(engine).get_table_names())
    # Two workers' partitions, each in its own transaction, and an empty one.
    parts = [(id_array[:15], np.array(labels[:15])), (id_array[15:], np.array(labels[15:], dtype=np.int32)),
             (id_array[:0], np.array([], dtype=np.int64))]
    assert write_run(engine, db_url, out, kind, "r1", parts, reflect=reflect) == (N, [])
    names = storage_names(parse_table_name(out))
    partitions = {run_rows_name(names, 1).name} if engine.dialect.name == "postgresql" else set()  # the run's own
    assert set(sa.inspect(engine).get_table_names()) - before == {names.runs.name, names.rows.name, *partitions}
    stored = {(key, plain(value)): label for (key, value), label in stored_labels(engine, out).items()}
    assert stored == {("r1", as_stored(engine, value)): label for value, label in zip(ids, labels)}


@pytest.mark.parametrize("kind", ["int", "text", "uuid", "numeric"])
def test_pending_run_knows_its_target_columns_as_the_database_has_them(db_url, engine, tables, kind):
    if kind not in kinds_of(engine):
        pytest.skip(f"{engine.dialect.name} does not store {kind} ids exactly")
    pending = begin_run(engine, parse_table_name(tables("labels")), ID_TYPES[kind], run_metadata("r1"))
    try:
        parsed = parse_table_name(pending.target)
        reflected = sa.Table(parsed.name, sa.MetaData(), schema=parsed.schema, autoload_with=engine).columns
        def spelled(kind):
            return kind.compile(dialect=engine.dialect)

        assert [(name, spelled(kind)) for name, kind in pending.target_columns] == \
            [(column.name, spelled(column.type)) for column in reflected]
    finally:
        discard_run(engine, pending)


def test_publish_refuses_a_row_count_mismatch_and_leaves_the_table(db_url, engine, tables):
    out = tables("labels")
    ids = np.arange(10, dtype=np.int64)
    for key, expected, fails in (("r1", 10, False), ("r1", 11, True), ("r2", 9, True)):
        before = stored_labels(engine, out) if sa.inspect(engine).has_table(out) else None
        parts = [(ids, ids % 3 if key == "r1" else ids % 2)]
        if fails:
            with pytest.raises(RuntimeError, match=rf"staged 10 labels but the run has {expected} rows"):
                write_run(engine, db_url, out, "int", key, parts, expected)
            assert stored_labels(engine, out) == before
        else:
            write_run(engine, db_url, out, "int", key, parts, expected)
    assert stored_labels(engine, out) == {("r1", i): i % 3 for i in range(10)}
    runs = storage_names(parse_table_name(out)).runs
    with engine.connect() as connection:  # the failed runs' rows went with them
        assert connection.execute(sa.text(f"select count(*) from {runs.name}")).scalar_one() == 1
        rows = storage_names(parse_table_name(out)).rows
        assert connection.execute(sa.text(f"select count(*) from {rows.name}")).scalar_one() == 10


def test_append_reports_database_errors_in_one_line_and_writes_nothing(db_url, engine, tables):
    from lwec_tasks.io import DatabaseRefusedError

    staging = tables("checked")
    with engine.begin() as connection:
        sa.Table(staging, sa.MetaData(), sa.Column("id", sa.BigInteger, nullable=False),
                 sa.Column("label", sa.BigInteger, sa.CheckConstraint("label < 3"), nullable=False)).create(connection)
    refused = rf"refused to write labels to table '{staging}': .*(?i:check)"
    with pytest.raises(DatabaseRefusedError, match=refused) as error:
        write_partition(db_url, parse_table_name(staging), PartitionKeys(np.arange(5000), None), np.arange(5000) % 4)
    assert "\n" not in str(error.value) and "INSERT" not in str(error.value) and "COPY" not in str(error.value)
    with engine.connect() as connection:
        assert connection.execute(sa.text(f"select count(*) from {staging}")).scalar_one() == 0


@pytest.mark.postgres
@pytest.mark.parametrize("kind", ["int", "uuid"])
def test_storage_and_staging_live_in_the_labels_schema(pg_schema, kind):
    url, schema = pg_schema
    engine = open_engine(url)
    out = f'{schema}."labels.{kind}"'
    assert parse_table_name(staging_table_name(parse_table_name(out), 1)).schema == schema
    ids = id_values(kind)
    try:
        write_run(engine, url, out, kind, "r", [(np.array(ids, dtype=object), np.arange(N) % 4)])
        assert sorted(sa.inspect(engine).get_table_names(schema=schema)) == [f"labels.{kind}_rows",
                                                                             f"labels.{kind}_rows$1",
                                                                             f"labels.{kind}_runs"]
        assert sa.inspect(engine).get_view_names(schema=schema) == [f"labels.{kind}"]
        assert stored_labels(engine, out) == {("r", value): i % 4 for i, value in enumerate(ids)}
    finally:
        engine.dispose()
