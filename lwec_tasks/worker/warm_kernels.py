"""lwec's compiled (numba) kernels: which ones have no compiled code cached yet, and compiling them ahead.

numba compiles a kernel on its first call and caches the machine code on disk (``cache=True``, in
``__pycache__`` beside the source or under ``$NUMBA_CACHE_DIR``); later processes load it in milliseconds. After
an install or a checkout the cache is empty, and the first run spends minutes compiling inside its consensus and
evidence stages. Two remedies:

- :func:`compile_ahead`: the warm process (:mod:`lwec_tasks.worker.warm_imports`) runs a tiny consensus on a
  table of 60 rows in a child process (``python -m lwec_tasks.worker.warm_kernels``) before it forks flow runs, so
  the first served run loads every kernel from the cache. Nothing is done when every kernel is cached.
- :func:`~lwec_tasks.core.kernel_cache.note_compiling`: a flow run whose kernels are not cached says so in its
  log first, so that a slow stage is not taken for a hang.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lwec_tasks.core.kernel_cache import note_compiling


def compile_ahead(log, timeout: float = 900.0) -> int:
    """When some entry kernel is not cached: log so, run :func:`exercise` in a child process (which compiles and
    caches the kernels; a failure there is logged, never raised: the runs then compile as they go) and log how
    long it took. Returns how many kernels were not cached before."""
    missing = note_compiling(log)
    if not missing:
        return 0
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", __name__], capture_output=True, text=True, timeout=timeout)
        failure = None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no message"])[-1]
    except subprocess.TimeoutExpired:
        failure = f"not done after {timeout:.0f} s"
    if failure:
        log.warning("Compiling the kernels ahead failed (%s); the first run compiles them as it goes", failure)
    else:
        log.info("Compiled the kernels in %.0f s; flow runs load them from the cache",
                 time.perf_counter() - started)
    return missing


def warm_process_log():
    """The warm process's logger, ``lwec.warm-process``, writing to stderr (the worker's output) as Prefect's
    console does; the warm process has no Prefect logging of its own before it forks a run."""
    import logging

    log = logging.getLogger("lwec.warm-process")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d | %(levelname)-7s | %(name)s - %(message)s",
                                               "%H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


def exercise(directory: Path) -> None:
    """A consensus as a flow run computes it (read, base clusterings, ECI, LWEA and LWGP at a given k and LWEA
    at k auto, row evidence, labelling model) on a 60-row table in a SQLite file in ``directory``, read through
    one labels store as a run's: every kernel a run uses is compiled for the types a run gives it. Writes nothing
    else."""
    import logging
    from contextlib import closing

    import numpy as np
    import sqlalchemy as sa

    from lwec_tasks.executors import InProcess
    from lwec_tasks.io.label_store import open_label_store
    from lwec_tasks.request import ConsensusRequest
    from lwec_tasks.stages.consensus import consensus_labels
    from lwec_tasks.stages.ensemble import reliability
    from lwec_tasks.stages.evidence import run_evidence
    from lwec_tasks.stages.generate import base_clusterings
    from lwec_tasks.stages.model import labelling_model
    from lwec_tasks.stages.read import load_table

    log = logging.getLogger(__name__)
    database = directory / "kernels.db"
    database.touch()  # open_engine refuses a SQLite file that is not there (a mistyped path)
    url = f"sqlite:///{database}"
    rng = np.random.default_rng(0)
    centres = np.repeat(np.eye(3) * 6, 20, axis=0)
    rows = [{"id": i, "f0": x, "f1": y, "f2": z} for i, (x, y, z) in enumerate(centres + rng.normal(size=(60, 3)))]
    requests = [ConsensusRequest(database_url=url, table="points", n_clusters=k, method=method, ensemble_size=4,
                                 seed=0) for method, k in (("lwea", 3), ("lwgp", 3), ("lwea", "auto"))]
    with closing(InProcess()) as executor, open_label_store(url, requests[0].output_name) as store:
        with store.engine.begin() as connection:
            connection.execute(sa.text("CREATE TABLE points (id INTEGER PRIMARY KEY, f0 REAL, f1 REAL, f2 REAL)"))
            connection.execute(sa.text("INSERT INTO points VALUES (:id, :f0, :f1, :f2)"), rows)
        for request in requests:
            table = load_table(executor, request, log, store)
            ensemble = base_clusterings(table, request.ensemble_size, request.seed, log,
                                         request.for_rows(table.n_rows).generators)
            ensemble, found = reliability(table, ensemble, request.theta, log)
            eci = found.eci
            labels = consensus_labels(table, ensemble, eci, request.method, request.n_clusters, request.theta,
                                      request.seed, log)
            evidence = run_evidence(table, ensemble, labels, log, request.seed, request.method, request.theta)
            labelling_model(table, ensemble, labels, eci, request.method, request.theta, labels.k, request.seed,
                            request.standardize, log, evidence=evidence)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="lwec-kernels-") as scratch:
        exercise(Path(scratch))
