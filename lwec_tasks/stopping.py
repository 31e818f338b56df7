"""Stopping a run on SIGINT or SIGTERM: nothing is published once the signal has arrived.

:func:`stop_on_signals` (``lwec run``) turns the first SIGINT or SIGTERM into a stop request: it is recorded
in the run's one :class:`~lwec_tasks.run_context.RunContext` (its ``stops``, the only place stop requests live),
the console's log handlers fall silent, and :class:`KeyboardInterrupt` interrupts the command's thread. A flow
records stop requests too (:func:`stops_recorded`), before the handler in force when it started (Prefect's own,
which ends a deployed run's flow run as Crashed, or the command's), or before an exception raised in its place (a
cancelled flow run's abort: :mod:`lwec_tasks.tasks.cancellation`). Work in other threads (a
label write) goes on to its publishing boundary, :func:`publishing`, which refuses to publish once a stop was
requested (:class:`RunStopped`), so the database is left as it was. :func:`stopped_outcome` then says, in one
line, what was and was not published, once a publish under way has ended.

A signal handler's exception is raised wherever the main thread is, which may be a garbage collector's
callback or a ``__del__``: Python cannot raise it there and prints it as "Exception ignored in …" with a
traceback. Once the stop is recorded that interruption is not needed (the publishing boundary refuses), so
within both blocks such a lost interruption is dropped silently (:func:`_lost_interruptions_dropped`); every
other unraisable error is printed as before.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from lwec_tasks.run_context import StopRequests, current_run, run_context_in_force

#: Signals that stop a run, and the exit status of a command they stopped (128 + the signal's number).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Seconds :func:`stopped_outcome` waits for a publish under way to end (its transaction takes well under a
#: second unless it waits for a lock); one still under way then is abandoned: the command ends, and its
#: uncommitted transaction with it.
SETTLE_SECONDS = 2.0


class RunStopped(Exception):
    """A publish refused because the run was asked to stop."""


def _stops() -> StopRequests:
    """The stop requests of the run in force (:func:`lwec_tasks.run_context.current_run`); outside any run an
    empty record of no one's, which nothing stops."""
    context = current_run()
    return context.stops if context is not None else StopRequests()


def stop_requested() -> int | None:
    """The number of the signal that asked the run in force to stop, or None."""
    return _stops().signal


def request_stop(signum: int) -> None:
    """Record a stop request in the run in force (as the first of :data:`STOP_SIGNALS` does); under
    :func:`stop_on_signals` the console's log handlers fall silent."""
    _record_stop(_stops(), signum)


def _record_stop(stops: StopRequests, signum: int) -> None:
    with stops.changed:
        if stops.signal is None:
            stops.signal = signum
        stops.changed.notify_all()
    if stops.quiet:
        _silence_console()


class Publish:
    """One publish (:func:`publishing`): ``cross()`` is its boundary."""

    def __init__(self, what: str, stops: StopRequests):
        self.what, self.crossed, self.stops = what, False, stops

    def cross(self) -> None:
        """Just before the publishing transaction: raise :class:`RunStopped` when a stop was requested, else mark
        the publish under way (a stop arriving now waits for it, :func:`stopped_outcome`)."""
        with self.stops.changed:
            if self.stops.signal is not None:
                raise RunStopped(f"{self.what} not published: the run was stopped "
                                 f"({signal.Signals(self.stops.signal).name})")
            self.crossed = True
            self.stops.under_way.append(self.what)


@contextmanager
def publishing(what: str) -> Iterator[Publish]:
    """A publish of ``what`` (e.g. "labels of run key 'x' in table 'y'") in this block, its boundary crossed by
    the returned object's :meth:`Publish.cross` just before the publishing transaction. Leaving the block
    normally after crossing records ``what`` as published; leaving it by an error does not."""
    stops = _stops()
    publish = Publish(what, stops)
    try:
        yield publish
        done = publish.crossed
    except BaseException:
        done = False
        raise
    finally:
        with stops.changed:
            if publish.crossed:
                stops.under_way.remove(what)
                if done:
                    stops.published.append(what)
            stops.changed.notify_all()


def published_so_far(timeout: float = SETTLE_SECONDS) -> tuple[list[str], list[str]]:
    """(published, still under way): what the run in force published, once the publishes under way have ended
    (waiting at most ``timeout`` seconds)."""
    stops = _stops()
    with stops.changed:
        stops.changed.wait_for(lambda: not stops.under_way, timeout)
        return list(stops.published), list(stops.under_way)


def stopped_outcome(pending: str) -> str:
    """One line: which signal stopped the run, what was published and what was not (``pending``: what the run
    would have published, e.g. "its labels and MLflow run")."""
    signum = stop_requested() or signal.SIGINT
    published, under_way = published_so_far()
    name = signal.Signals(signum).name
    if under_way:
        done = f"published: {'; '.join(published)}; " if published else ""
        return (f"Stopped ({name}); {done}{'; '.join(under_way)} not published (its transaction, still waiting, "
                "ends uncommitted with the command)")
    if published:
        return f"Stopped ({name}); published: {'; '.join(published)}; nothing else of the run was published"
    return f"Stopped ({name}) before anything was published: {pending} not published"


def exit_status() -> int:
    """128 + the number of the signal that stopped the run (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + (stop_requested() or signal.SIGINT)


def _silence_console() -> None:
    """Quiet every console (stream) log handler: a stopped run's last line is its outcome."""
    loggers = [logging.getLogger(), *(logger for logger in logging.Logger.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                handler.setLevel(logging.CRITICAL + 1)


@contextmanager
def _lost_interruptions_dropped(stops: StopRequests) -> Iterator[None]:
    """Within the block, an interruption that could not be raised (a :class:`BaseException` that is not an
    :class:`Exception`, such as :class:`KeyboardInterrupt` or Prefect's ``TerminationSignal``, raised by a signal
    handler inside a garbage collector's callback or a ``__del__``) is dropped once ``stops`` holds a stop
    request; anything else goes to the hook in force before (:data:`sys.unraisablehook`)."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if stops.signal is not None and not isinstance(unraisable.exc_value, Exception) \
                and isinstance(unraisable.exc_value, BaseException):
            return  # the stop is recorded: the run stops at its publishing boundary without this interruption
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block (in the main thread), the first SIGINT or SIGTERM requests a stop of the run in force
    (a new :class:`~lwec_tasks.run_context.RunContext` for the block when none is), silences the console's log
    handlers and raises :class:`KeyboardInterrupt`; later ones are only recorded. The previous handlers come
    back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with run_context_in_force() as context:
        stops = context.stops

        def on_signal(signum, frame) -> None:
            _record_stop(stops, signum)
            if not stops.raised.is_set():
                stops.raised.set()
                raise KeyboardInterrupt

        previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
        stops.quiet = True
        try:
            with _lost_interruptions_dropped(stops):
                yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


@contextmanager
def stops_recorded(instead: Callable[[int], BaseException | None] | None = None) -> Iterator[None]:
    """Within the block (a flow's body), the run context in force, or a new one for the block
    (:func:`~lwec_tasks.run_context.run_context_in_force`: where the flow's publishes look for stop requests);
    in the main thread SIGINT and SIGTERM are recorded in it as stop requests before the handler in force at
    the block's start runs as it would have, unless ``instead(signum)`` (default: none) gives an exception to
    raise in its place (:func:`lwec_tasks.tasks.cancellation.cancel_of_this_flow_run`)."""
    with run_context_in_force() as context:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        stops = context.stops
        previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}

        def record(signum, frame) -> None:
            _record_stop(stops, signum)
            if instead is not None and (interruption := instead(signum)) is not None:
                raise interruption
            handler = previous[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:  # the default: end as the signal would have ended the process
                signal.signal(signum, signal.SIG_DFL)
                signal.raise_signal(signum)

        for signum in STOP_SIGNALS:
            signal.signal(signum, record)
        try:
            with _lost_interruptions_dropped(stops):
                yield
        finally:
            for signum, handler in previous.items():
                if handler is not None:
                    signal.signal(signum, handler)
