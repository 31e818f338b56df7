"""Tasks: base clusterings, ECI, consensus. Thin wrappers over the numeric core."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from lwec_tasks.core.consensus import Consensus
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.tasks.load import FeatureMatrix
from lwec_tasks.tasks.timings import record_stage_time

#: Rows kept (a seeded uniform sample) for the cluster picture and the model's input example.
PICTURE_SAMPLE = 2_000


@dataclass(frozen=True)
class BaseEnsemble:
    """The base clusterings of a run and what the labelling model and the pictures need of the features.

    Attributes
    ----------
    ensemble : the M base clusterings, encoded
    centres : M arrays (k_m, d), each base clustering's k-means centres (standardised feature space)
    sample : (S,) sorted row positions of a seeded sample of S = min(N, 2,000) rows
    sample_rows : (S, d) the features of those rows, as clustered (standardised unless turned off)
    """

    ensemble: Ensemble
    centres: tuple[np.ndarray, ...]
    sample: np.ndarray
    sample_rows: np.ndarray


@dataclass(frozen=True)
class ClusterReliability:
    """Per-base-cluster uncertainty H^Π (bits) and ECI, each shape (n_c,), in the Ensemble's cluster order."""

    uncertainty: np.ndarray
    eci: np.ndarray


# Arrays are never hashed for cache keys (NO_CACHE): every run recomputes.
@task(name="generate-base-clusterings", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def generate_ensemble(matrix: FeatureMatrix, ensemble_size: int, seed: int | None) -> BaseEnsemble:
    """M = ``ensemble_size`` k-means base clusterings of the (N, d) features, encoded once as an :class:`Ensemble`.

    Takes the matrix out of ``matrix``, so its memory is freed when this task ends
    (a sample of :data:`PICTURE_SAMPLE` rows is kept).
    """
    from lwec_tasks.core.base_clusterings import fit_base_clusterings
    from lwec_tasks.core.seeds import base_seed

    X = matrix.take()
    rng = np.random.default_rng(base_seed(seed))
    sample = np.sort(rng.choice(len(X), size=min(PICTURE_SAMPLE, len(X)), replace=False))
    sample_rows = X[sample].copy()
    logger = get_run_logger()
    started = time.perf_counter()
    finished = []

    def report(m: int, k: int) -> None:
        finished.append(m)
        seconds = time.perf_counter() - started
        logger.info("Base clustering %d/%d done (k=%d): %.0f rows/s", len(finished), ensemble_size, k,
                    len(X) * len(finished) / max(seconds, 1e-9))

    base = fit_base_clusterings(X, n_clusterings=ensemble_size, random_state=seed, progress=report)
    ensemble = Ensemble(base.labels)
    logger.info(
        "Generated %d base clusterings of %d objects in %.1f s: %d clusters in total (k per clustering %d–%d), "
        "%d microclusters",
        ensemble.n_columns, ensemble.n_objects, time.perf_counter() - started, ensemble.n_clusters_total,
        int(ensemble.n_clusters_per_column.min()), int(ensemble.n_clusters_per_column.max()),
        ensemble.n_microclusters,
    )
    return BaseEnsemble(ensemble, tuple(base.centres), sample, sample_rows)


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
def consensus_labels(ensemble: Ensemble, method: str, n_clusters: int | str, theta: float,
                     seed: int | None) -> Consensus:
    """Consensus labels (N,) by the pipeline ``method`` (LWEA or LWGP), k given or chosen ("auto")."""
    from lwec_tasks.core.consensus import consensus

    logger = get_run_logger()
    result = consensus(ensemble, method, n_clusters, theta=theta, random_state=seed)
    if result.selection is not None:
        best = int(np.argmax(result.selection.scores))
        logger.info("Chose k=%d among k=%d..%d by %s (%.4f)", result.k, int(result.selection.ks.min()),
                    int(result.selection.ks.max()), result.selection.criterion, float(result.selection.scores[best]))
    sizes = np.bincount(result.labels)
    logger.info(
        "%s found %d clusters (k=%d); sizes from %d to %d",
        method.upper(), int((sizes > 0).sum()), result.k, int(sizes[sizes > 0].min()), int(sizes.max()),
    )
    return result
