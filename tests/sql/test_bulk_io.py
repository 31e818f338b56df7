"""The fast database paths (ADBC drivers on PostgreSQL and SQLite) against the portable ones.

Every read compares ``read_fast`` (which must have been taken, not declined)
with the portable read (``read_rows_portable``: the fast paths off) value by value, dtype by dtype, row by row; every
write compares the rows stored by ``write_labels`` through ADBC ingestion with
those stored with the fast paths off (SQLAlchemy ``executemany``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import weakref

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lwec_tasks.io.run_metadata as run_metadata
import lwec_tasks.io.staging as staging
from helpers.pipeline import drop_labels_table, ingest_only, postgres_url_or_skip, read_rows_portable, unique
from helpers.wide_labels import label_table_schema
from lwec_tasks.io import DatabaseRefusedError, DatabaseUnreachableError, LabelRows, describe_source, open_engine
from lwec_tasks.io.bulk_read import FAST_PATH_ENV, read_fast
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.source import read_rows
from lwec_tasks.io.staging import write_labels

DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
_CREATED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def created_tables(engine: sa.Engine) -> list[str]:
    """Tables a test made on ``engine``; the ``engine`` fixture drops them afterwards."""
    return _CREATED.setdefault(engine, [])


@pytest.fixture(params=DATABASES)
def engine(request, tmp_path):
    if request.param == "sqlite":
        path = tmp_path / "bulk.db"
        path.touch()
        url = f"sqlite:///{path}"
    else:
        url = postgres_url_or_skip()
    created = open_engine(url)
    yield created
    with created.begin() as connection:
        for name in created_tables(created):
            drop_labels_table(connection, name)
    created.dispose()


def make_table(engine: sa.Engine, name: str, columns: list[sa.Column], records: list[dict]) -> sa.Table:
    """Create ``name`` (dropped again by the ``engine`` fixture) and insert ``records``."""
    table = sa.Table(name, sa.MetaData(), *columns)
    created_tables(engine).append(name)
    with engine.begin() as connection:
        table.drop(connection, checkfirst=True)
        table.create(connection)
        if records:
            connection.execute(sa.insert(table), records)
    return table


def assert_fast_read_matches(engine, table_name, columns, order_by, chunk_size=50_000):
    """read_fast takes the fast path and returns exactly the portable frame; so does read_rows."""
    source = describe_source(engine, parse_table_name(table_name))
    names = [order_by] if isinstance(order_by, str) else list(order_by or [])
    fast = read_fast(engine, source.table, columns, names, chunk_size)
    assert fast is not None, "the fast path declined"
    portable = read_rows_portable(engine, source, columns, order_by=order_by, chunk_size=chunk_size)
    pd.testing.assert_frame_equal(fast, portable, check_dtype=True, check_exact=True)
    pd.testing.assert_frame_equal(read_rows(engine, source, columns, order_by=order_by, chunk_size=chunk_size),
                                  portable, check_dtype=True, check_exact=True)
    return fast


def shuffled(records, seed=0):
    order = np.random.default_rng(seed).permutation(len(records))
    return [records[i] for i in order]


# ----------------------------------------------------------------------------- reads


@pytest.mark.parametrize("chunk_size", [7, 50_000])
def test_integer_ids_and_float_features(engine, chunk_size):
    rng = np.random.default_rng(1)
    records = [{"id": int(i) * 3 - 50, "f0": float(x), "f1": float(y), "n": int(z)}
               for i, x, y, z in zip(range(200), rng.normal(size=200), rng.normal(size=200) * 1e12,
                                     rng.integers(-5, 5, size=200))]
    make_table(engine, unique("ints"), [
        sa.Column("id", sa.BigInteger, primary_key=True), sa.Column("f0", sa.Double), sa.Column("f1", sa.Float),
        sa.Column("n", sa.SmallInteger)], shuffled(records))
    frame = assert_fast_read_matches(engine, created_tables(engine)[-1], ["id", "f0", "f1", "n"], "id", chunk_size)
    assert frame["id"].tolist() == sorted(r["id"] for r in records)
    assert [str(t) for t in frame.dtypes] == ["int64", "float64", "float64", "int64"]


def test_text_ids_and_text_labels(engine):
    words = ["", "a", "b c", "été", "日本語", "x" * 300, "'quoted'", '"dq"', "tab\there", "new\nline", "😀"]
    records = [{"key": f"{word}#{i}", "truth": word or None if i % 3 else "c1", "f0": i / 7}
               for i, word in enumerate(words * 5)]
    make_table(engine, unique("texts"), [
        sa.Column("key", sa.Text, primary_key=True), sa.Column("truth", sa.String(400)),
        sa.Column("f0", sa.Float)], shuffled(records))
    frame = assert_fast_read_matches(engine, created_tables(engine)[-1], ["key", "truth", "f0"], "key", chunk_size=4)
    assert sorted(frame["key"]) == sorted(r["key"] for r in records)
    assert pd.api.types.is_string_dtype(frame["key"])  # "str" on pandas 3, object on pandas 2
    assert frame["truth"].isna().sum() == sum(r["truth"] is None for r in records) > 0


def test_nulls_and_nans_in_features(engine):
    records = []
    for i in range(60):
        records.append({
            "id": i,
            "f0": None if i % 4 == 0 else (float("nan") if i % 5 == 0 else i * 0.5),
            "f1": float("inf") if i == 3 else (float("-inf") if i == 4 else -i * 1.25),
            "n": None if i % 3 == 0 else i,
            "t": None if i % 2 else f"t{i}",
        })
    make_table(engine, unique("nulls"), [
        sa.Column("id", sa.Integer, primary_key=True), sa.Column("f0", sa.Double), sa.Column("f1", sa.Double),
        sa.Column("n", sa.Integer), sa.Column("t", sa.Text)], shuffled(records))
    frame = assert_fast_read_matches(engine, created_tables(engine)[-1], ["id", "f0", "f1", "n", "t"], "id",
                                     chunk_size=5)
    assert frame["f0"].isna().sum() >= 15 and frame["n"].dtype == np.float64


def test_a_chunk_of_nulls_is_left_to_the_portable_path(engine):
    """pandas gives a chunk with only NULLs in a column ``object`` dtype: the fast path declines that case."""
    records = [{"id": i, "f0": None if i < 10 else float(i)} for i in range(30)]
    name = unique("nullchunk")
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True), sa.Column("f0", sa.Float)], records)
    source = describe_source(engine, parse_table_name(name))
    assert read_fast(engine, source.table, ["id", "f0"], ["id"], 10) is None
    pd.testing.assert_frame_equal(read_rows(engine, source, ["id", "f0"], order_by="id", chunk_size=10),
                                  read_rows_portable(engine, source, ["id", "f0"], order_by="id", chunk_size=10))
    # With chunks that are never all NULL, the fast path takes it.
    assert_fast_read_matches(engine, name, ["id", "f0"], "id", chunk_size=11)


def test_empty_table(engine):
    name = unique("empty")
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True), sa.Column("f0", sa.Float),
                              sa.Column("t", sa.Text)], [])
    source = describe_source(engine, parse_table_name(name))
    frame = read_rows(engine, source, ["id", "f0", "t"], order_by="id")
    pd.testing.assert_frame_equal(frame, read_rows_portable(engine, source, ["id", "f0", "t"], order_by="id"))
    assert frame.shape == (0, 3) and list(frame.columns) == ["id", "f0", "t"]


ODD_NAMES = ['my col', 'quo"te', "it's", "MixedCase", "select", "a%b", "from where"]


def test_quoted_and_odd_identifiers(engine):
    table_name = unique('Odd "Table" select')
    columns = [sa.Column("order", sa.Integer, primary_key=True)]
    columns += [sa.Column(name, sa.Float) for name in ODD_NAMES]
    columns += [sa.Column("Group By", sa.Text)]
    records = [{"order": 10 - i, **{name: i * (j + 1) + 0.5 for j, name in enumerate(ODD_NAMES)},
                "Group By": f"g{i % 3}"} for i in range(12)]
    make_table(engine, table_name, columns, records)
    wanted = ["Group By", *reversed(ODD_NAMES), "order"]
    frame = assert_fast_read_matches(engine, table_name, wanted, ["Group By", "order"], chunk_size=5)
    assert list(frame.columns) == wanted


def test_columns_come_back_in_the_order_asked_and_order_by_keeps_its_precedence(engine):
    records = [{"id": i, "a": i % 3, "b": -(i % 4) * 1.5, "c": f"r{i % 2}"} for i in range(40)]
    name = unique("order")
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True), sa.Column("a", sa.Integer),
                              sa.Column("b", sa.Float), sa.Column("c", sa.Text)], shuffled(records))
    frame = assert_fast_read_matches(engine, name, ["c", "b", "a", "id"], ["c", "a", "b", "id"])
    assert frame[["c", "a", "b", "id"]].values.tolist() == sorted(
        [[r["c"], r["a"], r["b"], r["id"]] for r in records])


def test_null_and_clean_chunks_mixed(engine):
    """NULLs in some of the portable path's chunks, none in others; text of varying widths."""
    rng = np.random.default_rng(3)
    records = [{"id": i, "f0": None if i in (17, 18, 90) else float(rng.normal()), "f1": float(i),
                "t": "é" * (i % 5)} for i in range(150)]
    name = unique("blocks")
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True), sa.Column("f0", sa.Float),
                              sa.Column("f1", sa.Float), sa.Column("t", sa.Text)], records)
    assert_fast_read_matches(engine, name, ["id", "f0", "f1"], "id", chunk_size=20)
    assert_fast_read_matches(engine, name, ["id", "t", "f0"], "id", chunk_size=20)


def test_sqlite_results_in_many_arrow_batches(tmp_path, monkeypatch):
    import lwec_tasks.io.bulk_read as bulk_read

    monkeypatch.setattr(bulk_read, "QUERY_BATCH_ROWS", 7)
    path = tmp_path / "batches.db"
    path.touch()
    engine = open_engine(f"sqlite:///{path}")
    records = [{"id": i, "f0": None if i in (20, 33) else i / 3, "n": None if i == 40 else i * 2,
                "t": None if i == 50 else f"t{i}"} for i in range(100)]
    make_table(engine, "batches", [sa.Column("id", sa.Integer, primary_key=True), sa.Column("f0", sa.Float),
                                   sa.Column("n", sa.Integer), sa.Column("t", sa.Text)], shuffled(records))
    assert_fast_read_matches(engine, "batches", ["t", "id", "f0", "n"], "id", chunk_size=9)


def test_the_fast_path_can_be_turned_off(engine, monkeypatch):
    name = unique("off")
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True)], [{"id": 1}])
    monkeypatch.setenv(FAST_PATH_ENV, "0")
    assert read_fast(engine, describe_source(engine, parse_table_name(name)).table, ["id"], ["id"], 10) is None


def test_sqlite_columns_mixing_storage_classes(tmp_path):
    """Values the driver would convert differently from sqlite3 + SQLAlchemy are read the portable way."""
    url = f"sqlite:///{tmp_path / 'mixed.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql('create table m (id integer primary key, anything, n integer, "when" datetime, '
                                   'ok boolean, d numeric(10, 2), i integer)')
        connection.exec_driver_sql("insert into m values (1, 'text', 1, '2024-01-01 00:00:00', 1, 1.234, 1), "
                                   "(2, 5, 2.5, '2024-01-02 00:00:00', 0, 2.005, 2), (3, x'00', 3, null, 1, 3, 'x')")
    engine = open_engine(url)
    source = describe_source(engine, parse_table_name("m"))
    for column in ("anything", "n", "when", "ok", "d", "i"):
        pd.testing.assert_frame_equal(read_rows(engine, source, ["id", column], order_by="id"),
                                      read_rows_portable(engine, source, ["id", column], order_by="id"))
    for column in ("anything", "when", "ok", "d", "i"):
        assert read_fast(engine, source.table, ["id", column], ["id"], 10) is None, column
    assert read_fast(engine, source.table, ["id", "n"], ["id"], 10)["n"].tolist() == [1.0, 2.5, 3.0]


@pytest.mark.postgres
def test_postgres_real_numeric_and_narrow_integers_match_psycopg():
    engine = open_engine(postgres_url_or_skip())
    name = unique("pgtypes")
    values = ["0.1", "1e-20", "123456789012345678901234567890.123456789", "-0.000000000000000000001",
              "3.14159265358979323846264338327950288419716939937510", "NaN", "2.5", "1e300"]
    reals = [0.1, 1e-20, 3.4e38, -2.5, 1 / 3, float("nan"), float("inf"), 16777217.0]
    records = [{"id": i, "r": r, "d": decimal.Decimal(x), "s": (i * 997) % 32767, "b": (i * 7919) ** 3 % (2**62)}
               for i, (x, r) in enumerate(zip(values, reals))]
    records.append({"id": 99, "r": 1e30, "d": decimal.Decimal("-7"), "s": -32768, "b": -(2**63)})
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True), sa.Column("r", sa.REAL),
                              sa.Column("d", sa.Numeric), sa.Column("s", sa.SmallInteger),
                              sa.Column("b", sa.BigInteger)], records)
    try:
        frame = assert_fast_read_matches(engine, name, ["id", "r", "d", "s", "b"], "id")
        assert frame["r"].iloc[-1] == 1e30  # float4's shortest text form, as psycopg reads it
    finally:
        with engine.begin() as connection:
            sa.Table(name, sa.MetaData()).drop(connection)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=40), chunk_size=st.integers(1, 12),
       pieces=st.integers(1, 3))
def test_boolean_values_equal_pandas_reading_python_bools_chunk_by_chunk(values, chunk_size, pieces):
    """An Arrow bool column (in ``pieces`` Arrow chunks) as pandas' chunked read of psycopg's True/False/None
    builds it: each chunk a Series of Python values, concatenated (chunks NULL throughout are declined first)."""
    import pyarrow as pa

    from lwec_tasks.io.bulk_read import boolean_values

    chunks = [values[start:start + chunk_size] for start in range(0, len(values), chunk_size)]
    if any(all(v is None for v in chunk) for chunk in chunks):
        return  # _frame declines the read before converting
    expected = pd.concat([pd.Series(chunk) for chunk in chunks], ignore_index=True)
    cut = max(1, len(values) // pieces)
    arrow = pa.chunked_array([pa.array(values[i:i + cut], type=pa.bool_()) for i in range(0, len(values), cut)])
    got = boolean_values(arrow)
    pd.testing.assert_series_equal(got, expected, check_dtype=True, check_exact=True)
    assert [type(v) for v in got] == [type(v) for v in expected]


@pytest.mark.postgres
@pytest.mark.parametrize("chunk_size", [4, 50_000])
def test_postgres_booleans_match_psycopg(chunk_size):
    """Boolean columns come through Arrow: ``bool`` without NULLs, ``object`` True/False/None with them, also when
    only some of the portable path's chunks hold a NULL."""
    engine = open_engine(postgres_url_or_skip())
    name = unique("pgbool")
    records = [{"id": i, "ok": i % 3 == 0, "maybe": None if i in (5, 17) else i % 2 == 1, "t": f"t{i % 4}"}
               for i in range(40)]
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True), sa.Column("ok", sa.Boolean),
                              sa.Column("maybe", sa.Boolean), sa.Column("t", sa.Text)], shuffled(records))
    try:
        frame = assert_fast_read_matches(engine, name, ["id", "ok", "maybe", "t"], "id", chunk_size)
        assert frame["ok"].dtype == bool and frame["maybe"].dtype == object
        assert frame["maybe"].tolist() == [r["maybe"] for r in records]
        assert all(type(v) is bool for v in frame["maybe"] if v is not None)
    finally:
        with engine.begin() as connection:
            sa.Table(name, sa.MetaData()).drop(connection)


@pytest.mark.postgres
def test_postgres_types_it_does_not_decode_are_read_the_portable_way():
    engine = open_engine(postgres_url_or_skip())
    name = unique("pgother")
    make_table(engine, name, [sa.Column("id", sa.Integer, primary_key=True), sa.Column("ok", sa.Boolean),
                              sa.Column("at", sa.DateTime(timezone=True)), sa.Column("d", sa.Numeric)],
               [{"id": 1, "ok": True, "at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "d": decimal.Decimal("1e400")}])
    source = describe_source(engine, parse_table_name(name))
    try:
        for columns in (["id", "at"], ["id", "d"]):  # 1e400 does not fit a double
            assert read_fast(engine, source.table, columns, ["id"], 10) is None
            pd.testing.assert_frame_equal(read_rows(engine, source, columns, order_by="id"),
                                          read_rows_portable(engine, source, columns, order_by="id"))
    finally:
        with engine.begin() as connection:
            sa.Table(name, sa.MetaData()).drop(connection)


@pytest.mark.postgres
def test_postgres_connection_lost_during_the_read_is_unreachable(monkeypatch):
    import adbc_driver_postgresql.dbapi

    url = postgres_url_or_skip()
    engine = open_engine(url)
    name = unique("lost")
    make_table(engine, name, [sa.Column("id", sa.BigInteger, primary_key=True), sa.Column("f0", sa.Float)],
               [{"id": 1, "f0": 0.5}])
    connect = adbc_driver_postgresql.dbapi.connect
    killer = sa.create_engine(url)

    def connect_then_lose_the_connection(*args, **kwargs):
        connection = connect(*args, **kwargs)
        with connection.cursor() as cursor:
            cursor.execute("select pg_backend_pid()")
            pid = cursor.fetchone()[0]
        connection.commit()
        with killer.begin() as killing:
            killing.execute(sa.text("select pg_terminate_backend(:pid)"), {"pid": pid})
        return connection

    monkeypatch.setattr(adbc_driver_postgresql.dbapi, "connect", connect_then_lose_the_connection)
    try:
        with pytest.raises(DatabaseUnreachableError, match="cannot reach database"):
            read_rows(engine, describe_source(engine, parse_table_name(name)), ["id", "f0"], order_by="id")
    finally:
        killer.dispose()
        monkeypatch.undo()
        engine.dispose()
        with open_engine(url).begin() as connection:
            sa.Table(name, sa.MetaData()).drop(connection)


# ----------------------------------------------------------------------------- writes


class FrozenClock:
    """Stands in for the ``datetime`` module of :mod:`lwec_tasks.io.run_metadata` so both paths stamp the same time."""

    UTC = dt.UTC

    class datetime:  # noqa: N801 - mirrors datetime.datetime
        @staticmethod
        def now(tz=None):
            return dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)


def stored(engine, table_name):
    table = sa.Table(table_name, sa.MetaData(), autoload_with=engine)
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(sa.select(table).order_by(table.c.run_key, table.c.id))]


def rows_for(key, ids, labels, **overrides):
    fields = dict(run_key=key, ids=np.asarray(ids), labels=np.asarray(labels), k=3, method="lwea", theta=0.4,
                  ensemble_size=10, seed=7, source_table="features", flow_run_id="3f1c-run")
    fields.update(overrides)
    return LabelRows(**fields)


def write_labels_portable(engine, table_name, rows, **kwargs):
    """``write_labels`` with the fast paths off: the staging table filled by SQLAlchemy ``executemany``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENV, "0")
        return write_labels(engine, parse_table_name(table_name), rows, **kwargs)


@pytest.mark.parametrize("ids", [
    np.array([5, -3, 2**40, 0, 17]),
    np.array(["b", "", "été", "日本", "x y"], dtype=object),
    np.array([0.5, -1.25, 1e300, 3.0, 7.75]),
], ids=["int", "text", "float"])
@pytest.mark.parametrize("seed, flow_run_id", [(7, "3f1c-run"), (None, None)])
def test_fast_write_stores_the_rows_of_the_portable_write(engine, monkeypatch, ids, seed, flow_run_id):
    monkeypatch.setattr(run_metadata, "dt", FrozenClock)
    fast, portable = unique("fast_labels"), unique("portable_labels")
    created_tables(engine).extend([fast, portable])
    rows = rows_for("run-a", ids, [2, 0, 1, 1, 0], seed=seed, flow_run_id=flow_run_id)
    assert write_labels_portable(engine, portable, rows) == 5
    ingest_only(monkeypatch)
    assert write_labels(engine, parse_table_name(fast), rows) == 5
    assert stored(engine, fast) == stored(engine, portable)
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            kinds = connection.execute(sa.text(
                f"select distinct typeof(label), typeof(k), typeof(ensemble_size), typeof(theta) from {fast}")).all()
        assert kinds == [("integer", "integer", "integer", "real")]  # never BLOBs


def test_fast_write_of_many_rows_in_several_blocks(engine, monkeypatch):
    monkeypatch.setattr(run_metadata, "dt", FrozenClock)
    n = 4321
    text_ids = np.array([f"id-{i}" * (i % 4) + str(i) for i in range(n)], dtype=object)
    for ids in (text_ids, np.arange(n) * 11):
        fast, portable = unique("fast_labels"), unique("portable_labels")
        created_tables(engine).extend([fast, portable])
        for key in ("a", "b"):
            write_labels_portable(engine, portable, rows_for(key, ids, np.arange(n) % 5))
        with monkeypatch.context() as patch:
            ingest_only(patch)
            for key in ("a", "b"):
                write_labels(engine, parse_table_name(fast), rows_for(key, ids, np.arange(n) % 5))
        assert stored(engine, fast) == stored(engine, portable)
        assert len(stored(engine, fast)) == 2 * n


def test_rewriting_a_run_key_replaces_only_its_rows(engine, monkeypatch):
    out = unique("replace_labels")
    created_tables(engine).append(out)
    ingest_only(monkeypatch)
    write_labels(engine, parse_table_name(out), rows_for("a", np.arange(100), np.arange(100) % 2))
    write_labels(engine, parse_table_name(out), rows_for("b", np.arange(50), np.zeros(50, dtype=int)))
    write_labels(engine, parse_table_name(out), rows_for("a", np.arange(10, 30), np.ones(20, dtype=int), seed=1))
    rows = stored(engine, out)
    assert [r[1] for r in rows if r[0] == "a"] == list(range(10, 30))
    assert {r[2] for r in rows if r[0] == "a"} == {1} and {r[7] for r in rows if r[0] == "a"} == {1}
    assert [r[1] for r in rows if r[0] == "b"] == list(range(50))


def test_a_duplicate_id_fails_the_write_and_leaves_the_earlier_rows(engine, monkeypatch):
    out = unique("atomic_labels")
    created_tables(engine).append(out)
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 3], [0, 1, 1]))
    write_labels(engine, parse_table_name(out), rows_for("b", [1], [0]))
    before = stored(engine, out)
    with pytest.raises(DatabaseRefusedError, match="duplicate|UNIQUE"):
        write_labels(engine, parse_table_name(out), rows_for("a", np.r_[np.arange(5000), 7], np.zeros(5001, dtype=int)))
    assert stored(engine, out) == before
    # The fast path alone (no portable retry) leaves them too.
    ingest_only(monkeypatch)
    with pytest.raises((DatabaseRefusedError, AssertionError)):
        write_labels(engine, parse_table_name(out), rows_for("a", np.r_[np.arange(5000), 7], np.zeros(5001, dtype=int)))
    assert stored(engine, out) == before


def test_a_failure_after_the_delete_leaves_the_earlier_rows_and_no_staging_table(engine, monkeypatch):
    out = unique("atomic_labels")
    created_tables(engine).append(out)
    write_labels(engine, parse_table_name(out), rows_for("a", np.arange(3000), np.arange(3000) % 3))
    before = stored(engine, out)
    tables_before = set(sa.inspect(engine).get_table_names())

    def fail(*args, **kwargs):
        raise RuntimeError("injected failure after the DELETE and the INSERT")

    monkeypatch.setattr(staging, "prune_runs", fail)  # runs last in the publishing transaction
    with pytest.raises(RuntimeError, match="injected"):
        write_labels(engine, parse_table_name(out), rows_for("a", np.arange(5000), np.ones(5000, dtype=int)),
                     keep_runs=3)
    assert stored(engine, out) == before
    assert set(sa.inspect(engine).get_table_names()) == tables_before


def test_a_failed_first_fast_write_leaves_no_table(engine, monkeypatch):
    out = unique("first_labels")
    created_tables(engine).append(out)
    ingest_only(monkeypatch)
    with pytest.raises((DatabaseRefusedError, AssertionError)):
        write_labels(engine, parse_table_name(out), rows_for("a", [7, 8, 8], [1, 1, 1]))
    assert not sa.inspect(engine).has_table(out)


def test_labels_table_names_needing_quotes(engine, monkeypatch):
    monkeypatch.setattr(run_metadata, "dt", FrozenClock)
    ingest_only(monkeypatch)
    out = "Order"  # a keyword, mixed case: quoted by the dialect
    created_tables(engine).append(out)
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2], [0, 1]))
    write_labels(engine, parse_table_name(out), rows_for("a", [3], [1]))
    assert [r[:3] for r in stored(engine, out)] == [("a", 3, 1)]


@pytest.mark.postgres
def test_postgres_existing_labels_tables_with_other_column_types():
    """Staged bigint ids go into an int4 or numeric id column (out-of-range ids refused as the portable path does)."""
    engine = open_engine(postgres_url_or_skip())
    names = []
    try:
        for id_sql in ("integer", "numeric(20, 0)"):
            out = unique("typed_labels")
            names.append(out)
            table = label_table_schema(out, sa.BigInteger())
            with engine.begin() as connection:
                table.create(connection)
                connection.execute(sa.text(f"alter table {out} alter column id type {id_sql}"))
            write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 2**20], [0, 1, 2]))
            assert [(r[1], r[2]) for r in stored(engine, out)] == [(1, 0), (2, 1), (2**20, 2)]
        with pytest.raises(DatabaseRefusedError, match="out of range"):  # as the portable path reports
            write_labels(engine, parse_table_name(names[0]), rows_for("a", [1, 2**40], [0, 1]))
    finally:
        with engine.begin() as connection:
            for out in names:
                drop_labels_table(connection, out)
        engine.dispose()


# ----------------------------------------------------------------------------- round trips (property)

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


@st.composite
def feature_tables(draw):
    n = draw(st.integers(1, 40))
    text_ids = draw(st.booleans())
    if text_ids:
        ids = draw(st.lists(_TEXT, min_size=n, max_size=n, unique=True))
    else:
        ids = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n, unique=True))
    floats = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=64))
    f0 = draw(st.lists(floats, min_size=n, max_size=n))
    f1 = draw(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=n, max_size=n))
    labels = draw(st.lists(st.integers(0, 2**31 - 1), min_size=n, max_size=n))
    return text_ids, ids, f0, f1, labels


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=feature_tables(), chunk_size=st.integers(1, 50))
def test_round_trip_of_random_ids_labels_and_floats(engine, monkeypatch, data, chunk_size):
    text_ids, ids, f0, f1, labels = data
    name = unique("prop")
    make_table(engine, name, [
        sa.Column("id", sa.Text if text_ids else sa.BigInteger, primary_key=True), sa.Column("f0", sa.Double),
        sa.Column("f1", sa.Double), sa.Column("label", sa.Integer)],
        [{"id": i, "f0": a, "f1": b, "label": c} for i, a, b, c in zip(ids, f0, f1, labels)])
    source = describe_source(engine, parse_table_name(name))
    columns = ["id", "label", "f0", "f1"]
    portable = read_rows_portable(engine, source, columns, order_by="id", chunk_size=chunk_size)
    fast = read_rows(engine, source, columns, order_by="id", chunk_size=chunk_size)
    pd.testing.assert_frame_equal(fast, portable, check_exact=True)
    declined = read_fast(engine, source.table, columns, ["id"], chunk_size) is None
    assert not declined or portable.isna().any().any() or portable["f0"].dtype == object

    with monkeypatch.context() as patch:
        patch.setattr(run_metadata, "dt", FrozenClock)
        out_fast, out_portable = unique("prop_fast"), unique("prop_portable")
        created_tables(engine).extend([out_fast, out_portable])
        id_values = np.array(ids, dtype=object) if text_ids else np.array(ids, dtype=np.int64)
        rows = rows_for("p", id_values, np.array(labels))
        write_labels_portable(engine, out_portable, rows)
        ingest_only(patch)
        write_labels(engine, parse_table_name(out_fast), rows)
        assert stored(engine, out_fast) == stored(engine, out_portable)
    with engine.begin() as connection:
        for table in (name, out_fast, out_portable):
            drop_labels_table(connection, table)
    del created_tables(engine)[-3:]


@pytest.mark.postgres
def test_lwecs_postgres_sessions_are_named_lwec_unless_the_url_names_them():
    """Both ways lwec talks to PostgreSQL (SQLAlchemy's psycopg engine, the ADBC reader) show as 'lwec' in
    pg_stat_activity; an ``application_name`` in the URL wins."""
    from lwec_tasks.io.bulk_read import adbc_connector

    url = postgres_url_or_skip()
    for database_url, expected in ((url, "lwec"), (f"{url}?application_name=nightly", "nightly")):
        engine = open_engine(database_url)
        try:
            with engine.connect() as connection:
                assert connection.execute(sa.text("SHOW application_name")).scalar_one() == expected
            connect = adbc_connector(engine, read_only=True)
            if connect is not None:
                with connect() as connection, connection.cursor() as cursor:
                    cursor.execute("SELECT current_setting('application_name')")
                    assert cursor.fetchone()[0] == expected
        finally:
            engine.dispose()
