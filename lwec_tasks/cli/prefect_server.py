"""The temporary Prefect server of a command, stopped before the command prints its outcome.

Without ``PREFECT_API_URL``, Prefect starts a temporary API server on the first
flow run of a process and stops it at exit, logging "Stopping temporary server
on ..." after everything the command printed. :func:`stopped_when_done` stops it
(after sending Prefect's pending logs and events to it) as soon as the flow is
done, so the command's own last words, its summary or its error, come last.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress

#: Seconds to wait for Prefect's pending logs and events to reach the server.
DRAIN_SECONDS = 5


@contextmanager
def stopped_when_done() -> Iterator[None]:
    """Run a flow in this block; on leaving it, stop the temporary server the block started.

    A server that was already running (another caller's, e.g. a test harness) is left alone.
    """
    was_running = _temporary_server_running()
    try:
        yield
    finally:
        if not was_running and _temporary_server_running():
            stop_temporary_server()


def stop_temporary_server() -> None:
    """Send Prefect's pending logs and events, then stop this process's temporary server (if it runs)."""
    if not _temporary_server_running():
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.server.api.server import SubprocessASGIServer

    for worker in (APILogWorker, EventsWorker):
        with suppress(Exception):  # an undelivered log line must not hide the outcome
            worker.drain_all(timeout=DRAIN_SECONDS)
    SubprocessASGIServer().stop()


def _temporary_server_running() -> bool:
    """Whether Prefect's temporary server (the one without a fixed port) runs in this process."""
    module = sys.modules.get("prefect.server.api.server")
    return module is not None and bool(module.SubprocessASGIServer().running)
