"""Locally weighted graph partitioning (paper Alg. 2): the LWBG cut by Tcut.

Tcut (Li et al., CVPR 2012) partitions the bipartite graph of objects and
clusters by solving the normalised-cut eigenproblem on the small cluster graph
Wy = Bᵀ Dx⁻¹ B and transferring the eigenvectors to the objects.

Nothing here builds the N × n_c matrix B: Wy is accumulated from the M(M+1)/2
pairwise code tables and the transfer Dx⁻¹ B V is an M-term gather per object
(:mod:`lwec_tasks.core.pair_kernels`), so memory stays O(N·M + n_c²) and ten million
objects fit in a few GB. One eigensolve serves every k.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from lwec_tasks.core.defaults import is_auto
from lwec_tasks.core.eci import DEFAULT_THETA, ensemble_eci
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.k_criterion import choose_k, consensus_cuts
from lwec_tasks.core.memory import ensure_fits
from lwec_tasks.core.pair_kernels import (
    cluster_graph_dense,
    column_major_codes,
    graph_blocks,
    object_degrees,
    sparse_cluster_graph,
    transfer_rows,
)
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.spectral import normalised_graph_eigenvectors
from lwec_tasks.core.thread_pools import single_threaded
from lwec_tasks.core.validation import check_n_clusters, check_theta

# Tcut's k-means settings in the authors' code.
KMEANS_MAX_ITER = 100
KMEANS_REPLICATES = 3
# Above this many rows (for LWGP: microclusters, e.g. 10⁷ objects with no two
# label rows alike) k-means is seeded on a uniform sample of SAMPLE_SIZE rows
# (the replicates run there), and the best centres are then refined by Lloyd
# iterations on all rows. The sample holds enough points per cluster for stable
# centres, and a Lloyd pass over all rows costs one read of the embedding.
SAMPLE_THRESHOLD = 500_000
SAMPLE_SIZE = 200_000
# Guards 1/‖row‖ for an all-zero embedding row, as in the authors' code.
_ROW_NORM_EPS = 1e-10
# Wy is built dense up to this many clusters (n_c² floats), sparse above.
DENSE_GRAPH_LIMIT = 16_000


def normalised_cluster_graph(ensemble: Ensemble, weights: np.ndarray):
    """Return (D^{-1/2} Wy D^{-1/2}, dx), D = diag(Wy·1), without forming Wy.

    Wy = Bᵀ Dx⁻¹ B (n_c, n_c), dx = B·1 (N,), B = incidence·diag(weights);
    ``weights`` (n_c,) are the cluster weights of the bipartite graph (ECI for
    LWGP, all ones for HBGF). Wy·1 = Bᵀ Dx⁻¹ B·1 = Bᵀ·1, so D[c] = w_c·|c| in
    closed form, and entry (c, c') = s_c s_c' Σ_{i∈c∩c'} 1/dx_i with
    s = √(w / |c|). A dense ndarray up to ``DENSE_GRAPH_LIMIT`` clusters, else a
    sparse CSR matrix assembled from the pairwise blocks (as the partitioned
    pipeline assembles it).
    """
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    return _accumulated_graph(ensemble, weights, np.sqrt(weights / ensemble.cluster_sizes))


def _accumulated_graph(ensemble: Ensemble, weights: np.ndarray, factors: np.ndarray):
    """(F Aᵀ Dx⁻¹ A F, dx): A the 0/1 incidence matrix, F = diag(factors), dx = A·weights."""
    codes_t = column_major_codes(ensemble.codes)
    offsets = ensemble.offsets.astype(np.int64)
    dx = object_degrees(codes_t, offsets, weights)
    inv_dx = 1.0 / dx
    factors = np.ascontiguousarray(factors, dtype=np.float64)
    n_c = ensemble.n_clusters_total
    if n_c <= DENSE_GRAPH_LIMIT:
        ensure_fits(n_c * n_c * 8 * 2, f"the dense cluster graph of {n_c} clusters")
        return cluster_graph_dense(codes_t, offsets, factors, inv_dx), dx
    return sparse_cluster_graph(graph_blocks(codes_t, offsets, inv_dx), offsets, factors), dx


def tcut_cluster_vectors(ensemble: Ensemble, weights: np.ndarray, n_vectors: int):
    """Solve the Tcut eigenproblem once; return (U, inv_dx).

    U (n_c, n_vectors) = diag(weights) D^{-1/2} V, V the leading eigenvectors (by
    descending eigenvalue) of D^{-1/2} Wy D^{-1/2}, D = diag(Wy·1); the embedding
    of object i is then Σ_m U[its cluster in column m] / dx_i.

    The normalised graph is accumulated directly (:func:`normalised_cluster_graph`);
    Wy itself is never stored. The eigenvalue-1 space (one vector per connected
    component of the graph) gets a fixed basis, so the embedding is unique even
    for a disconnected graph. All weights must be > 0.
    """
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    normalised, dx = normalised_cluster_graph(ensemble, weights)
    return graph_cluster_vectors(normalised, weights, ensemble.cluster_sizes, n_vectors)[0], 1.0 / dx


def graph_cluster_vectors(normalised, weights: np.ndarray, sizes: np.ndarray, n_vectors: int):
    """(U, number of connected components) of the normalised cluster graph D^{-1/2} Wy D^{-1/2}.

    U (n_c, n_vectors) = diag(weights) D^{-1/2} V = √(weights / sizes) ⊙ V, V its
    leading eigenvectors (the eigenvalue-1 space with a fixed basis:
    :func:`~lwec_tasks.core.spectral.normalised_graph_eigenvectors`); ``sizes`` (n_c,) the
    cluster sizes. Shared by :func:`tcut_cluster_vectors` and the partitioned pipeline.
    """
    vectors, n_components = normalised_graph_eigenvectors(normalised, weights * sizes, n_vectors)
    return vectors * np.sqrt(weights / sizes)[:, None], n_components


def tcut_embedding(
    ensemble: Ensemble, weights: np.ndarray, n_vectors: int, rows: np.ndarray | None = None
) -> np.ndarray:
    """Leading ``n_vectors`` Ncut eigenvectors transferred to the objects (not row-normalised).

    Parameters
    ----------
    weights : (n_c,) cluster weights of the bipartite graph, all > 0 (ECI for
        LWGP, all ones for HBGF)
    rows : optional (R,) object indices; default all N objects

    Returns
    -------
    ndarray of shape (N or R, n_vectors): Dx⁻¹ B D^{-1/2} V.
    """
    cluster_vectors, inv_dx = tcut_cluster_vectors(ensemble, np.asarray(weights, float), n_vectors)
    return transfer_rows(column_major_codes(ensemble.codes), ensemble.offsets, cluster_vectors, inv_dx, rows)


def partition_embedding(
    embedding: np.ndarray, k: int, seed: int, sample_weight: np.ndarray | None = None
) -> np.ndarray:
    """k-means on the first k embedding columns after row normalisation; (rows,) labels."""
    return kmeans_labels(normalised_rows(embedding, k), int(k), seed, sample_weight)


def normalised_rows(embedding: np.ndarray, k: int) -> np.ndarray:
    """The first k embedding columns with each row scaled to unit length, as k-means sees them; a new (rows, k)."""
    rows = np.array(embedding[:, :k], dtype=np.float64)
    rows /= np.sqrt((rows * rows).sum(axis=1, keepdims=True)) + _ROW_NORM_EPS
    return rows


def kmeans_labels(
    rows: np.ndarray, k: int, seed: int, sample_weight: np.ndarray | None = None
) -> np.ndarray:
    """Seeded weighted k-means of the rows of ``rows``.

    scikit-learn's ``KMeans`` (k-means++ seeding, Lloyd) with the authors'
    settings: ``KMEANS_REPLICATES`` runs, the lowest inertia wins, at most
    ``KMEANS_MAX_ITER`` iterations each; above ``SAMPLE_THRESHOLD`` rows the runs
    happen on a sample and the winner is refined on all rows. One thread, so
    the same seed gives the same labels on any machine.

    Parameters
    ----------
    rows : (n, d) float64, C-contiguous; used as scratch space (scikit-learn
        centres it in place and adds the mean back, which saves a copy)
    k : number of clusters, 1 <= k <= n
    seed : int, seeds the sample and k-means
    sample_weight : (n,) positive weights (a row of weight w counts as w
        identical rows), default all 1

    Returns
    -------
    (n,) int64 labels in 0..k−1.
    """
    with single_threaded():
        if len(rows) <= SAMPLE_THRESHOLD:
            return _kmeans(k, seed).fit(rows, sample_weight=sample_weight).labels_.astype(np.int64)
        sample = np.sort(np.random.default_rng(seed).choice(len(rows), SAMPLE_SIZE, replace=False))
        weights = None if sample_weight is None else sample_weight[sample]
        seeded = _kmeans(k, seed).fit(rows[sample], sample_weight=weights)
        refined = _kmeans(k, seed, init=seeded.cluster_centers_).fit(rows, sample_weight=sample_weight)
        return refined.labels_.astype(np.int64)


def _kmeans(k: int, seed: int, init="k-means++"):
    """scikit-learn's KMeans with the authors' settings; a given ``init`` (centres) runs once."""
    from sklearn.cluster import KMeans

    return KMeans(
        n_clusters=k,
        init=init,
        n_init=KMEANS_REPLICATES if isinstance(init, str) else 1,
        max_iter=KMEANS_MAX_ITER,
        algorithm="lloyd",
        random_state=seed,
        copy_x=False,
    )


def lwgp(labels, n_clusters, theta: float = DEFAULT_THETA, random_state=None) -> np.ndarray:
    """Consensus clustering by LWGP: Tcut on the locally weighted bipartite graph.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int, sequence of int or "auto"
        Each k in 2..min(n_c, Ñ) (clusters in the ensemble, microclusters). One
        eigensolve serves every k. "auto" chooses k by
        :func:`lwec_tasks.core.auto_k.select_k` (k in 2..min(50, n_c, Ñ)).
    theta : float, default 0.4
    random_state : None, int or RandomState
        Seeds k-means; the labels for a given k do not depend on which other
        ks are requested.

    Returns
    -------
    ndarray of shape (N,) for an int ``n_clusters`` or "auto", else (N, len(n_clusters)).
    """
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    if is_auto(n_clusters):
        # = auto_k.auto_consensus(ensemble, "lwgp", theta, random_state=random_state)[1]; auto_k imports
        # this module, so its machinery (k_criterion, below) is given this function
        return choose_k(ensemble, "lwgp", theta, random_state=random_state, cut=partial(consensus_cuts, lwgp=lwgp))[1]
    ks, scalar = check_n_clusters(
        n_clusters,
        upper=ensemble.n_clusters_total,
        upper_name="the number of clusters in the ensemble",
        auto=True,
    )
    check_n_clusters(
        n_clusters,
        upper=ensemble.n_microclusters,
        upper_name="the number of distinct label rows (microclusters)",
    )
    base = base_seed(random_state)
    cluster_eci = ensemble_eci(ensemble, theta)
    if not np.all(cluster_eci > 0):
        raise LwecInputError(
            f"theta={theta} is too small: the ECI of {int(np.sum(cluster_eci == 0))} of "
            f"{len(cluster_eci)} clusters underflows to 0, leaving objects without links in the "
            "bipartite graph; use a larger theta"
        )
    cluster_vectors, inv_dx = tcut_cluster_vectors(ensemble, cluster_eci, int(ks.max()))
    # k-means on one embedded row per microcluster, weighted by its size: identical label rows have
    # identical embedding rows, so this is k-means on all rows, exactly
    rows = ensemble.microcluster_representative
    sample_weight = ensemble.microcluster_sizes.astype(np.float64)
    embedding = transfer_rows(column_major_codes(ensemble.codes), ensemble.offsets, cluster_vectors, inv_dx, rows)
    cuts = np.empty((ensemble.n_objects, len(ks)), dtype=np.int64)
    for j, k in enumerate(ks):
        labels_k = partition_embedding(embedding, int(k), derived_seed(base, int(k)), sample_weight)
        cuts[:, j] = labels_k[ensemble.microcluster_of]
    return cuts[:, 0] if scalar else cuts
