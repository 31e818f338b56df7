"""Where the Dask executor's tasks run: spread over the workers when they all read one worker's data, and the
code a worker (or scheduler) preloads before a run.

A module-scoped cluster of two one-thread worker processes on loopback (conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

from lwec_tasks.executors.dask import WORKER_MODULE, connect

pytestmark = pytest.mark.slow


def _running_worker(position: int, data: np.ndarray) -> str:
    """The address of the worker running this task, after some work on ``data`` (long enough that moving
    ``data`` to another worker is worth it)."""
    from distributed import get_worker

    time.sleep(0.3)
    assert data.shape == (4_000_000,)
    return get_worker().address


def test_spread_tasks_are_placed_on_the_workers_in_turn_though_their_input_lives_on_one(dask_scheduler):
    with connect(dask_scheduler) as session:
        workers = sorted(session.client.scheduler_info()["workers"])
        data = session.client.submit(np.ones, 4_000_000, workers=[workers[-1]], pure=False)
        data.result()
        ran = session.gather(session.map(_running_worker, range(6), name="spread", spread=True, data=data))
    assert ran == [workers[i % len(workers)] for i in range(6)]
    assert Counter(ran)[workers[0]] == 3  # not where the input lives


def test_in_process_map_takes_spread_and_runs_every_call():
    from contextlib import closing

    from lwec_tasks.executors.in_process import InProcess

    with closing(InProcess(n_threads=2)) as executor:
        done = executor.map(pow, range(5), name="powers", spread=True, exp=2)
    assert [handle.result() for handle in done] == [0, 1, 4, 9, 16]


def test_the_preloaded_module_imports_every_stage_module_and_the_installed_drivers():
    """In a fresh interpreter, as ``dask worker --preload`` imports it: afterwards the modules of every task the
    flow sends (reads, reductions, whole-table steps, evidence kernels, base models) are loaded."""
    import importlib.util
    import pkgutil

    import lwec_tasks.stages

    stage_modules = sorted(module.name for module in pkgutil.iter_modules(lwec_tasks.stages.__path__,
                                                                          "lwec_tasks.stages."))
    drivers = [name for name in ("adbc_driver_postgresql.dbapi", "adbc_driver_sqlite.dbapi", "psycopg")
               if importlib.util.find_spec(name.split(".")[0]) is not None]
    wanted = [*stage_modules, *drivers]
    code = (f"import sys, importlib; importlib.import_module({WORKER_MODULE!r}); "
            f"print(' '.join(n for n in {wanted!r} if n not in sys.modules))")
    missing = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "lwec_tasks.stages.whole_table" in wanted and "lwec_tasks.stages.evidence_parts" in wanted
    assert missing == []
