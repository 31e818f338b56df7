"""The nightly deployment's schedule fires on a real local Prefect server.

``deployments/serve.py --cron "* * * * *"`` registers ``lwec-consensus/nightly``
with a server started on localhost; the server's scheduler must create a flow
run for it on its own, the serving process must run it, and the labels table
it writes is checked against the library's labels.
"""

from __future__ import annotations

from datetime import UTC

import numpy as np
import pytest
from prefect.client.schemas.objects import StateType

from helpers.blobs import BLOBS_TABLE
from helpers.pipeline import client_for, expected_labels, read_labels, stop, wait_for
from helpers.serving import blobs_workspace, forget_served, start_serving
from lwec_tasks.io.identifiers import default_output_table
from lwec_tasks.io.names import parse_table_name

pytestmark = pytest.mark.slow

NIGHTLY = "lwec-consensus/nightly"
EVERY_MINUTE = "* * * * *"
FEATURES = ["f0", "f1", "f2", "f3"]
# The flow's defaults, which the nightly deployment does not override.
ENSEMBLE_SIZE, SEED = 10, 0
# One minute boundary, plus the scheduler's and the worker's polling, plus the flow itself.
SCHEDULED_RUN_TIMEOUT = 150
SCHEDULER_ERROR = "Can't evaluate bulk DML"
FINAL_STATES = [StateType.COMPLETED, StateType.FAILED, StateType.CRASHED, StateType.CANCELLED]


def served_nightly(client):
    """The nightly deployment once this test's serving process has registered it (every minute), else None."""
    deployment = client.read_deployment_by_name(NIGHTLY)
    return deployment if [s.schedule.cron for s in deployment.schedules] == [EVERY_MINUTE] else None


def scheduled_runs(client, deployment_id, state_types=None) -> list:
    """Flow runs of the deployment that the server's scheduler created (not triggered by hand or by API).

    ``state_types``: only runs in these states (the server schedules up to a hundred future runs of an
    every-minute cron, and a page of the listing need not hold the finished ones).
    """
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )

    state = FlowRunFilterState(type=FlowRunFilterStateType(any_=state_types)) if state_types else None
    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
        deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id]), state=state))
    return [run for run in runs if run.auto_scheduled]


def first_finished(runs: list):
    """The first run in a final state (completed, failed, crashed, cancelled), or None."""
    return next((run for run in runs if run.state is not None and run.state.is_final()), None)


def test_nightly_schedule_fires_and_writes_labels(prefect_api, tmp_path):
    workspace = blobs_workspace(tmp_path)
    # The nightly deployment, scheduled every minute.
    server, log = start_serving(prefect_api.env, workspace, tmp_path, "--cron", EVERY_MINUTE)
    try:
        with client_for(prefect_api.url) as client:
            # Another test may have left a nightly deployment with the default schedule on the shared server.
            nightly = wait_for(lambda: served_nightly(client), 120, "the served nightly deployment", server, log)
            # The server's log, not the serving process's, shows why a schedule never fires.
            flow_run = wait_for(lambda: first_finished(scheduled_runs(client, nightly.id, FINAL_STATES)),
                                SCHEDULED_RUN_TIMEOUT,
                                f"a scheduled run of {NIGHTLY}", server, prefect_api.log)
            stop(server)
            # Stopping the serving process may mark a run whose process was still exiting Cancelled after it
            # completed: a run counts when its state history holds Completed.
            completed = {str(run.id) for run in scheduled_runs(client, nightly.id, FINAL_STATES)
                         if any(state.is_completed() for state in client.read_flow_run_states(run.id))}
    finally:
        stop(server)
        forget_served(prefect_api.url, "lwec-served")

    assert flow_run.state.is_completed(), f"{flow_run.state.message}\n{log.read_text()[-4000:]}"
    assert flow_run.auto_scheduled and flow_run.created_by.type == "SCHEDULE"
    assert SCHEDULER_ERROR not in prefect_api.log.read_text()

    # Each night has its own run key, from the scheduled start's UTC date.
    run_key = f"nightly-{flow_run.expected_start_time.astimezone(UTC):%Y-%m-%d}"
    stored = read_labels(workspace.database, default_output_table(parse_table_name(BLOBS_TABLE)), run_key=run_key)
    expected = expected_labels(workspace.frame, FEATURES, k=3, ensemble_size=ENSEMBLE_SIZE, seed=SEED)
    assert sorted(stored["id"]) == sorted(workspace.frame["id"])
    np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])
    # A later minute's run may have replaced the rows before the serving process stopped.
    assert len(set(stored["flow_run_id"])) == 1 and set(stored["flow_run_id"]) <= completed
