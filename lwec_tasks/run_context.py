"""The one context a run gets besides its parameters: where its stop requests are recorded, and how often its
flow sends heartbeats.

A Prefect flow takes only its parameters, which Prefect validates and stores, so what the command that starts
a run tells the flow besides them travels in :class:`RunContext`, one value in one context variable owned by
this module. The command sets it for the block that runs the flow (:func:`running_with`; ``lwec`` does so for
the whole command); the flow and the code it calls read it (:func:`current_run`). A flow run started without
one (a deployed run, a flow called from Python) gets a new one for its body (:func:`run_context_in_force`).
Prefect copies context variables into the threads that run submitted tasks, so a label write running in
another thread sees the same stop requests as the flow's thread and its signal handlers.

A signal handler has to write somewhere: it writes into the :class:`StopRequests` of the context in force
when it was installed, and only there.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


class StopRequests:
    """What one run was asked and did about stopping (read and written through :mod:`lwec_tasks.stopping`).

    ``signal``: the number of the first signal that asked the run to stop, None until one did;
    ``under_way`` / ``published``: what the run is publishing now / has published (descriptions);
    ``quiet``: whether a stop silences the console (under :func:`~lwec_tasks.stopping.stop_on_signals`);
    ``raised``: set once the command's handler has raised its one :class:`KeyboardInterrupt`;
    ``changed``: the condition guarding all of them, notified on every change.
    """

    def __init__(self):
        self.changed = threading.Condition()
        self.signal: int | None = None
        self.under_way: list[str] = []
        self.published: list[str] = []
        self.quiet = False
        self.raised = threading.Event()


@dataclass(frozen=True)
class RunContext:
    """What a run's flow is told besides its parameters.

    ``stops``: where stop requests are recorded (a new, empty record by default); ``heartbeat_seconds``:
    seconds between the heartbeats the flow sends itself (:mod:`lwec_tasks.tasks.heartbeats`), None (the
    default) when Prefect sends them, or none are sent.
    """

    stops: StopRequests = field(default_factory=StopRequests)
    heartbeat_seconds: float | None = None


_CURRENT: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar("lwec_run_context", default=None)


def current_run() -> RunContext | None:
    """The run context in force in this thread's context, None outside any."""
    return _CURRENT.get()


@contextmanager
def running_with(context: RunContext) -> Iterator[RunContext]:
    """``context`` in force within the block (and in the threads that copy this context meanwhile)."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


@contextmanager
def run_context_in_force() -> Iterator[RunContext]:
    """Within the block, the run context in force, or, when there is none, a new :class:`RunContext` put in
    force for the block."""
    context = current_run()
    if context is not None:
        yield context
        return
    with running_with(RunContext()) as context:
        yield context
