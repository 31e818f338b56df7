"""Flow-run heartbeats that stop as soon as the flow's work is done.

Prefect sends a flow run's heartbeats (``prefect.flow-run.heartbeat`` events, by which a lasting server
notices a run whose process died) from a thread that sleeps in one-second steps, and the run waits for
that thread when it ends: 0.5 s on average, up to 1 s, after the work is done. ``lwec run`` against a
lasting Prefect server turns Prefect's thread off (:func:`sent_by_the_flow`) and the flow sends the same
events at the same frequency (:func:`flow_run_heartbeats`) from a thread that stops at once; the frequency
reaches the flow as the ``heartbeat_seconds`` of the run's :class:`~lwec_tasks.run_context.RunContext`.
Deployed runs and flows called from Python keep Prefect's own heartbeats.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace

from lwec_tasks.run_context import RunContext, current_run, running_with

HEARTBEAT_EVENT = "prefect.flow-run.heartbeat"


@contextmanager
def sent_by_the_flow() -> Iterator[None]:
    """Within the block, flow runs started by this thread send their heartbeats through
    :func:`flow_run_heartbeats` instead of Prefect's thread, at Prefect's frequency
    (``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, default 180 s): the run context in force (a new one when none is)
    with that frequency as its ``heartbeat_seconds``. Nothing changes when that setting is unset (no
    heartbeats at all)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

    frequency = get_current_settings().flows.heartbeat_frequency
    if frequency is None:
        yield
        return
    context = replace(current_run() or RunContext(), heartbeat_seconds=frequency)
    with running_with(context), temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


@contextmanager
def flow_run_heartbeats() -> Iterator[None]:
    """In a flow's body: under :func:`sent_by_the_flow`, send the flow run's heartbeat now and then every
    period until the block ends, from a daemon thread that the block's end stops at once. Elsewhere nothing:
    Prefect sends them itself."""
    from prefect.context import FlowRunContext

    run = current_run()
    frequency = run.heartbeat_seconds if run is not None else None
    context = FlowRunContext.get()
    if frequency is None or context is None or context.flow_run is None:
        yield
        return
    resource, related = heartbeat_resources(context.flow_run, context.flow.name)
    stopped = threading.Event()

    def beat() -> None:
        from prefect.events import emit_event

        while True:
            with suppress(Exception):  # a heartbeat that cannot be sent must not stop the run
                emit_event(event=HEARTBEAT_EVENT, resource=resource, related=related)
            if stopped.wait(frequency):
                return

    thread = threading.Thread(target=contextvars.copy_context().run, args=(beat,), name="lwec-heartbeats",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopped.set()
        thread.join()


def heartbeat_resources(flow_run, flow_name: str) -> tuple[dict[str, str], list]:
    """The heartbeat event's resource (the flow run) and related resources (its flow, its deployment if any,
    its tags), as Prefect's own heartbeats name them."""
    import prefect
    from prefect.events.related import RelatedResource, tags_as_related_resources

    resource = {"prefect.resource.id": f"prefect.flow-run.{flow_run.id}",
                "prefect.resource.name": flow_run.name or "", "prefect.version": prefect.__version__}
    related = [RelatedResource.model_validate({"prefect.resource.id": f"prefect.flow.{flow_run.flow_id}",
                                               "prefect.resource.role": "flow", "prefect.resource.name": flow_name})]
    if flow_run.deployment_id:
        related.append(RelatedResource.model_validate({
            "prefect.resource.id": f"prefect.deployment.{flow_run.deployment_id}",
            "prefect.resource.role": "deployment"}))
    return resource, related + tags_as_related_resources(set(flow_run.tags or []))
