"""The temporary Prefect server of a command: started early, in the background, and stopped before the command
prints its outcome.

Without a Prefect API URL, Prefect starts a temporary API server (a ``uvicorn`` process) on the first flow run
of a process, waits seconds for it, and stops it at exit, logging "Stopping temporary server on ..." after
everything the command printed. Here:

- :func:`start_temporary_server` starts the same server process as soon as the request is checked, so it boots
  while the command imports the flow (Prefect's own start would only begin once the flow is called);
  :meth:`TemporaryServer.hand_to_prefect` waits for it to answer and makes it the process's Prefect API, and
  :meth:`TemporaryServer.stop` stops it (after sending Prefect's pending logs and events to it) as soon as the
  flow is done, so the command's own last words, its summary or its error, come last;
- :func:`stopped_when_done` does the same for a temporary server Prefect started itself;
- :meth:`TemporaryServer.serving` runs a flow without heartbeats: they tell a lasting server that a run's
  process died, and this server dies with the process (Prefect's engine also waits up to a second at the end
  of a run for its heartbeat thread, which sleeps in one-second steps).
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress

#: Seconds to wait for Prefect's pending logs and events to reach the server.
DRAIN_SECONDS = 5
#: Exit status of uvicorn when its port is taken; the server is then started again on another port.
PORT_IN_USE = 3
#: Environment of the server process, as Prefect sets it for its temporary server (no UI, ephemeral mode).
SERVER_ENVIRONMENT = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


class TemporaryServer:
    """A Prefect API server process on ``127.0.0.1:port``, started for this command by
    :func:`start_temporary_server`."""

    def __init__(self, environment: dict[str, str], startup_timeout: float):
        self.environment = environment
        self.startup_timeout = startup_timeout
        self.port = _free_port()
        self.process = self._spawn()
        self.handed = False
        atexit.register(self._stop_process)  # whatever way the command ends

    @property
    def api_url(self) -> str:
        return f"{self.address}/api"

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self) -> subprocess.Popen:
        from importlib.util import find_spec

        # The command Prefect's SubprocessASGIServer runs for its temporary server.
        app_dir = os.path.dirname(find_spec("prefect").submodule_search_locations[0])
        return subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--app-dir", app_dir, "--factory", "prefect.server.api.server:create_app",
             "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
            env=self.environment)

    def wait_until_ready(self) -> None:
        """Return once the server answers its health check; raise RuntimeError when it exits or the startup
        timeout passes first."""
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            status = self.process.poll()
            if status == PORT_IN_USE:
                self.port = _free_port()
                self.process = self._spawn()
            elif status is not None:
                raise RuntimeError(f"the temporary Prefect server exited with status {status} before it answered")
            elif _answers(f"{self.api_url}/health"):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the temporary Prefect server did not answer within {self.startup_timeout:g} s "
                           "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)")

    def hand_to_prefect(self) -> None:
        """Wait until the server answers, then make it this process's Prefect API (``PREFECT_API_URL``).

        It serves no UI, so no UI address is set (``PREFECT_UI_URL`` empty: no links to a page that will be
        gone). :meth:`stop` gives the settings back. Calling it again does nothing.
        """
        if self.handed:
            return
        from prefect.context import refresh_global_settings_context

        self.wait_until_ready()
        from prefect.logging import get_logger

        get_logger().info("Temporary server on %s is ready", self.address)
        self._replaced = {name: os.environ.get(name) for name in _API_SETTINGS}
        os.environ.update({"PREFECT_API_URL": self.api_url, "PREFECT_UI_URL": ""})
        refresh_global_settings_context()
        self.handed = True

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Hand the server to Prefect (:meth:`hand_to_prefect`) and run the block's flow without heartbeats."""
        from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

        self.hand_to_prefect()
        # The API URL too: a settings context entered earlier (a test harness's) would otherwise be copied as is.
        with temporary_settings(updates={PREFECT_API_URL: self.api_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            yield

    def stop(self) -> None:
        """Send Prefect's pending logs and events to the server (once it was handed to Prefect), stop it, and
        give Prefect's API settings back. Calling it again does nothing."""
        if self.handed:
            _drain_prefect_workers()
            self._stop_process()
            from prefect.context import refresh_global_settings_context

            for name, value in self._replaced.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            refresh_global_settings_context()
            self.handed = False
        self._stop_process()

    def _stop_process(self) -> None:
        if self.process.poll() is None:
            from prefect.logging import get_logger

            get_logger().info("Stopping temporary server on %s", self.address)
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


#: The settings :meth:`TemporaryServer.hand_to_prefect` sets while the server is in use.
_API_SETTINGS = ("PREFECT_API_URL", "PREFECT_UI_URL")


def start_temporary_server(register_blocks: bool = True) -> TemporaryServer | None:
    """Start Prefect's temporary API server in the background when this process will need one; else None.

    ``register_blocks`` False: the server does not register Prefect's block types in its database as it starts
    (``PREFECT_SERVER_REGISTER_BLOCKS_ON_START``; 1.5–2 CPU-seconds on a new database, beside the run's own work),
    for a command that reads no block. Nor does it record a registration in Prefect's memo store (which would
    keep the next server from registering them). An explicit setting of the user's wins.

    None when a Prefect API is configured (``PREFECT_API_URL``, the active profile), when Prefect's temporary
    server already runs in this process (e.g. a test harness's) or when ephemeral mode is off. A server started
    by an earlier call and still running is returned again. Imports Prefect's settings (call it after
    :func:`~lwec_tasks.cli.run.apply_prefect_defaults`); the server is found ready by
    :meth:`TemporaryServer.hand_to_prefect`.
    """
    global _STARTED
    if _STARTED is not None and _STARTED.process.poll() is None:
        return _STARTED
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url or not settings.server.ephemeral.enabled or _temporary_server_running():
        return None
    blocks = {} if register_blocks else {"PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "0",
                                         "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": "0"}
    user_settings = settings.to_environment_variables(exclude_unset=True)
    environment = {**os.environ, **SERVER_ENVIRONMENT, **blocks, **user_settings}
    _STARTED = TemporaryServer(environment, settings.server.ephemeral.startup_timeout_seconds)
    return _STARTED


#: The server :func:`start_temporary_server` started last.
_STARTED: TemporaryServer | None = None


def temporary_server_booting() -> bool:
    """Whether a temporary server started by :func:`start_temporary_server` runs and has not been handed to
    Prefect yet (this process will wait for it)."""
    return _STARTED is not None and not _STARTED.handed and _STARTED.process.poll() is None


@contextmanager
def stopped_when_done() -> Iterator[None]:
    """Run a flow in this block; on leaving it, stop the temporary server the block started.

    A server that was already running (another caller's, e.g. a test harness) is left alone.
    """
    was_running = _temporary_server_running()
    try:
        yield
    finally:
        if not was_running and _temporary_server_running():
            stop_temporary_server()


def stop_temporary_server() -> None:
    """Send Prefect's pending logs and events, then stop this process's temporary server (if it runs)."""
    if not _temporary_server_running():
        return
    from prefect.server.api.server import SubprocessASGIServer

    _drain_prefect_workers()
    SubprocessASGIServer().stop()


def _drain_prefect_workers() -> None:
    """Send the log lines and events Prefect still holds to its API (waiting at most :data:`DRAIN_SECONDS` each)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with suppress(Exception):  # an undelivered log line must not hide the outcome
            worker.drain_all(timeout=DRAIN_SECONDS)


def _temporary_server_running() -> bool:
    """Whether Prefect's temporary server (the one without a fixed port) runs in this process."""
    module = sys.modules.get("prefect.server.api.server")
    return module is not None and bool(module.SubprocessASGIServer().running)


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that no one listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(url: str) -> bool:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an HTTP proxy
    try:
        with direct.open(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False
