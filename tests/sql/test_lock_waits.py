"""Readers of a labels storage never queue behind lwec for long, and what an interrupted write left goes.

Against the PostgreSQL test server, with real second sessions: a "dashboard" holding an open transaction that
has read the views, a reader querying them meanwhile, a session holding a lock publishing needs, and a writer
process killed (SIGKILL) while it waits.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.label_rows import rows_for
from helpers.pipeline import sessions_waiting_to_write
from lwec_tasks.io import ensure_latest_view, write_labels
from lwec_tasks.io.cleanup import GRACE_SECONDS, remove_leftovers, run_tables_of, tidy
from lwec_tasks.io.label_storage import storage_names
from lwec_tasks.io.locks import LOCK_WAIT_SECONDS, LockWaitError
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.staging import append_to, begin_run

#: The longest a reader may wait for its query, by the promise lwec makes.
READER_LIMIT_SECONDS = 2.0


@pytest.fixture
def pg(pg_schema):
    """``(url, engine, out)``: the test server, an engine of it and a labels table name in a fresh schema."""
    url, schema = pg_schema
    engine = sa.create_engine(url)
    yield url, engine, f"{schema}.labels"
    engine.dispose()


def stored(engine, out) -> tuple[dict[str, bool], list[int], set[int]]:
    """(run key → published, the runs' numbers, runs that have a table of their own or a staging table)."""
    names = storage_names(parse_table_name(out))
    with engine.connect() as connection:
        runs = connection.execute(sa.text(f"select run, run_key, published from {names.runs}")).all()
        tables = set(run_tables_of(connection, names))
    return {key: published for _, key, published in runs}, sorted(run for run, *_ in runs), tables


def view_keys(engine, out) -> list[str]:
    with engine.connect() as connection:
        return sorted(connection.execute(sa.text(f"select distinct run_key from {out}")).scalars())


class Reader(threading.Thread):
    """A second session querying the view and the latest view one after another until stopped; records how long
    each query took (each bounded at 10 s by statement_timeout, so a queued reader shows as a long query)."""

    def __init__(self, url, out):
        super().__init__(daemon=True)
        self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        self.queries = [f"select count(*) from {out}", f"select count(*) from {out}_latest"]
        self.seconds: list[float] = []
        self.stop = threading.Event()

    def run(self):
        with self.engine.connect() as connection:
            connection.execute(sa.text("set statement_timeout = '10s'"))
            connection.commit()
            while not self.stop.is_set():
                for query in self.queries:
                    started = time.perf_counter()
                    connection.execute(sa.text(query)).scalar_one()
                    connection.commit()
                    self.seconds.append(time.perf_counter() - started)

    def finish(self) -> list[float]:
        self.stop.set()
        self.join(30)
        self.engine.dispose()
        return self.seconds


@pytest.mark.postgres
def test_a_dashboard_transaction_defers_the_prune_and_readers_never_wait_behind_it(pg, caplog):
    url, engine, out = pg
    write_labels(engine, parse_table_name(out), rows_for("a", np.arange(2000), np.arange(2000) % 3))
    ensure_latest_view(engine, parse_table_name(out))
    run_a = stored(engine, out)[1][0]
    dashboard = sa.create_engine(url, poolclass=sa.pool.NullPool).connect()
    assert dashboard.execute(sa.text(f"select count(*) from {out}_latest")).scalar_one() == 2000  # holds its locks
    reader = Reader(url, out)
    reader.start()
    try:
        time.sleep(0.2)
        caplog.set_level(logging.INFO, logger="lwec_tasks")
        started = time.perf_counter()
        written = write_labels(engine, parse_table_name(out), rows_for("b", np.arange(100), np.arange(100) % 2),
                               keep_runs=1)
        write_seconds = time.perf_counter() - started
        time.sleep(0.2)
    finally:
        seconds = reader.finish()
        dashboard_rows = dashboard.execute(sa.text(f"select count(*) from {out}")).scalar_one()
        dashboard.rollback()
        dashboard.close()
    assert written == 100 and view_keys(engine, out) == ["b"]  # published and pruned while the dashboard read
    assert dashboard_rows == 100  # the dashboard's next query (read committed) sees the new run, unhindered
    print(f"reader: {len(seconds)} queries, longest {max(seconds):.3f} s; write {write_seconds:.2f} s")
    assert seconds and max(seconds) < READER_LIMIT_SECONDS, max(seconds)
    # The reader did queue behind the prune's DROP for a while (the situation is real), never past its limit.
    assert max(seconds) > LOCK_WAIT_SECONDS / 4, max(seconds)
    assert write_seconds < 10 * LOCK_WAIT_SECONDS
    deferred = [record.getMessage() for record in caplog.records if "deferred" in record.getMessage().lower()]
    assert len(deferred) == 1 and repr(out) in deferred[0] and "a later run removes them" in deferred[0]
    keys, runs, tables = stored(engine, out)
    assert keys == {"b": True} and run_a in tables  # run a deleted, its table left until no one reads it

    caplog.clear()
    write_labels(engine, parse_table_name(out), rows_for("c", [1, 2], [0, 1]), keep_runs=2)  # a later run, another key
    keys, runs, tables = stored(engine, out)
    assert keys == {"b": True, "c": True} and tables == set(runs)  # only the published runs' tables remain
    assert any("removed the tables of 1 deleted or abandoned run" in record.getMessage().lower()
               for record in caplog.records)


@pytest.mark.postgres
def test_publishing_that_cannot_get_its_lock_fails_naming_the_table_and_publishes_nothing(pg):
    url, engine, out = pg
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 3], [0, 1, 2]))
    before = stored(engine, out)
    blocker = sa.create_engine(url, poolclass=sa.pool.NullPool).connect()
    rows = storage_names(parse_table_name(out)).rows
    blocker.execute(sa.text(f"lock table only {rows} in share update exclusive mode"))
    try:
        started = time.perf_counter()
        with pytest.raises(LockWaitError) as error:
            write_labels(engine, parse_table_name(out), rows_for("b", [1, 2, 3], [2, 2, 2]))
        elapsed = time.perf_counter() - started
    finally:
        blocker.rollback()
        blocker.close()
    message = str(error.value)
    assert f"could not publish run key 'b' to table {out!r}" in message and "nothing was published" in message
    assert "\n" not in message and elapsed < 10 * LOCK_WAIT_SECONDS
    assert stored(engine, out) == before and view_keys(engine, out) == ["a"]  # nothing left behind


KILLED_WRITER = textwrap.dedent("""
    import sys, uuid
    import numpy as np, sqlalchemy as sa
    from lwec_tasks.io import LabelRows
    from lwec_tasks.io.names import parse_table_name
    from lwec_tasks.io.staging import append_to, begin_run, finish_run
    url, out = sys.argv[1:3]
    ids = np.array([uuid.UUID(int=i + 1) for i in range(500)], dtype=object)
    rows = LabelRows(run_key="killed", ids=ids, labels=np.arange(500) % 3, k=3, method="lwea", theta=0.4,
                     ensemble_size=10, seed=7, source_table="features")
    engine = sa.create_engine(url)
    pending = begin_run(engine, parse_table_name(out), sa.Uuid(), rows)
    appended = append_to(engine, pending.target, ids, rows.labels, pending.append_run, pending.target_columns)
    print(pending.run, flush=True)
    sys.stdin.readline()
    finish_run(engine, pending, rows, 500, appended)  # waits for the writers' lock the test holds
    print("published", flush=True)
""")


@pytest.mark.postgres
def test_a_writer_killed_while_it_waits_leaves_what_a_later_run_of_another_key_removes(pg):
    url, engine, out = pg
    ids = [uuid.UUID(int=i + 1) for i in range(3)]
    write_labels(engine, parse_table_name(out), rows_for("a", ids, [0, 1, 2]), id_type=sa.Uuid())
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, url, out], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ})
    holder = sa.create_engine(url, poolclass=sa.pool.NullPool).connect()
    try:
        run = int(writer.stdout.readline())
        holder.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(out))))  # the writers' turn
        writer.stdin.write("go\n")
        writer.stdin.flush()
        waiting = wait_until(lambda: sessions_waiting_to_write(engine) > 0)
        writer.send_signal(signal.SIGKILL)
        assert writer.wait(10) == -signal.SIGKILL
    finally:
        holder.rollback()
        holder.close()
        if writer.poll() is None:
            writer.kill()
    assert waiting  # killed while it waited for its turn to publish
    keys, runs, tables = stored(engine, out)
    assert keys == {"a": True, "killed": False} and run in tables  # its unpublished run, table and staging table
    names = storage_names(parse_table_name(out))
    with engine.connect() as connection:
        left = set(sa.inspect(connection).get_table_names(schema=names.view.schema))
    assert {names.run_rows(run).name, names.staging(run).name} <= left

    write_labels(engine, parse_table_name(out), rows_for("b", ids[:2], [1, 1]), id_type=sa.Uuid())  # another key, later
    keys, runs, tables = stored(engine, out)
    assert keys == {"a": True, "b": True} and tables == set(runs)
    with engine.connect() as connection:
        left = set(sa.inspect(connection).get_table_names(schema=names.view.schema))
    assert not {names.run_rows(run).name, names.staging(run).name} & left
    assert view_keys(engine, out) == ["a", "b"]


@pytest.mark.postgres
def test_a_live_writer_keeps_its_run_while_another_key_is_written(pg):
    url, engine, out = pg
    write_labels(engine, parse_table_name(out), rows_for("a", [1], [0]))
    rows = rows_for("live", [5, 6, 7], [2, 2, 2])
    pending = begin_run(engine, parse_table_name(out), sa.BigInteger(), rows)
    try:
        append_to(engine, pending.target, rows.ids, rows.labels, pending.append_run)
        write_labels(engine, parse_table_name(out), rows_for("b", [1], [1]))
        keys, runs, tables = stored(engine, out)
        assert keys == {"a": True, "b": True, "live": False} and pending.run in tables
    finally:
        pending.lock.release()
    assert remove_leftovers(engine, parse_table_name(out)).removed == (pending.run,)  # its writer gone, it goes
    assert stored(engine, out)[0] == {"a": True, "b": True}


def test_elsewhere_an_unpublished_run_goes_once_older_than_the_grace_period(tmp_path):
    import datetime as dt

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'labels.db'}")
    write_labels(engine, parse_table_name("labels"), rows_for("a", [1, 2], [0, 1]))
    rows = rows_for("left", [5, 6], [2, 2])
    pending = begin_run(engine, parse_table_name("labels"), sa.BigInteger(), rows)
    append_to(engine, pending.target, rows.ids, rows.labels, pending.append_run)
    assert remove_leftovers(engine, parse_table_name("labels")).removed == ()  # within the grace period: maybe live
    later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=GRACE_SECONDS + 60)
    assert remove_leftovers(engine, parse_table_name("labels"), now=later).removed == (pending.run,)
    with engine.connect() as connection:
        assert connection.execute(sa.text("select count(*) from labels_rows")).scalar_one() == 2
        assert connection.execute(sa.text("select run_key from labels_runs")).scalars().all() == ["a"]


def wait_until(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.postgres
def test_removing_leftovers_after_a_write_logs_a_database_error_instead_of_failing(pg, caplog):
    url, _, out = pg
    engine = sa.create_engine(sa.make_url(url).set(database=f"lwec_missing_{uuid.uuid4().hex[:8]}"))
    log = logging.getLogger("lwec_tasks.test_tidy")
    with caplog.at_level(logging.WARNING, logger=log.name):
        assert tidy(engine, parse_table_name(out), log) is None
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and repr(out) in record.getMessage()
    assert "a later run tries again" in record.getMessage() and "does not exist" in record.getMessage()
