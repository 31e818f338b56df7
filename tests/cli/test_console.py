"""The command line's last words: one line per failure, after the traceback (``--verbose``), after Prefect's
temporary server has stopped; and only the command being run is imported."""

from __future__ import annotations

import sys

import pytest

from lwec_tasks.cli import build_parser, main
from lwec_tasks.cli import prefect_server as server_module
from lwec_tasks.cli import run as run_cli
from lwec_tasks.cli.console import describe, exit_code, one_line
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.connection import DatabaseUnreachableError

DRIVER_REASON = ('cannot reach database postgresql+psycopg://lwec:***@db:5432/x: connection failed: connection to '
                 'server at "db", port 5432 failed: Connection refused\n\tIs the server running on that host and '
                 'accepting TCP/IP connections?')


def test_messages_become_one_line_and_name_their_problem():
    assert one_line("a\n\tb   c\n") == "a b c"
    assert one_line("x" * 50, limit=10) == "x" * 9 + "…"
    assert describe(DatabaseUnreachableError(DRIVER_REASON)).endswith("Connection refused Is the server running on "
                                                                      "that host and accepting TCP/IP connections?")
    assert describe(LwecInputError("table 'nope' not found")) == "table 'nope' not found"
    assert describe(KeyError("f9")) == "KeyError: 'f9'"
    assert (exit_code(LwecInputError("x")), exit_code(ConnectionError("x")), exit_code(RuntimeError())) == (2, 1, 1)


@pytest.mark.parametrize("verbose", [False, True])
def test_lwec_run_prints_a_multi_line_failure_as_its_last_line(monkeypatch, capsys, verbose):
    def unreachable(request):
        raise DatabaseUnreachableError(DRIVER_REASON)

    monkeypatch.setattr(run_cli, "check_before_prefect", unreachable)
    argv = ["run", "--database-url", "postgresql+psycopg://lwec:pw@db:5432/x", "--table", "t", "-k", "3"]
    assert main(argv + (["--verbose"] if verbose else [])) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines[-1] == "lwec run: error: " + " ".join(DRIVER_REASON.split())
    assert ("Traceback (most recent call last)" in err) == verbose
    if not verbose:
        assert len(lines) == 1


def test_only_the_command_being_run_is_built():
    def commands(parser):
        return set(parser._subparsers._group_actions[0].choices)

    assert commands(build_parser(["run", "--table", "t"])) == {"run"}
    assert commands(build_parser(["--version"])) >= {"demo", "run", "assign", "reproduce", "study"}
    assert commands(build_parser(["runn"])) == commands(build_parser())  # a typo gets the list of commands


@pytest.mark.slow
def test_a_flow_the_temporary_server_serves_sends_no_heartbeats(tmp_path, monkeypatch):
    """The server dies with the command, so nothing could watch the heartbeats; Prefect's engine would also wait
    up to a second for its heartbeat thread at the end of the run."""
    from prefect import flow
    from prefect.settings import get_current_settings

    @flow
    def heartbeat_setting() -> tuple:
        settings = get_current_settings()
        return settings.flows.heartbeat_frequency, settings.api.url

    default = get_current_settings().flows.heartbeat_frequency
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.setattr(server_module, "DRAIN_SECONDS", 1)
    server = server_module.TemporaryServer(register_blocks=False)
    try:
        with server.serving():
            frequency, api_url = heartbeat_setting()
    finally:
        server.stop()
    assert frequency is None and api_url == server.api_url
    assert default is not None and get_current_settings().flows.heartbeat_frequency == default


#: Started in a process of its own (as ``lwec run`` starts it): the block types each server finds in its database.
_COUNT_BLOCK_TYPES = """
import json, sys, urllib.request
from lwec_tasks.cli import prefect_server
counts = []
for register_blocks in (False, True):
    server = prefect_server.TemporaryServer(register_blocks=register_blocks)
    try:
        server.wait_until_ready()
        request = urllib.request.Request(f"{server.api_url}/block_types/filter", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            counts.append(len(json.load(response)))
    finally:
        server.stop()
print(json.dumps(counts))
"""


@pytest.mark.slow
def test_a_temporary_server_for_a_command_without_blocks_registers_no_block_types_nor_stops_the_next(tmp_path):
    """Registering Prefect's block types costs a new server database 1.5–2 CPU-seconds beside the run's work; a
    command that reads no block skips it, and the next server on the same database still registers them."""
    import json
    import os
    import subprocess

    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith("PREFECT_") or name == "PREFECT_SERVER_ANALYTICS_ENABLED"}
    environment.update(PREFECT_HOME=str(tmp_path), PREFECT_LOGGING_LEVEL="WARNING")
    done = subprocess.run([sys.executable, "-c", _COUNT_BLOCK_TYPES], env=environment, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    without, with_blocks = json.loads(done.stdout.strip().splitlines()[-1])
    assert without == 0 and with_blocks > 10


@pytest.mark.parametrize("setting, skipped", [
    ({}, {"PREFECT_SERVER_REGISTER_BLOCKS_ON_START", "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION"}),
    ({"PREFECT_API_BLOCKS_REGISTER_ON_START": "true"}, {"PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION"}),
    ({"PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "true"}, {"PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION"}),
])
def test_a_users_block_registration_setting_wins(tmp_path, setting, skipped):
    """The server process skips block registration for a command that reads no block, except where the user
    set it, under either of its names."""
    import json
    import os
    import subprocess

    script = ("import json\nfrom lwec_tasks.cli.server_process import block_registration\n"
              "print(json.dumps(sorted(block_registration(True))))\n")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PREFECT_")}
    environment.update(PREFECT_HOME=str(tmp_path), **setting)
    done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout.splitlines()[-1])) == skipped


def test_a_server_started_before_prefects_settings_were_read_is_stopped_when_a_profile_names_an_api(tmp_path):
    """``lwec run`` starts its temporary server before importing Prefect (which reading the settings needs);
    when the active profile names an API after all, that server is stopped and none is used."""
    import os
    import subprocess

    (tmp_path / "profiles.toml").write_text('active = "remote"\n[profiles.remote]\n'
                                           'PREFECT_API_URL = "http://127.0.0.1:9/api"\n')
    script = ("import sys\nfrom lwec_tasks.cli import prefect_server as s\n"
              "started = []\nspawn = s.TemporaryServer._spawn\n"
              "s.TemporaryServer._spawn = lambda self: started.append(self) or spawn(self)\n"
              "assert 'prefect.settings' not in sys.modules\n"
              "server = s.start_temporary_server(register_blocks=False)\n"
              "print(server is None, len(started), started[0].process.wait(timeout=30))\n")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PREFECT_")}
    environment.update(PREFECT_HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-3:] == ["True", "1", "0"]  # no server; the one started ended at once
