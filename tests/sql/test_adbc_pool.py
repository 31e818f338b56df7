"""Reusing idle ADBC connections to PostgreSQL (lwec_tasks.io.adbc_pool)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from threading import Barrier

import pytest

from helpers.pipeline import postgres_url_or_skip
from lwec_tasks.io import adbc_pool, open_engine
from lwec_tasks.io.bulk_read import adbc_connector

pytestmark = pytest.mark.postgres


@pytest.fixture
def connect():
    engine = open_engine(postgres_url_or_skip())
    adbc_pool.close_idle_connections()
    yield adbc_connector(engine, read_only=True)
    adbc_pool.close_idle_connections()
    engine.dispose()


def backend(connect) -> int:
    """The server process id of the connection ``connect()`` hands out (one query)."""
    with connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_an_idle_connection_is_reused_with_no_transaction_left_open(connect):
    import psycopg

    first = backend(connect)
    assert backend(connect) == first
    url = postgres_url_or_skip().replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as observer:
        state = observer.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (first,)).fetchone()[0]
    assert state == "idle"  # not "idle in transaction": the read's transaction was ended when it was given back


def test_a_connection_whose_work_failed_is_closed_not_reused(connect):
    first = backend(connect)
    with pytest.raises(RuntimeError), connect():
        raise RuntimeError("the block failed")
    assert backend(connect) != first


def test_old_idle_connections_are_closed_and_at_most_max_idle_kept(connect, monkeypatch):
    first = backend(connect)
    monkeypatch.setattr(adbc_pool, "MAX_IDLE_SECONDS", -1.0)
    assert backend(connect) != first
    monkeypatch.setattr(adbc_pool, "MAX_IDLE_SECONDS", 60.0)
    adbc_pool.close_idle_connections()
    with ExitStack() as stack:  # more connections at once than the pool keeps
        held = [stack.enter_context(connect()) for _ in range(adbc_pool.MAX_IDLE + 2)]
        assert len({id(connection) for connection in held}) == len(held)
    (idle,) = adbc_pool.PROCESS_POOL.idle.values()
    assert len(idle) == adbc_pool.MAX_IDLE


def test_concurrent_threads_get_distinct_connections(connect):
    barrier = Barrier(3)

    def pid(_):
        with connect() as connection, connection.cursor() as cursor:
            barrier.wait(timeout=30)  # all three hold a connection now
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]

    with ThreadPoolExecutor(3) as pool:
        assert len(set(pool.map(pid, range(3)))) == 3


def test_a_forked_child_opens_its_own_connection_and_leaves_its_parents_alone(connect):
    """A forked child must not share its parent's pooled connection (one socket, two clients) nor end it."""
    import os

    parent_backend = backend(connect)  # now idle in the pool
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its own connection, reported through the pipe
        code = 1
        try:
            os.write(write, str(backend(connect)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    child_backend = int(os.read(read, 64) or -1)
    os.close(read)
    assert os.waitpid(child, 0)[1] == 0
    assert child_backend not in (-1, parent_backend)
    assert backend(connect) == parent_backend  # the parent's idle connection still works, and is reused
