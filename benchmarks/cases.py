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
KMEANS_SEED = 0  # the same seed for both k-means implementations


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


def _kmeans_input(labels, graph: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows the final k-means of LWGP (``graph="lwgp"``) or HBGF (``"hbgf"``) clusters.

    As the pipeline builds them: the Tcut embedding of the microcluster
    representatives (one row per microcluster, weighted by its size), first k
    columns, row-normalised.
    """
    from lwec_tasks import Ensemble
    from lwec_tasks.core import lwgp as lwgp_module
    from lwec_tasks.core.eci import ensemble_eci

    ensemble = Ensemble(labels)
    weights = ensemble_eci(ensemble, 0.4) if graph == "lwgp" else np.ones(ensemble.n_clusters_total)
    embedding = lwgp_module.tcut_embedding(ensemble, weights, k, ensemble.microcluster_representative)
    return lwgp_module.normalised_rows(embedding, k), ensemble.microcluster_sizes.astype(np.float64)


def _weighted_inertia(x: np.ndarray, labels: np.ndarray, weight: np.ndarray) -> float:
    total = 0.0
    for c in np.unique(labels):
        members = labels == c
        centre = np.average(x[members], axis=0, weights=weight[members])
        total += float(weight[members] @ ((x[members] - centre) ** 2).sum(axis=1))
    return total


def _kmeans_case(name: str, spec: str, repeats: int) -> dict:
    """``kmeans-<lwec|sklearn>-<lwgp|hbgf>-k<K>``: the final k-means step alone, one thread.

    ``lwec`` is the k-means step exactly as LWGP and HBGF call it
    (:func:`lwec_tasks.core.lwgp.kmeans_labels`: scikit-learn ``KMeans``, whose
    replicates run on a 200,000-row sample above 500,000 rows); ``sklearn`` is
    plain ``KMeans(algorithm="lloyd")`` with the same replicates, iteration cap
    and sample weights on all rows. The input is built first (not timed).
    """
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    from lwec_tasks.core.lwgp import KMEANS_MAX_ITER, KMEANS_REPLICATES, kmeans_labels

    _, implementation, graph, k_text = name.split("-")
    k = int(k_text[1:])
    labels, _ = load_ensemble(spec)
    x, sample_weight = _kmeans_input(labels, graph, k)
    if implementation == "lwec":

        def function():
            return kmeans_labels(x, k, KMEANS_SEED, sample_weight)
    else:

        def function():
            model = KMeans(
                n_clusters=k, n_init=KMEANS_REPLICATES, max_iter=KMEANS_MAX_ITER,
                algorithm="lloyd", random_state=KMEANS_SEED,
            )
            return model.fit(x, sample_weight=sample_weight).labels_

    with threadpool_limits(1):
        result, cold, warm = _timed(function, repeats)
    info = {
        "objects": int(labels.shape[0]),
        "rows": int(len(x)),
        "inertia": _weighted_inertia(x, np.asarray(result), sample_weight),
        "microclusters": int(len(x)),
    }
    return _finish(info, cold, warm)


def run_case(name: str, spec: str, repeats: int) -> tuple[dict, np.ndarray | None]:
    """Run case ``name`` on ensemble ``spec``; return (figures, labels or None)."""
    info: dict = {}
    if name.startswith("kmeans-"):
        return _kmeans_case(name, spec, repeats), None
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
    if name == "lwea-at-scale":
        from lwec_tasks import Ensemble, lwea

        _warm_up_kernels()
        start = time.perf_counter()
        lwea(labels, 10)
        info["microclusters"] = Ensemble(labels).n_microclusters
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
