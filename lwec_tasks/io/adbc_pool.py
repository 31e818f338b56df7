"""Idle ADBC connections to PostgreSQL kept for reuse within a process.

Opening an ADBC PostgreSQL connection costs about 0.15 s (the driver loads the server's type catalog), and
every partition read and label write opens one: 40 connections for a 10M-row run. :func:`pooled_connection`
hands out an idle connection to the same URI when there is one, and takes it back afterwards with its
transaction rolled back (a writer commits before). A connection whose block raised is closed, never reused;
one idle for longer than :data:`MAX_IDLE_SECONDS` is closed instead of reused. As with SQLAlchemy's pool,
at most :data:`MAX_IDLE` idle connections per URI stay open until the process exits.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

#: Idle connections kept per URI (about one per worker thread).
MAX_IDLE = 4
#: An idle connection older than this is closed rather than reused (the server may have dropped it).
MAX_IDLE_SECONDS = 60.0

_idle: dict[str, list[tuple[float, Any]]] = {}
_lock = threading.Lock()


@contextmanager
def pooled_connection(uri: str, connect: Callable[[str], Any]) -> Iterator[Any]:
    """A connection to ``uri``: an idle one, or ``connect(uri)``; given back when the block ends normally."""
    connection = _take(uri) or connect(uri)
    try:
        yield connection
    except BaseException:
        with suppress(Exception):
            connection.close()
        raise
    try:
        connection.rollback()  # ends a read's transaction; nothing to undo after a commit
    except Exception:  # noqa: BLE001 - a broken connection is not kept
        with suppress(Exception):
            connection.close()
        return
    with _lock:
        idle = _idle.setdefault(uri, [])
        if len(idle) < MAX_IDLE:
            idle.append((time.monotonic(), connection))
            return
    connection.close()


def _take(uri: str):
    """An idle connection to ``uri`` young enough to reuse, or None; older ones are closed."""
    while True:
        with _lock:
            idle = _idle.get(uri)
            if not idle:
                return None
            since, connection = idle.pop()
        if time.monotonic() - since <= MAX_IDLE_SECONDS:
            return connection
        with suppress(Exception):
            connection.close()


@atexit.register
def close_idle_connections() -> None:
    """Close every idle connection (at exit; tests call it too)."""
    with _lock:
        connections = [connection for idle in _idle.values() for _, connection in idle]
        _idle.clear()
    for connection in connections:
        with suppress(Exception):
            connection.close()


def _forget_inherited_connections() -> None:
    # A forked child shares its parent's sockets: it must neither use the connections it inherited nor close
    # them, which would end the parent's sessions (a connection closes itself when it is garbage-collected).
    global _idle, _lock
    _inherited.append(_idle)
    _idle, _lock = {}, threading.Lock()


#: In a forked child, the idle connections of its parent, kept unused and unclosed.
_inherited: list = []
os.register_at_fork(after_in_child=_forget_inherited_connections)
