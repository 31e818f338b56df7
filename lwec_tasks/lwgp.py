"""Locally weighted graph partitioning (paper Alg. 2): the LWBG cut by Tcut.

Tcut (Li et al., CVPR 2012) partitions the bipartite graph of objects and
clusters by solving the normalised-cut eigenproblem on the small cluster graph
Wy = Bᵀ Dx⁻¹ B and transferring the eigenvectors to the objects.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.cluster import KMeans

from lwec_tasks.ensemble import Ensemble, as_ensemble
from lwec_tasks.lwca import ensemble_eci
from lwec_tasks.params import check_n_clusters, check_theta
from lwec_tasks.seeds import base_seed, derived_seed
from lwec_tasks.uncertainty import DEFAULT_THETA

# Tcut's k-means settings in the authors' code.
KMEANS_MAX_ITER = 100
KMEANS_REPLICATES = 3
# Guards 1/‖row‖ for an all-zero embedding row, as in the authors' code.
_ROW_NORM_EPS = 1e-10


def bipartite_weights(ensemble: Ensemble, eci: np.ndarray) -> sp.csr_matrix:
    """(N, n_c) LWBG cross-affinity B: B[i, c] = ECI(c) if object i is in cluster c."""
    return ensemble.incidence.multiply(eci[np.newaxis, :]).tocsr()


def cluster_graph(b: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Return (Wy, dx): Wy = Bᵀ Dx⁻¹ B as a dense (n_c, n_c) array and dx = B·1 (N,)."""
    dx = np.asarray(b.sum(axis=1)).ravel()
    scaled = sp.diags(1.0 / dx) @ b
    return (b.T @ scaled).toarray(), dx


def tcut_embedding(ensemble: Ensemble, eci: np.ndarray, n_vectors: int) -> np.ndarray:
    """Leading ``n_vectors`` Ncut eigenvectors transferred to the objects (not row-normalised).

    Returns
    -------
    ndarray of shape (N, n_vectors): Dx⁻¹ B D^{-1/2} V, V the leading eigenvectors
    (by descending eigenvalue) of D^{-1/2} Wy D^{-1/2}, D = diag(Wy·1).
    """
    b = bipartite_weights(ensemble, eci)
    wy, dx = cluster_graph(b)
    inv_sqrt_d = 1.0 / np.sqrt(wy.sum(axis=1))
    normalised = wy * inv_sqrt_d[:, None] * inv_sqrt_d[None, :]
    normalised = (normalised + normalised.T) / 2
    n_c = len(normalised)
    _, vectors = scipy.linalg.eigh(normalised, subset_by_index=[n_c - n_vectors, n_c - 1])
    vectors = vectors[:, ::-1] * inv_sqrt_d[:, None]
    return (b @ vectors) / dx[:, None]


def partition_embedding(
    embedding: np.ndarray, k: int, seed: int, sample_weight: np.ndarray | None = None
) -> np.ndarray:
    """k-means on the first k embedding columns after row normalisation; (rows,) labels."""
    rows = embedding[:, :k]
    rows = rows / (np.sqrt((rows * rows).sum(axis=1, keepdims=True)) + _ROW_NORM_EPS)
    model = KMeans(
        n_clusters=k, n_init=KMEANS_REPLICATES, max_iter=KMEANS_MAX_ITER, random_state=seed
    )
    return model.fit_predict(rows, sample_weight=sample_weight)


def lwgp(labels, n_clusters, theta: float = DEFAULT_THETA, random_state=None) -> np.ndarray:
    """Consensus clustering by LWGP: Tcut on the locally weighted bipartite graph.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int
        Each k in 2..min(n_c, Ñ) (clusters in the ensemble, microclusters). One
        eigensolve serves every k.
    theta : float, default 0.4
    random_state : None, int or RandomState
        Seeds k-means; the labels for a given k do not depend on which other
        ks are requested.

    Returns
    -------
    ndarray of shape (N,) for an int ``n_clusters``, else (N, len(n_clusters)).
    """
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    ks, scalar = check_n_clusters(
        n_clusters, upper=ensemble.n_clusters_total, upper_name="the number of clusters in the ensemble"
    )
    check_n_clusters(
        n_clusters,
        upper=ensemble.n_microclusters,
        upper_name="the number of distinct label rows (microclusters)",
    )
    embedding = tcut_embedding(ensemble, ensemble_eci(ensemble, theta), int(ks.max()))
    # Objects with identical label rows have identical embedding rows: cluster
    # one row per microcluster, weighted by its size.
    first = ensemble.microcluster_representative
    weights = ensemble.microcluster_sizes.astype(np.float64)
    base = base_seed(random_state)
    columns = [
        partition_embedding(embedding[first], int(k), derived_seed(base, int(k)), weights)[
            ensemble.microcluster_of
        ]
        for k in ks
    ]
    cuts = np.column_stack(columns)
    return cuts[:, 0] if scalar else cuts
