"""Stage timings of a flow run, as Prefect's task engine measured them.

The pipeline tasks carry :func:`record_stage_time` as an ``on_completion``
hook; it keeps each finished task run's ``total_run_time`` (the engine's own
measure) per flow run, in this process, for the MLflow metrics and the summary.
"""

from __future__ import annotations

from collections import defaultdict

#: Task name → the stage name used in metrics (``time_<stage>_s``) and the summary.
STAGES = {
    "load-features": "load",
    "generate-base-clusterings": "generate",
    "ensemble-driven-cluster-index": "eci",
    "consensus": "consensus",
    "stable-cluster-ids": "stable_ids",
    "write-labels": "write",
    "build-labelling-model": "model",
}

_SECONDS: dict[str, dict[str, float]] = defaultdict(dict)


def record_stage_time(task, task_run, state) -> None:
    """Prefect ``on_completion`` hook: remember how long a pipeline task ran (retries included)."""
    stage = STAGES.get(task.name)
    if stage is not None and task_run.flow_run_id is not None:
        _SECONDS[str(task_run.flow_run_id)][stage] = task_run.total_run_time.total_seconds()


def stage_timings(flow_run_id: str | None, forget: bool = False) -> dict[str, float]:
    """Seconds each finished pipeline task of flow run ``flow_run_id`` ran, by stage, in pipeline order.

    ``forget`` drops the flow run's entry (call it once the run has reported).
    """
    seconds = _SECONDS.pop(str(flow_run_id), {}) if forget else _SECONDS.get(str(flow_run_id), {})
    return {stage: seconds[stage] for stage in STAGES.values() if stage in seconds}
