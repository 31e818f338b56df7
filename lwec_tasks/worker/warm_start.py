"""Processes for flow runs, forked from a warm process that has imported the flows once.

The warm process is multiprocessing's fork server with :mod:`lwec_tasks.worker.warm_imports` preloaded. The
worker starts it (:func:`warm_context`, :func:`wait_until_warm`; multiprocessing starts it again if it died),
and it forks one process per flow run (:func:`start_flow_run`). That process takes the flow run's environment
and working directory and runs Prefect's engine as ``python -m prefect.engine`` does, with the imports done.
A job that names another command, or a run after lwec's code changed, gets a plain subprocess instead
(:func:`start_command`).
"""

from __future__ import annotations

import multiprocessing
import os
import runpy
import shlex
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.context import BaseContext
from pathlib import Path

#: The module the warm process imports before it forks.
WARM_IMPORTS = "lwec_tasks.worker.warm_imports"
#: What a flow run's process runs, as ``python -m`` would.
ENGINE = "prefect.engine"


def warm_context() -> BaseContext:
    """multiprocessing's fork-server context, its server preloading :data:`WARM_IMPORTS` (one per process).

    Raises RuntimeError where Python has no fork server (Windows): a ``process`` work pool serves there."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        raise RuntimeError("the lwec-warm-process worker forks flow runs from a fork server, which Python does "
                           "not offer on this system; use a work pool of Prefect's 'process' type here")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([WARM_IMPORTS])
    return context


def wait_until_warm(context: BaseContext) -> None:
    """Start the warm process if it is not running and wait for its imports (seconds, once per worker)."""
    probe = context.Process(target=os.getpid, name="lwec-warm-probe")
    probe.start()
    probe.join()


def start_flow_run(context: BaseContext, env: dict[str, str], cwd: Path) -> multiprocessing.process.BaseProcess:
    """A process forked from the warm process, running Prefect's engine for the flow run that ``env`` names
    (``PREFECT__FLOW_RUN_ID``) with exactly ``env`` as its environment, in ``cwd``."""
    process = context.Process(target=run_engine, args=(env, str(cwd)),
                              name=f"lwec-flow-run-{env.get('PREFECT__FLOW_RUN_ID')}")
    process.start()
    return process


def start_command(command: str, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """``command`` (a job's own, or Prefect's engine in a new interpreter) as a new process with environment
    ``env`` in ``cwd``."""
    return subprocess.Popen(shlex.split(command), env=env, cwd=cwd)


def wait_for_exit(process: multiprocessing.process.BaseProcess | subprocess.Popen) -> int:
    """Wait until ``process`` (a forked flow run or a command) ends; its exit code (negative: the signal)."""
    if isinstance(process, subprocess.Popen):
        return process.wait()
    process.join()
    return process.exitcode


@contextmanager
def adopted(env: dict[str, str], cwd: str) -> Iterator[None]:
    """In a forked process: exactly ``env`` as the environment, ``cwd`` as the working directory, and, within the
    block, Prefect's settings and logging levels read again from ``env``.

    Prefect read them from the warm process's environment when it was imported; a job's ``env`` (an API URL, a
    logging level) must win, as it does for a flow run Prefect starts in a subprocess of its own.
    """
    from lwec_tasks.frameworks import prefect_settings_from_environment

    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    with prefect_settings_from_environment():
        yield


def run_engine(env: dict[str, str], cwd: str) -> None:
    """In the forked process: take ``env`` and ``cwd`` (:func:`adopted`), then run Prefect's engine module as
    ``__main__``, as ``python -m prefect.engine`` does."""
    sys.argv = [ENGINE]  # no argument: the engine reads the flow run's id from PREFECT__FLOW_RUN_ID
    with adopted(env, cwd), warnings.catch_warnings():
        # The module was imported by the warm process; running it as __main__ is what -m does after that.
        warnings.filterwarnings("ignore", message=f".*'{ENGINE}' found in sys.modules", category=RuntimeWarning)
        runpy.run_module(ENGINE, run_name="__main__", alter_sys=True)
