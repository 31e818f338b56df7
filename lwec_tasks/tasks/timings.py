"""Stage timings of a flow run, measured around each pipeline task's body and handed back to the flow.

The flow makes one :class:`StageClock` per run and passes it to each pipeline task (``clock=clock``);
:func:`timed_stage` wraps a task's function so that the seconds its body ran (every attempt, retries
included) are added to that clock under the task's stage. The flow then passes :meth:`StageClock.seconds`
to the MLflow task (metrics ``time_<stage>_s``) and the summary as an argument. Nothing is kept anywhere
else, and nothing is logged, unlike a Prefect state hook, which the engine announces in two log lines per task.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable
from typing import TypeVar

#: The pipeline's stages, in pipeline order: the names in the metrics (``time_<stage>_s``) and the summary.
STAGES = ("load", "generate", "eci", "consensus", "stable_ids", "evidence", "write", "model")

Function = TypeVar("Function", bound=Callable)


class StageClock:
    """Seconds one flow run's pipeline tasks ran, by stage; made by the flow, handed to each timed task.

    Prefect passes it to a task as it is (a plain object: not copied, not hashed by the pipeline's tasks,
    which cache nothing). A task submitted to a thread adds to it from that thread, hence the lock.
    """

    def __init__(self):
        self._seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        """Add ``seconds`` to ``stage`` (one of :data:`STAGES`)."""
        with self._lock:
            self._seconds[stage] = self._seconds.get(stage, 0.0) + seconds

    def seconds(self) -> dict[str, float]:
        """Seconds per stage, in pipeline order; only stages that ran are listed (a new dict)."""
        with self._lock:
            return {stage: self._seconds[stage] for stage in STAGES if stage in self._seconds}


def timed_stage(stage: str) -> Callable[[Function], Function]:
    """Decorator for a pipeline task's function (put it under ``@task``): time the body as ``stage``.

    ``stage`` is one of :data:`STAGES`. The wrapped function takes one more keyword argument, ``clock`` (a
    :class:`StageClock`, default None: nothing is recorded), and keeps the function's name, docstring and
    signature (with ``clock`` added), which Prefect reads for the task's parameters.
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {STAGES}")

    def decorate(function: Function) -> Function:
        @functools.wraps(function)
        def timed(*args, clock: StageClock | None = None, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                if clock is not None:
                    clock.add(stage, time.perf_counter() - started)

        timed.__signature__ = _with_clock(inspect.signature(function))
        return timed  # type: ignore[return-value]

    return decorate


def _with_clock(signature: inspect.Signature) -> inspect.Signature:
    """``signature`` with a keyword-only ``clock=None`` (before any ``**kwargs``)."""
    clock = inspect.Parameter("clock", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation="StageClock | None")
    parameters = list(signature.parameters.values())
    at = next((i for i, p in enumerate(parameters) if p.kind is inspect.Parameter.VAR_KEYWORD), len(parameters))
    return signature.replace(parameters=[*parameters[:at], clock, *parameters[at:]])
