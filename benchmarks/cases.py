"""Benchmark cases. Each runs in a fresh subprocess (see :mod:`benchmarks.runner`).

A case loads its ensemble, runs its method once ("cold": first call in the
process, so numba's cached machine code is loaded — or compiled if the cache
is empty), then ``repeats`` more times ("warm", best of). It returns timings,
the process's peak RSS and, when it produces labels, saves them for the parent
to compare with the reference.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable

import numpy as np

from benchmarks import references
from benchmarks.data import load_ensemble

ALL_KS = list(range(2, 31))
SCALE_K = 10


def _timed(function: Callable[[], object], repeats: int) -> tuple[object, float, float | None]:
    start = time.perf_counter()
    result = function()
    cold = time.perf_counter() - start
    warm = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        elapsed = time.perf_counter() - start
        warm = elapsed if warm is None else min(warm, elapsed)
    return result, cold, warm


def _warm_up_kernels() -> None:
    """Load/compile every numba kernel on a tiny ensemble (not timed)."""
    from lwec_tasks import Ensemble, eci, lwea, lwgp
    from lwec_tasks.core.synthetic import synthetic_ensemble

    labels, _ = synthetic_ensemble(3000, 10, k_min=10, k_max=40)
    eci(Ensemble(labels))
    lwea(labels, [2, 3])
    lwgp(labels, [2, 3], random_state=0)


def _project_eci(labels):
    from lwec_tasks import Ensemble, eci

    return eci(Ensemble(labels))


def _project_lwea(labels, ks):
    from lwec_tasks import lwea

    return lwea(labels, ks)


def _project_lwgp(labels, ks):
    from lwec_tasks import lwgp

    return lwgp(labels, ks, random_state=0)


def _project_scale(labels):
    """ECI + LWGP for one k from the raw label matrix (encoding included)."""
    from lwec_tasks import Ensemble, lwgp
    from lwec_tasks.core.eci import eci

    ensemble = Ensemble(labels)
    eci(ensemble)
    return lwgp(ensemble, SCALE_K, random_state=0)


def _reference_scale(labels):
    references.eci(labels)
    return references.sparse_lwgp(labels, [SCALE_K])[:, 0]


def _generate():
    from sklearn.datasets import make_blobs

    from lwec_tasks import generate_base_clusterings

    x, _ = make_blobs(20_000, n_features=16, centers=26, random_state=0)
    return lambda: generate_base_clusterings(x, n_clusterings=10, random_state=0)


def run_case(name: str, spec: str, repeats: int) -> tuple[dict, np.ndarray | None]:
    """Run case ``name`` on ensemble ``spec``; return (figures, labels or None)."""
    info: dict = {}
    if name == "generate":
        function = _generate()
        labels_out, cold, warm = _timed(function, repeats)
        info["objects"] = 20_000
        return _finish(info, cold, warm), None
    labels, truth = load_ensemble(spec)
    info["objects"] = int(labels.shape[0])
    if name == "project-lwea-large":
        # One long run only: time it with the kernels already loaded.
        _warm_up_kernels()
    functions = {
        "project-eci": lambda: _project_eci(labels),
        "reference-eci": lambda: references.eci(labels),
        "project-lwea": lambda: _project_lwea(labels, ALL_KS),
        "reference-lwea": lambda: references.dense_lwea(labels, ALL_KS),
        "project-lwgp": lambda: _project_lwgp(labels, ALL_KS),
        "project-lwgp-k10": lambda: _project_lwgp(labels, SCALE_K),
        "reference-lwgp": lambda: references.sparse_lwgp(labels, ALL_KS),
        "project-scale": lambda: _project_scale(labels),
        "reference-scale": lambda: _reference_scale(labels),
        "project-lwea-large": lambda: _project_lwea(labels, ALL_KS),
    }
    if name == "lwea-guard":
        from lwec_tasks import LwecMemoryError, lwea

        start = time.perf_counter()
        try:
            lwea(labels, 10)
            info["message"] = "no error"
        except LwecMemoryError as error:
            info["message"] = str(error)
        return _finish(info, time.perf_counter() - start, None), None
    result, cold, warm = _timed(functions[name], repeats)
    if name in ("project-lwea", "project-lwea-large"):
        from lwec_tasks import Ensemble

        info["microclusters"] = Ensemble(labels).n_microclusters
    result = np.asarray(result)
    if truth is not None and result.ndim >= 1 and result.shape[0] == labels.shape[0]:
        info["truth_k"] = int(len(np.unique(truth)))
        from lwec_tasks import nmi

        if result.ndim == 1:
            column = result if name.endswith(("k10", "scale")) and info["truth_k"] == SCALE_K else None
        else:
            column = result[:, ALL_KS.index(info["truth_k"])] if info["truth_k"] in ALL_KS else None
        if column is not None:
            info["nmi"] = nmi(column, truth)
    return _finish(info, cold, warm), result


def _finish(info: dict, cold: float, warm: float | None) -> dict:
    info["cold_s"] = cold
    info["warm_s"] = warm
    info["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return info
