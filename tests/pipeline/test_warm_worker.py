"""The ``lwec-warm-process`` worker against a real Prefect server, real processes and a second database session.

``deployments/serve.py`` registers the deployments on a work pool of that type and runs the worker; flow runs
are created through the API call of the UI's "Run" button, and cancelled through that of its "Cancel" button.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId
from prefect.states import Cancelling

from helpers.pipeline import (
    PROJECT_ROOT,
    blobs_frame,
    client_for,
    drop_labels_table,
    expected_labels,
    postgres_url_or_skip,
    read_labels,
    start,
    stop,
    table_exists,
    unique,
    wait_for,
    write_frame,
)
from helpers.serving import forget_served
from lwec_tasks.worker import WORKER_TYPE, WarmProcessWorker

pytestmark = pytest.mark.slow

FEATURES = ["f0", "f1", "f2", "f3"]
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
ON_DEMAND = "lwec-consensus/on-demand"
ASSIGN = "lwec-assign/assign"


def serve(api_env: dict, database: str, table: str, pool: str, directory: Path, *extra_args: str):
    """``deployments/serve.py`` for ``table`` (k = 3, label column ``target``) on work pool ``pool``, MLflow in
    ``directory``, then ``extra_args``; returns (process, log)."""
    log = directory / "serve.log"
    # INFO: the flow run's log lines reach the API (the test environment may set the level higher).
    env = {**api_env, "MLFLOW_TRACKING_URI": f"sqlite:///{directory / 'mlflow.db'}", "PREFECT_LOGGING_LEVEL": "INFO"}
    args = [sys.executable, str(PROJECT_ROOT / "deployments" / "serve.py"), "--database-url", database,
            "--table", table, "--n-clusters", "3", "--label-column", "target", "--work-pool", pool, *extra_args]
    return start(args, env, log, directory), log


def served_on(client, pool: str):
    """The on-demand deployment once it is registered on ``pool``, else None."""
    deployment = client.read_deployment_by_name(ON_DEMAND)
    return deployment if deployment.work_pool_name == pool else None


def run_parameters(table: str, output_table: str) -> dict:
    return {"table": table, "n_clusters": 3, "label_column": "target", "ensemble_size": 6, "seed": 3,
            "experiment": unique("warm"), "output_table": output_table}


def final_state(client, flow_run_id, timeout: float = 240, process=None, log=None):
    return wait_for(lambda: (run := client.read_flow_run(flow_run_id)).state.type.value in FINAL and run,
                    timeout, f"flow run {flow_run_id} to end", process, log)


def is_running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie has ended)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] not in {"Z", "X"}


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def test_prefect_knows_the_worker_type_from_the_entry_point(prefect_api, tmp_path):
    """``prefect work-pool create --type lwec-warm-process`` works once lwec is installed, with our template."""
    import subprocess

    pool = unique("warm_pool")
    created = subprocess.run([sys.executable, "-m", "prefect", "work-pool", "create", pool, "--type", WORKER_TYPE],
                             env=prefect_api.env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stdout[-2000:] + created.stderr[-2000:]
    with client_for(prefect_api.url) as client:
        work_pool = client.read_work_pool(pool)
    assert work_pool.type == WORKER_TYPE
    assert work_pool.base_job_template == WarmProcessWorker.get_default_base_job_template()


def test_a_flow_run_forked_from_the_warm_process_reports_everything(prefect_api, tmp_path):
    """Labels as the library computes them, and every task run and the last log line of the flow run reach the
    API: the forked process drains Prefect's log and event workers before it ends. The worker polls only every
    ten minutes here: the run starts at once because the worker hears of it (the API's events)."""
    database = f"sqlite:///{tmp_path / 'features.db'}"
    frame = blobs_frame()
    write_frame(database, "blobs", frame)
    pool = unique("warm")
    server, log = serve(prefect_api.env, database, "blobs", pool, tmp_path, "--poll-seconds", "600")
    try:
        with client_for(prefect_api.url) as client:
            deployment = wait_for(lambda: served_on(client, pool), 120, "the served deployment", server, log)
            # The worker's first poll (at its start) is over: only the run's event can start it from now on.
            wait_for(lambda: "started!" in log.read_text(), 120, "the worker's start", server, log)
            time.sleep(2)
            flow_run = client.create_flow_run_from_deployment(deployment.id,
                                                              parameters=run_parameters("blobs", "warm_labels"))
            final = final_state(client, flow_run.id, process=server, log=log)
            assert final.state.type.value == "COMPLETED", final.state.message
            assert (final.start_time - final.created).total_seconds() < 60
            task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])))
            # The logs are sent by a background worker: give the API a moment to store the last batch.
            logs = wait_for(lambda: [entry.message for entry in client.read_logs(LogFilter(
                flow_run_id=LogFilterFlowRunId(any_=[flow_run.id])))
                if "Finished in state Completed" in entry.message and entry.task_run_id is None], 30,
                "the flow run's last log line")
        assert {run.name.rsplit("-", 1)[0] for run in task_runs} >= {"load-features", "consensus", "write-labels"}
        assert {run.state.type.value for run in task_runs} == {"COMPLETED"}
        assert logs
        stored = read_labels(database, "warm_labels")
        expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
        np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])
        assert set(stored["flow_run_id"]) == {str(flow_run.id)}
        assert not is_running(int(final.infrastructure_pid))
    finally:
        stop(server)
        forget_served(prefect_api.url, pool)


def test_cancelling_a_run_that_waits_on_a_lock_ends_its_process(prefect_api, tmp_path):
    """A second session holds the features table locked, so the run waits in its read; the UI's Cancel ends
    its process and the run is Cancelled, never Crashed on the way, with nothing written; the worker then runs
    the next one. An assign run of that run's model, cancelled the same way, is not Crashed either."""
    url = postgres_url_or_skip()
    table, output = unique("warm_cancel"), unique("warm_cancel_labels")
    assigned = unique("warm_cancel_assigned")
    frame = blobs_frame()
    write_frame(url, table, frame)
    engine = sa.create_engine(url)
    pool = unique("warm")
    server, log = serve(prefect_api.env, url, table, pool, tmp_path)
    try:
        with client_for(prefect_api.url) as client:
            deployment = wait_for(lambda: served_on(client, pool), 120, "the served deployment", server, log)
            parameters = run_parameters(table, output)
            final, pid, seconds = cancel_while_locked(client, engine, table, deployment, parameters, server, log)
            assert final.state.type.value == "CANCELLED", final.state.message
            # Told of the cancel, the run's engine does not report the signal as a crash on the way.
            passed = [state.type.value for state in client.read_flow_run_states(final.id)]
            assert "CRASHED" not in passed, passed
            assert not is_running(pid), f"the cancelled run's process {pid} lives on"
            assert not table_exists(url, output)
            print(f"cancelled run ended in {seconds:.1f} s")

            # The worker goes on with the next run.
            again = client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
            assert final_state(client, again.id, process=server, log=log).state.type.value == "COMPLETED"

            model_uri = f"runs:/{only_mlflow_run(tmp_path, parameters['experiment'])}/model"
            assign = client.read_deployment_by_name(ASSIGN)
            final, pid, _ = cancel_while_locked(client, engine, table, assign, {
                "table": table, "model_uri": model_uri, "output_table": assigned}, server, log)
            passed = [state.type.value for state in client.read_flow_run_states(final.id)]
            assert final.state.type.value == "CANCELLED" and "CRASHED" not in passed, passed
            assert not is_running(pid) and not table_exists(url, assigned)
        stored = read_labels(url, output)
        expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
        np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])
    finally:
        stop(server)
        forget_served(prefect_api.url, pool)
        with engine.begin() as connection:
            drop_labels_table(connection, output)
            drop_labels_table(connection, assigned)
            connection.execute(sa.text(f"DROP TABLE IF EXISTS {engine.dialect.identifier_preparer.quote(table)}"))
        engine.dispose()


def cancel_while_locked(client, engine: sa.Engine, table: str, deployment, parameters: dict, server, log):
    """A flow run of ``deployment`` with ``parameters`` started while another session holds ``table`` locked,
    cancelled (as the UI's Cancel does) once it waits on the lock: (its final flow run, its process id, seconds
    from the cancel to its end)."""
    with engine.connect() as holder:
        quoted = engine.dialect.identifier_preparer.quote(table)
        holder.execute(sa.text(f"LOCK TABLE {quoted} IN ACCESS EXCLUSIVE MODE"))
        flow_run = client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
        running = wait_for(lambda: (run := client.read_flow_run(flow_run.id)).state.type.value == "RUNNING"
                           and run.infrastructure_pid and run, 120, "the run to start", server, log)
        wait_for(lambda: waiting_on_lock(engine, table), 60, "the run's read to wait on the lock")
        cancelled_at = time.monotonic()
        client.set_flow_run_state(flow_run.id, Cancelling(message="cancelled in the UI"))
        final = final_state(client, flow_run.id, timeout=90, process=server, log=log)
        seconds = time.monotonic() - cancelled_at
        holder.rollback()
    return final, int(running.infrastructure_pid), seconds


def only_mlflow_run(directory: Path, experiment: str) -> str:
    """The id of the one MLflow run of ``experiment`` in ``directory``'s store (serve()'s)."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{directory / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return run.info.run_id


def waiting_on_lock(engine: sa.Engine, table: str) -> bool:
    """Whether some session waits for a lock on ``table``."""
    with engine.connect() as connection:
        return bool(connection.execute(sa.text(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE NOT l.granted AND c.relname = :table"), {"table": table}).scalar_one())


def test_killing_the_worker_leaves_no_warm_process(prefect_api, tmp_path):
    """``kill -9`` of serve.py: the warm process it started sees its parent gone and ends."""
    database = f"sqlite:///{tmp_path / 'features.db'}"
    write_frame(database, "blobs", blobs_frame())
    pool = unique("warm")
    server, log = serve(prefect_api.env, database, "blobs", pool, tmp_path)
    try:
        with client_for(prefect_api.url) as client:
            wait_for(lambda: served_on(client, pool), 120, "the served deployment", server, log)
        # The worker polls only once the warm process has imported everything: then it is one of its children.
        warm = wait_for(lambda: [pid for pid in children(server.pid)
                                 if "forkserver" in Path(f"/proc/{pid}/cmdline").read_text()], 120,
                        "the warm process", server, log)
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        wait_for(lambda: not any(is_running(pid) for pid in warm), 30, "the warm process to end")
    finally:
        if server.poll() is None:
            stop(server)
        forget_served(prefect_api.url, pool)


def test_a_run_after_lwecs_code_changed_starts_a_new_interpreter(prefect_api, tmp_path):
    """A file of lwec touched after the worker started (an upgrade, a checkout): the next run must not mix the
    warm process's old modules with new files. It starts a new interpreter, says so, and labels as usual."""
    import flows

    database = f"sqlite:///{tmp_path / 'features.db'}"
    frame = blobs_frame()
    write_frame(database, "blobs", frame)
    pool = unique("warm")
    server, log = serve(prefect_api.env, database, "blobs", pool, tmp_path)
    touched = Path(flows.__file__)
    try:
        with client_for(prefect_api.url) as client:
            deployment = wait_for(lambda: served_on(client, pool), 120, "the served deployment", server, log)
            wait_for(lambda: "started!" in log.read_text(), 120, "the worker's start", server, log)
            stat = touched.stat()
            os.utime(touched, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
            try:
                flow_run = client.create_flow_run_from_deployment(deployment.id,
                                                                  parameters=run_parameters("blobs", "cold_labels"))
                final = final_state(client, flow_run.id, process=server, log=log)
            finally:
                os.utime(touched, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            assert final.state.type.value == "COMPLETED", final.state.message
            said = wait_for(lambda: [entry for entry in client.read_logs(LogFilter(
                flow_run_id=LogFilterFlowRunId(any_=[flow_run.id])))
                if "lwec's code changed since this worker started" in entry.message], 30, "the worker's warning")
        assert said
        stored = read_labels(database, "cold_labels")
        expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
        np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])
    finally:
        stop(server)
        forget_served(prefect_api.url, pool)


def test_prefects_own_cancellation_ends_the_process_and_has_the_run_marked_cancelled():
    """Prefect's worker cancels through ``kill_infrastructure``: the run's process ends and the run is among those
    :meth:`~WarmProcessWorker.run` marks Cancelled (not left to end Crashed by the signal); a process that is not
    one of the worker's runs is refused."""
    import subprocess
    import uuid

    import anyio
    from prefect.exceptions import InfrastructureNotFound

    worker = WarmProcessWorker(work_pool_name=unique("warm_kill"))
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    run_id = uuid.uuid4()
    worker._running[run_id] = process.pid
    try:
        with pytest.raises(InfrastructureNotFound, match=str(process.pid + 1)):
            anyio.run(lambda: worker.kill_infrastructure(str(process.pid + 1), None, grace_seconds=1))
        assert run_id not in worker._cancelling
        anyio.run(lambda: worker.kill_infrastructure(f"host:{process.pid}", None, grace_seconds=5))
        assert process.wait(timeout=10) == -signal.SIGTERM
        assert run_id in worker._cancelling
    finally:
        process.kill()
        process.wait()
