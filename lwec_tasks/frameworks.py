"""Everything lwec uses of Prefect and CPython that they do not publish as API, in this one module.

Each function below wraps one such use, and says why nothing published does the job. No other module imports
these names; ``tests/test_frameworks.py`` checks that each still exists with the signature used here, so an
upgrade of Prefect or Python that changes one fails there, not in the middle of a run.

* :func:`prefect_api_app` — ``prefect.server.api.server.create_app``: the temporary API server of a command
  run without a Prefect API (:mod:`lwec_tasks.cli.server_process`) serves Prefect's REST API under uvicorn,
  as Prefect's own temporary server does. Prefect publishes only ``prefect server start``, which also starts
  the UI and the background services, and takes seconds longer to answer.
* :func:`drain_prefect_workers` — ``EventsWorker`` and ``APILogWorker.drain_all``: Prefect sends log lines
  and events from background workers; before a temporary server stops, what they hold must reach it, or the
  flow run's last log lines and its final events are lost. Prefect drains them only at interpreter exit.
* :func:`prefect_settings_from_environment` — ``SettingsContext`` and ``setup_logging``: a flow-run process
  forked from the warm process (:mod:`lwec_tasks.worker.warm_start`) must read Prefect's settings and logging
  levels from its job's environment again; Prefect reads them once, at import, and offers
  ``temporary_settings`` only for named updates, not for "everything from this environment".
* :func:`run_exit_handlers` — ``atexit._run_exitfuncs``: a command that ran a flow ends with ``os._exit``
  (skipping the interpreter's teardown of the modules a flow loads, about 2 s) after running the exit
  handlers, which is how Prefect sends its pending logs and events; :mod:`atexit` publishes no other way to
  run them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress


def prefect_api_app():
    """Prefect's REST API as an ASGI app (no UI, no background services), for uvicorn to serve."""
    from prefect.server.api.server import create_app

    return create_app(ephemeral=True, final=True)


def drain_prefect_workers(timeout: float) -> None:
    """Send the log lines and events Prefect still holds to its API (waiting at most ``timeout`` seconds for
    each kind); a failure to send is swallowed: an undelivered log line must not hide a run's outcome."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with suppress(Exception):
            worker.drain_all(timeout=timeout)


@contextmanager
def prefect_settings_from_environment() -> Iterator[None]:
    """Within the block, Prefect's settings read again from ``os.environ`` (the active profile kept), and its
    logging levels and handlers set up again from them."""
    from prefect.context import SettingsContext, get_settings_context
    from prefect.logging.configuration import setup_logging
    from prefect.settings import Settings

    with SettingsContext(profile=get_settings_context().profile, settings=Settings()):
        setup_logging()  # an update of the levels and handlers set up at Prefect's import
        yield


def run_exit_handlers() -> None:
    """Run the functions registered with :mod:`atexit` now, as the interpreter does at exit."""
    import atexit

    atexit._run_exitfuncs()
