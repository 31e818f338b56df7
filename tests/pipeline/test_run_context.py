"""The run context (:mod:`lwec_tasks.run_context`): stop requests recorded in one run's context reach its
publishes, in its threads too, and no other run's."""

from __future__ import annotations

import contextvars
import signal
import threading

import pytest

from lwec_tasks.run_context import RunContext, current_run, run_context_in_force, running_with
from lwec_tasks.stopping import RunStopped, exit_status, publishing, request_stop, stop_requested


def test_a_stop_requested_in_a_run_refuses_its_publishes_in_a_thread_that_copies_its_context():
    refused = []

    def publish() -> None:
        with pytest.raises(RunStopped, match="labels not published: the run was stopped \\(SIGTERM\\)"), \
                publishing("labels") as boundary:
            boundary.cross()
        refused.append(True)

    with running_with(RunContext()) as context:
        request_stop(signal.SIGTERM)
        thread = threading.Thread(target=contextvars.copy_context().run, args=(publish,))
        thread.start()
        thread.join()
        assert stop_requested() == signal.SIGTERM and exit_status() == 143
    assert refused == [True] and context.stops.signal == signal.SIGTERM


def test_another_run_and_code_outside_any_run_are_not_stopped():
    with running_with(RunContext()):
        request_stop(signal.SIGINT)
    assert current_run() is None and stop_requested() is None
    with running_with(RunContext()) as other:
        with publishing("labels") as boundary:
            boundary.cross()
        assert other.stops.published == ["labels"] and stop_requested() is None


def test_a_flow_without_a_run_context_gets_one_for_its_block_and_keeps_one_it_is_given():
    with run_context_in_force() as made:
        assert current_run() is made
    assert current_run() is None
    given = RunContext(heartbeat_seconds=30)
    with running_with(given), run_context_in_force() as kept:
        assert kept is given
    with pytest.raises(AttributeError):
        given.heartbeat_seconds = 1  # frozen: a context is replaced, never changed


INTERRUPTED_IN_DEL = """
import os, signal
from lwec_tasks.stopping import {block}, stop_requested

class SignalledWhileCollected:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10_000):  # the handler runs here, inside __del__, where its exception cannot be raised
            pass

class FailsWhileCollected:
    def __del__(self):
        raise ValueError("an error of its own")

{prelude}
with {block}():
    SignalledWhileCollected()
    FailsWhileCollected()
    print("went on; stop requested by", stop_requested())
"""


@pytest.mark.parametrize("block, prelude", [
    ("stop_on_signals", ""),
    # a flow's block before a handler that raises, as Prefect's SIGTERM handler does
    ("stops_recorded",
     "def raising(signum, frame):\n    raise KeyboardInterrupt\nsignal.signal(signal.SIGTERM, raising)"),
])
def test_an_interruption_lost_inside_a_destructor_after_a_stop_prints_nothing_and_other_errors_still_do(block, prelude):
    import subprocess
    import sys

    script = INTERRUPTED_IN_DEL.format(block=block, prelude=prelude)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"went on; stop requested by {int(signal.SIGTERM)}"
    assert "KeyboardInterrupt" not in done.stderr and "SignalledWhileCollected" not in done.stderr, done.stderr
    assert done.stderr.count("ValueError: an error of its own") == 1  # not every unraisable error is dropped


class CancelledHere(Exception):
    pass


@pytest.mark.parametrize("cancel", [True, False])
def test_a_flows_block_raises_what_instead_gives_and_else_runs_the_handler_before_it(cancel):
    """``stops_recorded(instead=...)``: the stop is recorded either way; the exception ``instead`` gives is
    raised in place of the handler in force before the block (a cancelled flow run's abort), and without one
    that handler runs (Prefect's crash)."""
    from lwec_tasks.stopping import stops_recorded

    asked, handled = [], []

    def handler(signum, frame) -> None:
        handled.append(signum)
        raise KeyboardInterrupt

    def instead(signum):
        asked.append(signum)
        return CancelledHere() if cancel else None

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with running_with(RunContext()) as context, pytest.raises(CancelledHere if cancel else KeyboardInterrupt), \
                stops_recorded(instead=instead):
            signal.raise_signal(signal.SIGTERM)
        assert context.stops.signal == signal.SIGTERM and asked == [signal.SIGTERM]
        assert handled == ([] if cancel else [signal.SIGTERM])
        assert signal.getsignal(signal.SIGTERM) is handler  # the block put it back
    finally:
        signal.signal(signal.SIGTERM, previous)
