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
    flow sends (reads, reductions, whole-table steps, evidence kernels, base models) and the generators'
    scikit-learn modules are loaded."""
    import importlib.util
    import pkgutil

    import lwec_tasks.stages
    from lwec_tasks.core.generators import FITTING_LIBRARIES

    stage_modules = sorted(module.name for module in pkgutil.iter_modules(lwec_tasks.stages.__path__,
                                                                          "lwec_tasks.stages."))
    drivers = [name for name in ("adbc_driver_postgresql.dbapi", "adbc_driver_sqlite.dbapi", "psycopg")
               if importlib.util.find_spec(name.split(".")[0]) is not None]
    wanted = [*stage_modules, *FITTING_LIBRARIES, *drivers]
    code = (f"import sys, importlib; importlib.import_module({WORKER_MODULE!r}); "
            f"print(' '.join(n for n in {wanted!r} if n not in sys.modules))")
    missing = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "lwec_tasks.stages.whole_table" in wanted and "lwec_tasks.stages.evidence_parts" in wanted
    assert missing == []


_DASK_RUN = """
import hashlib, json, sys
from mlflow import MlflowClient
from flows.consensus import consensus_flow
from lwec_tasks.core.nearest_centre import _nearest_in_block
parameters = json.loads(sys.argv[1])
earlier = consensus_flow(**{**parameters, "seed": parameters["seed"] + 1, "run_name": "earlier"})
summary = consensus_flow(**parameters)
client = MlflowClient(summary["mlflow_tracking_uri"])
paths = {name: client.download_artifacts(summary["mlflow_run_id"], "figures/" + name) for name in summary["figures"]}
pngs = {name: hashlib.sha256(open(path, "rb").read()).hexdigest() for name, path in paths.items()}
loaded = [name for name in ("matplotlib", "sklearn", "scipy.optimize") if name in sys.modules]
print("RESULT", json.dumps({"loaded": loaded, "aligned_to": summary.get("ids_aligned_to"),
                            "earlier": earlier["run_key"], "kernel": len(_nearest_in_block.signatures),
                            "figures": pngs}))
"""


def test_a_dask_run_draws_its_figures_on_a_worker_the_same_as_in_process(prefect_api, prefect_server, dask_scheduler,
                                                                          sqlite_url, mlflow_store, tmp_path):
    """The Dask run's flow process (a fresh one) never loads matplotlib, scikit-learn or scipy.optimize, nor numba's
    nearest-centre kernel (MLflow's check of the model's input example places its few rows by numpy), though its
    ids are aligned to an earlier run; its figures are byte for byte the in-process run's."""
    import hashlib
    import json
    from pathlib import Path

    from mlflow import MlflowClient

    from flows.consensus import consensus_flow
    from helpers.pipeline import blobs_frame, unique, write_frame

    write_frame(sqlite_url, "blobs", blobs_frame(n=300, centers=3, seed=2))
    common = dict(database_url=sqlite_url, table="blobs", n_clusters=3, label_column="target", ensemble_size=5,
                  seed=4, method="lwea", tracking_uri=mlflow_store, experiment=unique("figures"))
    done = subprocess.run([sys.executable, "-c", _DASK_RUN, json.dumps({**common, "dask_address": dask_scheduler,
                                                                        "run_name": "dask"})],
                          capture_output=True, text=True, env=prefect_api.env, cwd=Path(__file__).parents[2],
                          timeout=300)
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert results, done.stdout[-3000:] + done.stderr[-3000:]
    on_dask = json.loads(results[-1].removeprefix("RESULT "))

    local = consensus_flow(**common, run_name="local")
    client = MlflowClient(mlflow_store)
    run_id = local["mlflow_run_id"]
    paths = {name: Path(client.download_artifacts(run_id, f"figures/{name}")) for name in local["figures"]}
    local_pngs = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in paths.items()}
    assert on_dask["loaded"] == [] and on_dask["kernel"] == 0
    assert on_dask["aligned_to"] == on_dask["earlier"]
    assert {"cluster_map.png", "dendrogram.png", "cluster_profiles.png"} <= set(local_pngs)
    assert on_dask["figures"] == local_pngs
