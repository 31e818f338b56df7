"""The temporary Prefect API server of a command run without a Prefect API, which ends with the command.

Without ``PREFECT_API_URL`` (in the environment or the active profile) a flow run needs a Prefect server for
its duration. :func:`start_temporary_server` starts one (:mod:`lwec_tasks.cli.server_process`: Prefect's REST API
under uvicorn, as Prefect's own temporary server) as soon as the command's input is checked, so it boots while
the command imports the flow; :meth:`TemporaryServer.serving` waits for it and points Prefect at it for the
flow's call, without heartbeats (they tell a lasting server that a run's process died; this one dies with the
command). The server process reads a pipe from the command and ends when the pipe closes, so it never outlives
the command, however the command ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress

#: Seconds to wait for Prefect's pending logs and events to reach the server before it stops.
DRAIN_SECONDS = 5
#: Seconds the server gets to answer its health check (Prefect's own setting for its temporary server).
STARTUP_TIMEOUT_VARIABLE = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
DEFAULT_STARTUP_TIMEOUT = 120.0
#: Settings of the server process: no UI, no usage analytics.
SERVER_SETTINGS = {"PREFECT_UI_ENABLED": "false", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
#: How many ports are tried when the one picked was taken before the server bound it.
PORT_ATTEMPTS = 3


class TemporaryServer:
    """A Prefect API server process on ``127.0.0.1:port`` that ends with this process.

    ``register_blocks`` False: the server does not register Prefect's block types in its database as it starts
    (``PREFECT_SERVER_REGISTER_BLOCKS_ON_START``; 1.5–2 CPU-seconds on a new database), for a command that reads
    no block. An explicit setting of the user's wins (the server process decides:
    :func:`lwec_tasks.cli.server_process.block_registration`).
    """

    def __init__(self, register_blocks: bool = True, startup_timeout: float | None = None):
        from lwec_tasks.cli.server_process import SKIP_BLOCKS_VARIABLE

        skip = {SKIP_BLOCKS_VARIABLE: "0" if register_blocks else "1"}
        self.environment = {**os.environ, **skip, **_settings_held_here(), **SERVER_SETTINGS}
        self.environment.pop("PREFECT_API_URL", None)
        self.startup_timeout = startup_timeout or float(os.environ.get(STARTUP_TIMEOUT_VARIABLE,
                                                                       DEFAULT_STARTUP_TIMEOUT))
        self.process = self._spawn()

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.address}/api"

    def _spawn(self) -> subprocess.Popen:
        self.port = _free_port()
        # Its standard input is this process's pipe: the server ends when the pipe closes.
        return subprocess.Popen([sys.executable, "-m", "lwec_tasks.cli.server_process", str(self.port)],
                                stdin=subprocess.PIPE, env=self.environment)

    def wait_until_ready(self) -> None:
        """Return once the server answers its health check; raise RuntimeError when it exits (after
        :data:`PORT_ATTEMPTS` ports) or the startup timeout passes first."""
        deadline = time.monotonic() + self.startup_timeout
        attempts = 1
        while time.monotonic() < deadline:
            status = self.process.poll()
            if status is not None and attempts < PORT_ATTEMPTS:  # e.g. its port taken meanwhile: another one
                attempts += 1
                self.process = self._spawn()
            elif status is not None:
                raise RuntimeError(f"the temporary Prefect server exited with status {status} before it answered")
            elif _answers(f"{self.api_url}/health"):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the temporary Prefect server did not answer within {self.startup_timeout:g} s "
                           f"({STARTUP_TIMEOUT_VARIABLE})")

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Wait until the server answers, then, within the block, make it Prefect's API (no UI address: no links
        to a page that will be gone) with flow-run heartbeats off."""
        self.wait_until_ready()
        from prefect.settings import (
            PREFECT_API_URL,
            PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
            PREFECT_UI_URL,
            temporary_settings,
        )

        with temporary_settings(updates={PREFECT_API_URL: self.api_url, PREFECT_UI_URL: None,
                                         PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            try:
                yield
            finally:
                drain_prefect_workers()  # while the API URL is still this server's

    def stop(self) -> None:
        """Stop the server. Calling it again does nothing."""
        if self.process.poll() is None:
            with suppress(OSError):
                self.process.stdin.close()  # the server ends at the end of its input
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        elif self.process.stdin is not None:
            with suppress(OSError):
                self.process.stdin.close()


def prefect_api_configured() -> bool:
    """Whether Prefect has an API to talk to (``PREFECT_API_URL`` in the environment or the active profile)."""
    from prefect.settings import get_current_settings

    return bool(get_current_settings().api.url)


def start_temporary_server(register_blocks: bool = True) -> TemporaryServer | None:
    """A :class:`TemporaryServer` started now when no Prefect API is configured; else None.

    Reading Prefect's settings imports Prefect (0.7 s), so unless ``PREFECT_API_URL`` is in the environment the
    server is started first, booting meanwhile, and stopped at once if the settings name an API after all (a
    profile's)."""
    if os.environ.get("PREFECT_API_URL"):
        return None
    server = TemporaryServer(register_blocks)
    if prefect_api_configured():
        server.stop()
        return None
    return server


def _settings_held_here() -> dict[str, str]:
    """Prefect settings this process holds that its environment may not (``temporary_settings``, a profile
    chosen in code), as environment variables for the server; none before Prefect is imported here, when the
    server reads the same environment and files as this process would."""
    if "prefect.settings" not in sys.modules:
        return {}
    from lwec_tasks.cli.server_process import explicit_prefect_settings

    return explicit_prefect_settings()


@contextmanager
def served_flow(server: TemporaryServer | None) -> Iterator[None]:
    """The block's flow run served by ``server`` (:meth:`TemporaryServer.serving`), or by the configured API."""
    if server is None:
        yield
        return
    with server.serving():
        yield


def drain_prefect_workers() -> None:
    """Send the log lines and events Prefect still holds to its API (waiting at most :data:`DRAIN_SECONDS` each;
    :func:`lwec_tasks.frameworks.drain_prefect_workers`)."""
    from lwec_tasks import frameworks

    frameworks.drain_prefect_workers(DRAIN_SECONDS)


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
