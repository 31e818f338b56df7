"""Telling a cancelled flow run's SIGTERM from a crash (:mod:`lwec_tasks.tasks.cancellation`); the whole path, a
served run cancelled from the UI, is in ``test_warm_worker.py``."""

from __future__ import annotations

import signal
import socket
import time
import uuid

from lwec_tasks.tasks import cancellation


def test_outside_a_flow_run_and_for_sigint_nothing_replaces_the_handler():
    assert cancellation.cancel_of_this_flow_run(signal.SIGTERM) is None
    assert cancellation.cancel_of_this_flow_run(signal.SIGINT) is None


def test_an_api_that_does_not_answer_is_asked_once_within_the_bound(monkeypatch):
    """A SIGTERM waits for the API's answer: a silent API (a port that accepts and never replies) costs at most
    the bound, not the client's retries, and the signal is then taken as it would have been."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.setattr(cancellation, "STATE_TIMEOUT_SECONDS", 0.5)
        with temporary_settings({PREFECT_API_URL: f"http://127.0.0.1:{silent.getsockname()[1]}/api"}):
            started = time.monotonic()
            assert cancellation._state_of(uuid.uuid4()) is None
            assert time.monotonic() - started < 3
