"""Stage timings of a flow run, measured around each pipeline task's body.

:func:`timed_stage` wraps a task's function: it adds the seconds the body ran (every attempt, retries
included) to its flow run's entry, in this process, for the MLflow metrics (``time_<stage>_s``) and the
summary. It logs nothing, unlike a Prefect state hook, which the engine announces in two log lines per task.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Callable
from typing import TypeVar

#: The pipeline's stages, in pipeline order: the names in the metrics (``time_<stage>_s``) and the summary.
STAGES = ("load", "generate", "eci", "consensus", "stable_ids", "evidence", "write", "model")

_SECONDS: dict[str, dict[str, float]] = defaultdict(dict)

Function = TypeVar("Function", bound=Callable)


def timed_stage(stage: str) -> Callable[[Function], Function]:
    """Decorator for a pipeline task's function (put it under ``@task``): time the body as ``stage``.

    ``stage`` is one of :data:`STAGES`. Outside a flow run nothing is recorded. The wrapper keeps the
    function's name, docstring and signature, which Prefect reads for the task's parameters.
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {STAGES}")

    def decorate(function: Function) -> Function:
        @functools.wraps(function)
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                add_stage_seconds(stage, time.perf_counter() - started)

        return timed  # type: ignore[return-value]

    return decorate


def add_stage_seconds(stage: str, seconds: float) -> None:
    """Add ``seconds`` to ``stage`` of the flow run of the task running now (outside a task run: nothing)."""
    from prefect.context import TaskRunContext

    context = TaskRunContext.get()
    flow_run_id = context.task_run.flow_run_id if context is not None else None
    if flow_run_id is not None:
        entry = _SECONDS[str(flow_run_id)]
        entry[stage] = entry.get(stage, 0.0) + seconds


def stage_timings(flow_run_id: str | None, forget: bool = False) -> dict[str, float]:
    """Seconds the pipeline tasks of flow run ``flow_run_id`` ran, by stage, in pipeline order.

    Only stages that ran are listed. ``forget`` drops the flow run's entry (call it once the run has reported).
    """
    seconds = _SECONDS.pop(str(flow_run_id), {}) if forget else _SECONDS.get(str(flow_run_id), {})
    return {stage: seconds[stage] for stage in STAGES if stage in seconds}
