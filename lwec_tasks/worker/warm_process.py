"""The ``lwec-warm-process`` Prefect worker: each flow run in its own process, forked from a warm one.

Like Prefect's ``process`` worker, it runs every flow run of its work pool in a process of its own on this
machine, with the worker's environment plus the job's ``env``, in the job's ``working_dir`` (default: a new
temporary directory). Unlike it, that process does not start a new interpreter and import Prefect, the flows,
MLflow and the numeric libraries (seconds per run): it is forked from a process that imported them once, when
the worker started (:mod:`lwec_tasks.worker.warm_start`). A job ``command`` other than Prefect's engine runs as
a plain subprocess, and so does Prefect's engine once lwec's code on disk changed since the warm process
imported it (:mod:`lwec_tasks.worker.code_version`; logged: restart the worker to make runs warm again).

Starting: besides polling every ``PREFECT_WORKER_QUERY_SECONDS``, the worker listens to the API's events and
polls at once when a flow run of its pool is scheduled, so a run started from the UI or API does not wait for
the next poll. Without events (an API that refuses the subscription) it polls as usual.

Stopping: a running flow run cancelled from the UI or API (state Cancelling) is ended with SIGTERM, SIGKILL
after :data:`GRACE_SECONDS`, and marked Cancelled; the worker looks for such runs every
``PREFECT_WORKER_QUERY_SECONDS`` while it has runs. Prefect's own worker-side cancellation of pending runs
(``PREFECT_WORKER_ENABLE_CANCELLATION``) goes through :meth:`WarmProcessWorker.kill_infrastructure`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpx
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.events.clients import get_events_subscriber
from prefect.events.filters import EventAnyResourceFilter, EventFilter, EventNameFilter
from prefect.exceptions import InfrastructureNotFound
from prefect.logging import get_logger
from prefect.settings import PREFECT_WORKER_QUERY_SECONDS
from prefect.states import Cancelled
from prefect.workers.base import BaseJobConfiguration, BaseVariables, BaseWorker, BaseWorkerResult
from pydantic import Field

from lwec_tasks.worker import warm_start
from lwec_tasks.worker.code_version import code_fingerprint, package_directories

if TYPE_CHECKING:
    from uuid import UUID

    from prefect.client.schemas.objects import FlowRun

#: The worker's type, as work pools and ``prefect worker start --type`` name it.
WORKER_TYPE = "lwec-warm-process"
#: The command Prefect fills in when a job names none; it runs in the warm process's fork, as does any
#: ``<python> -m prefect.engine``.
RUNNER_COMMAND = "prefect flow-run execute"
#: Seconds between a SIGTERM to a cancelled run's process and its SIGKILL, unless Prefect passes its own.
GRACE_SECONDS = 30
#: How a flow run's process starts when lwec's code changed since the warm process imported it.
COLD_ENGINE_COMMAND = f"{shlex.quote(sys.executable)} -m prefect.engine"
#: The event of a flow run put in the Scheduled state (created from a deployment, or rescheduled).
SCHEDULED_EVENT = "prefect.flow-run.Scheduled"

logger = get_logger(f"workers.{WORKER_TYPE}")


class WarmJobConfiguration(BaseJobConfiguration):
    """A flow run's process: environment (the worker's plus ``env``), working directory, command."""

    working_dir: Path | None = Field(default=None)

    def prepare_for_flow_run(self, flow_run, deployment=None, flow=None, work_pool=None, worker_name=None,
                             worker_id=None) -> None:
        super().prepare_for_flow_run(flow_run, deployment, flow, work_pool, worker_name, worker_id=worker_id)
        self.env = {**os.environ, **self.env}

    def runs_engine(self) -> bool:
        """Whether the command is Prefect's engine (then the warm process's fork runs it)."""
        command = (self.command or RUNNER_COMMAND).strip()
        return command.startswith(RUNNER_COMMAND) or command.endswith("-m prefect.engine")


class WarmVariables(BaseVariables):
    working_dir: Path | None = Field(
        default=None, title="Working Directory",
        description="Directory the flow run's process starts in. Default: a new temporary directory.")


class WarmWorkerResult(BaseWorkerResult):
    """How a flow run's process ended: its pid and exit code (negative: the signal that ended it)."""


class WarmProcessWorker(BaseWorker[WarmJobConfiguration, WarmVariables, WarmWorkerResult]):
    type = WORKER_TYPE
    job_configuration = WarmJobConfiguration
    job_configuration_variables = WarmVariables
    _description = ("Runs each flow run in its own process on this machine, forked from a process that has "
                    "imported lwec's flows: no interpreter start or imports per run.")
    _display_name = "lwec warm process"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._context = warm_start.warm_context()
        self._running: dict[UUID, int] = {}  # flow run id → pid of its process
        self._cancelling: set[UUID] = set()  # runs being ended because they were cancelled
        self._watch: anyio.abc.TaskGroup | None = None
        self._code: str | None = None  # lwec's code as the warm process imported it (code_fingerprint)

    async def setup(self) -> None:
        await super().setup()
        logger.info("Starting the warm process (imports once, for every flow run)...")
        self._code = await anyio.to_thread.run_sync(code_fingerprint, package_directories())
        await anyio.to_thread.run_sync(warm_start.wait_until_warm, self._context)
        self._watch = anyio.create_task_group()
        await self._watch.__aenter__()
        self._watch.start_soon(self._end_cancelled_runs)
        self._watch.start_soon(self._poll_when_runs_are_scheduled)

    async def teardown(self, *exc_info: Any) -> None:
        if self._watch is not None:
            self._watch.cancel_scope.cancel()
            await self._watch.__aexit__(None, None, None)
            self._watch = None
        await super().teardown(*exc_info)

    async def run(self, flow_run: FlowRun, configuration: WarmJobConfiguration,
                  task_status: anyio.abc.TaskStatus[int] | None = None) -> WarmWorkerResult:
        task_status = task_status or anyio.TASK_STATUS_IGNORED
        with _working_directory(configuration.working_dir) as cwd:
            process = await self._start(flow_run, configuration, cwd)
            self._running[flow_run.id] = process.pid
            try:
                task_status.started(process.pid)
                exit_code = await anyio.to_thread.run_sync(warm_start.wait_for_exit, process, abandon_on_cancel=True)
            finally:
                self._running.pop(flow_run.id, None)
        if flow_run.id in self._cancelling:
            # Before the worker reads the exit code: a run in a final state is not marked Crashed.
            self._cancelling.discard(flow_run.id)
            await self.client.set_flow_run_state(
                flow_run.id, Cancelled(message="Flow run cancelled; its process was ended by the worker."),
                force=True)
        return WarmWorkerResult(status_code=exit_code, identifier=str(process.pid))

    async def _start(self, flow_run: FlowRun, configuration: WarmJobConfiguration, cwd: Path):
        """The flow run's process: forked from the warm process when the job runs Prefect's engine and lwec's
        code is unchanged; else a new process running the job's own command (or the engine)."""
        env = {key: value for key, value in configuration.env.items() if value is not None}
        if not configuration.runs_engine():
            return warm_start.start_command(configuration.command, env, cwd)
        if await self._code_unchanged(flow_run):
            return warm_start.start_flow_run(self._context, env, cwd)
        return warm_start.start_command(COLD_ENGINE_COMMAND, env, cwd)

    async def _code_unchanged(self, flow_run: FlowRun) -> bool:
        """Whether lwec's code on disk is what the warm process imported; if not, the run's log says so."""
        if await anyio.to_thread.run_sync(code_fingerprint, package_directories()) == self._code:
            return True
        self.get_flow_run_logger(flow_run).warning(
            "lwec's code changed since this worker started: the flow run starts a new interpreter, which imports "
            "the new code; restart the worker to start runs from a warm process again")
        return False

    async def kill_infrastructure(self, infrastructure_pid: str, configuration: WarmJobConfiguration,
                                  grace_seconds: int = GRACE_SECONDS) -> None:
        """SIGTERM the flow run's process, then SIGKILL it if it still lives after ``grace_seconds``; :meth:`run`
        then marks the run Cancelled, as when :meth:`_end_cancelled_runs` ends it (Prefect's own cancellation
        calls this; without the mark, a run whose process reported the signal first would end Crashed)."""
        pid = int(infrastructure_pid.rsplit(":", 1)[-1])
        runs = [run_id for run_id, running_pid in self._running.items() if running_pid == pid]
        if not runs:
            raise InfrastructureNotFound(f"process {pid} is not a flow run of this worker")
        self._cancelling.update(runs)
        await anyio.to_thread.run_sync(_terminate, pid, grace_seconds)

    async def _poll_when_runs_are_scheduled(self) -> None:
        """Look for flow runs to start as soon as the API tells of a run of this pool scheduled (an event);
        after the subscription fails, try again after ``PREFECT_WORKER_QUERY_SECONDS`` (polling goes on; the
        first failure is logged as a warning, the next ones for debugging)."""
        warned = False
        while True:
            try:
                pool = f"prefect.work-pool.{self.work_pool.id}"
                scheduled = EventFilter(event=EventNameFilter(name=[SCHEDULED_EVENT]),
                                        any_resource=EventAnyResourceFilter(id=[pool]))
                async with get_events_subscriber(filter=scheduled) as subscriber:
                    async for _ in subscriber:
                        await self.get_and_submit_flow_runs()
            except Exception as exc:  # noqa: BLE001 - events are a shortcut: polling still starts every run
                log = logger.debug if warned else logger.warning
                log("Not hearing of scheduled flow runs (%s: %s); they start at the next poll (every %s s)",
                    type(exc).__name__, exc, PREFECT_WORKER_QUERY_SECONDS.value())
                warned = True
            await anyio.sleep(PREFECT_WORKER_QUERY_SECONDS.value())

    async def _end_cancelled_runs(self) -> None:
        """Every ``PREFECT_WORKER_QUERY_SECONDS``: end the process of each of this worker's runs in state
        Cancelling (SIGTERM, then SIGKILL after :data:`GRACE_SECONDS`); :meth:`run` marks it Cancelled."""
        while True:
            await anyio.sleep(PREFECT_WORKER_QUERY_SECONDS.value())
            running = {run_id: pid for run_id, pid in self._running.items() if run_id not in self._cancelling}
            if not running:
                continue
            try:
                cancelling = await self.client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    id=FlowRunFilterId(any_=list(running)),
                    state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.CANCELLING]))))
            except httpx.HTTPError as exc:  # the API is away for a moment: look again next time
                logger.warning("Could not look for cancelled flow runs: %s", exc)
                continue
            for flow_run in cancelling:
                self._cancelling.add(flow_run.id)
                self.get_flow_run_logger(flow_run).info("Cancelled: ending its process %s", running[flow_run.id])
                self._watch.start_soon(anyio.to_thread.run_sync, _terminate, running[flow_run.id], GRACE_SECONDS)


def _terminate(pid: int, grace_seconds: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _working_directory(given: Path | None):
    if given is not None:
        yield Path(given)
        return
    with tempfile.TemporaryDirectory(prefix="lwec-flow-run-") as directory:
        yield Path(directory)
