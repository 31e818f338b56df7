"""Tasks: base clusterings, ECI, consensus. Thin wrappers over the numeric core."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.tasks.load import FeatureMatrix
from lwec_tasks.tasks.timings import record_stage_time


@dataclass(frozen=True)
class ClusterReliability:
    """Per-base-cluster uncertainty H^Π (bits) and ECI, each shape (n_c,), in the Ensemble's cluster order."""

    uncertainty: np.ndarray
    eci: np.ndarray


# Arrays are never hashed for cache keys (NO_CACHE): every run recomputes.
@task(name="generate-base-clusterings", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def generate_ensemble(matrix: FeatureMatrix, ensemble_size: int, seed: int | None) -> Ensemble:
    """M = ``ensemble_size`` k-means base clusterings of the (N, d) features, encoded once as an :class:`Ensemble`.

    Takes the matrix out of ``matrix``, so its memory is freed when this task ends.
    """
    from lwec_tasks.core.base_clusterings import generate_base_clusterings

    X = matrix.take()
    logger = get_run_logger()
    started = time.perf_counter()
    finished = []

    def report(m: int, k: int) -> None:
        finished.append(m)
        seconds = time.perf_counter() - started
        logger.info("Base clustering %d/%d done (k=%d): %.0f rows/s", len(finished), ensemble_size, k,
                    len(X) * len(finished) / max(seconds, 1e-9))

    labels = generate_base_clusterings(X, n_clusterings=ensemble_size, random_state=seed, progress=report)
    ensemble = Ensemble(labels)
    logger.info(
        "Generated %d base clusterings of %d objects in %.1f s: %d clusters in total (k per clustering %d–%d), "
        "%d microclusters",
        ensemble.n_columns, ensemble.n_objects, time.perf_counter() - started, ensemble.n_clusters_total,
        int(ensemble.n_clusters_per_column.min()), int(ensemble.n_clusters_per_column.max()),
        ensemble.n_microclusters,
    )
    return ensemble


@task(name="ensemble-driven-cluster-index", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def cluster_reliability(ensemble: Ensemble, theta: float) -> ClusterReliability:
    """Uncertainty and ECI of every base cluster (paper Defs. 3–5)."""
    from lwec_tasks.core.eci import cluster_uncertainty, eci

    reliability = ClusterReliability(cluster_uncertainty(ensemble), eci(ensemble, theta))
    get_run_logger().info(
        "ECI (θ=%g) over %d clusters: min %.3f, median %.3f, max %.3f",
        theta, len(reliability.eci), reliability.eci.min(), np.median(reliability.eci), reliability.eci.max(),
    )
    return reliability


@task(name="consensus", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def consensus_labels(ensemble: Ensemble, method: str, n_clusters: int, theta: float, seed: int | None) -> np.ndarray:
    """Consensus labels (N,) by the registered pipeline ``method`` (LWEA or LWGP)."""
    from lwec_tasks.methods import pipeline_method, run_method

    chosen = pipeline_method(method)
    labels = run_method(chosen, ensemble, n_clusters, theta=theta, random_state=seed)
    sizes = np.bincount(np.asarray(labels, dtype=np.int64))
    get_run_logger().info(
        "%s found %d clusters (requested %d); sizes from %d to %d",
        chosen.name, int((sizes > 0).sum()), n_clusters, int(sizes[sizes > 0].min()), int(sizes.max()),
    )
    return labels
