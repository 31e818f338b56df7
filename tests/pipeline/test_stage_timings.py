"""Stage times: measured around the task bodies into the flow's clock, handed to the MLflow metrics and the
summary, without log lines of their own."""

from __future__ import annotations

import inspect
import logging
import time

import pytest
from mlflow import MlflowClient
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.consensus import consensus_flow
from helpers.blobs import blobs_run_parameters, write_blobs_table
from lwec_tasks.tasks.timings import STAGES, StageClock, timed_stage


def test_a_flow_run_logs_no_hook_lines_and_reports_every_stage_time(prefect_server, mlflow_store, sqlite_url,
                                                                    caplog):
    write_blobs_table(sqlite_url)
    parameters = blobs_run_parameters(sqlite_url, mlflow_store, "timings")
    with caplog.at_level(logging.INFO, logger="prefect"):
        started = time.perf_counter()
        summary = consensus_flow(**parameters)
        wall = time.perf_counter() - started

    task_lines = [r.getMessage() for r in caplog.records if r.name.startswith("prefect.task_runs")]
    assert any("Finished in state Completed" in line for line in task_lines)  # the task runs' logs were captured
    # Prefect announces a state hook as "Running hook 'NAME' in response to ..." and "Hook 'NAME' finished ..."
    assert [line for line in task_lines if line.startswith(("Running hook ", "Hook '"))] == []

    metrics = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"]).data.metrics
    times = {stage: metrics[f"time_{stage}_s"] for stage in STAGES}
    assert all(seconds > 0 for seconds in times.values()), times
    assert sum(times.values()) <= wall
    assert list(summary["timings"]) == list(STAGES)
    assert summary["timings"] == pytest.approx(times)


def test_retried_attempts_add_up_and_calls_without_a_clock_are_not_recorded(prefect_server):
    attempts = []

    @task(retries=1, retry_delay_seconds=0, cache_policy=NO_CACHE)
    @timed_stage("load")
    def flaky():
        attempts.append(1)
        time.sleep(0.2)
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")
        return len(attempts)

    @flow
    def one_stage() -> tuple[int, dict]:
        clock = StageClock()
        return flaky(clock=clock), clock.seconds()

    result, timings = one_stage()
    assert result == 2
    assert list(timings) == ["load"] and 0.4 <= timings["load"] < 5

    assert flaky.fn() == 3  # no clock: timed but not kept
    clock = StageClock()
    assert flaky.fn(clock=clock) == 4 and list(clock.seconds()) == ["load"]


def test_a_timed_function_takes_a_keyword_only_clock():
    @timed_stage("write")
    def write(table, labels, confidence=None, **options):
        """Writes."""

    parameters = inspect.signature(write).parameters
    assert list(parameters) == ["table", "labels", "confidence", "clock", "options"]
    assert parameters["clock"].kind is inspect.Parameter.KEYWORD_ONLY and parameters["clock"].default is None
    assert write.__name__ == "write" and write.__doc__ == "Writes."


def test_an_unknown_stage_name_is_refused():
    with pytest.raises(ValueError, match="unknown stage 'reading'"):
        timed_stage("reading")
