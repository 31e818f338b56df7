"""What lwec uses of Prefect and CPython that they do not publish (:mod:`lwec_tasks.frameworks`) still exists
with the signatures used there, and only that module uses it."""

from __future__ import annotations

import ast
import atexit
import inspect
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Names that only lwec_tasks/frameworks.py may import or call.
INTERNAL_NAMES = {"create_app", "EventsWorker", "APILogWorker", "drain_all", "SettingsContext", "setup_logging",
                  "_run_exitfuncs"}


def test_prefects_api_app_is_made_as_lwec_makes_it():
    from prefect.server.api.server import create_app

    parameters = inspect.signature(create_app).parameters
    assert {"ephemeral", "final"} <= set(parameters)


def test_prefects_log_and_event_workers_drain_with_a_timeout():
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        assert "timeout" in inspect.signature(worker.drain_all).parameters, worker


def test_prefects_settings_context_takes_a_profile_and_settings():
    from prefect.context import SettingsContext, get_settings_context
    from prefect.logging.configuration import setup_logging
    from prefect.settings import Settings

    assert {"profile", "settings"} <= set(SettingsContext.model_fields)
    assert get_settings_context().profile is not None
    assert isinstance(Settings(), Settings) and callable(setup_logging)


def test_exit_handlers_run_on_request_before_os_exit():
    # In a process of its own: running this process's exit handlers would shut its logging down.
    program = ("import atexit, os, sys; from lwec_tasks.frameworks import run_exit_handlers; "
               "atexit.register(print, 'handler ran', flush=True); run_exit_handlers(); os._exit(0)")
    finished = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                              cwd=ROOT)
    assert (finished.returncode, finished.stdout) == (0, "handler ran\n"), finished.stderr
    assert callable(atexit._run_exitfuncs)


def test_draining_with_nothing_to_send_returns():
    from lwec_tasks import frameworks

    frameworks.drain_prefect_workers(timeout=0.1)


def test_no_other_module_uses_them():
    users = {}
    for path in [*ROOT.joinpath("lwec_tasks").rglob("*.py"), *ROOT.joinpath("flows").rglob("*.py")]:
        if path.name == "frameworks.py" and path.parent.name == "lwec_tasks":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        if names & INTERNAL_NAMES:
            users[str(path.relative_to(ROOT))] = sorted(names & INTERNAL_NAMES)
    assert users == {}
