"""Flow-run heartbeats sent by the flow under ``lwec run`` (:mod:`lwec_tasks.tasks.heartbeats`): the events
Prefect's own thread would send, from a thread that stops when the flow's work ends."""

from __future__ import annotations

import threading
import time

import pytest
from prefect import flow, tags

from lwec_tasks.run_context import RunContext, running_with
from lwec_tasks.tasks.heartbeats import HEARTBEAT_EVENT, flow_run_heartbeats, sent_by_the_flow


@pytest.fixture
def sent(monkeypatch):
    """Every event emitted, as (sender, event, resource, related): "prefect" for the flow engine's own
    heartbeat thread, "lwec" for :func:`flow_run_heartbeats`."""
    import prefect.events
    import prefect.flow_engine

    events = []

    def recorder(sender):
        def emit_event(event, resource, related=None, **_):
            events.append((sender, event, dict(resource), [dict(r) for r in related or []]))

        return emit_event

    monkeypatch.setattr(prefect.flow_engine, "emit_event", recorder("prefect"))
    monkeypatch.setattr(prefect.events, "emit_event", recorder("lwec"))
    return events


@flow(name="lwec-heartbeat-probe")
def probe(pause: float = 0.0) -> str:
    from prefect.runtime import flow_run

    with flow_run_heartbeats():
        time.sleep(pause)
    return flow_run.id


def heartbeat_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name == "lwec-heartbeats" and thread.is_alive()]


def test_under_lwec_run_the_flow_sends_the_heartbeat_prefect_would_and_stops_with_the_work(prefect_server, sent):
    with tags("nightly"):
        prefects_id = probe()  # Prefect's own heartbeat, for comparison
        with sent_by_the_flow():
            ours_id = probe()
    assert heartbeat_threads() == []

    by_sender = {sender: [e for e in sent if e[0] == sender and e[1] == HEARTBEAT_EVENT]
                 for sender in ("prefect", "lwec")}
    assert len(by_sender["prefect"]) == 1 and len(by_sender["lwec"]) == 1  # one each: the runs were short
    _, _, prefects, prefects_related = by_sender["prefect"][0]
    _, _, ours, ours_related = by_sender["lwec"][0]
    assert prefects["prefect.resource.id"] == f"prefect.flow-run.{prefects_id}"
    assert ours["prefect.resource.id"] == f"prefect.flow-run.{ours_id}"

    def without_run(resource):
        return {key: value for key, value in resource.items() if key not in ("prefect.resource.id",
                                                                             "prefect.resource.name")}

    assert without_run(ours) == without_run(prefects)
    assert ours_related == prefects_related  # the same flow, the same tag


def test_heartbeats_repeat_at_the_period_until_the_flow_ends(prefect_server, sent):
    with running_with(RunContext(heartbeat_seconds=0.1)):  # the setting itself is at least 30 s
        probe(pause=0.55)
    beats = [e for e in sent if e[0] == "lwec" and e[1] == HEARTBEAT_EVENT]
    assert 4 <= len(beats) <= 8  # at 0, 0.1, ..., 0.5 s
    assert heartbeat_threads() == []


def test_outside_lwec_run_and_outside_a_flow_nothing_is_sent(sent):
    with flow_run_heartbeats():  # no flow run
        pass
    assert sent == [] and heartbeat_threads() == []


def test_without_a_heartbeat_frequency_none_are_sent(prefect_server, sent):
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}), sent_by_the_flow():
        probe()
    assert [e for e in sent if e[1] == HEARTBEAT_EVENT] == []
