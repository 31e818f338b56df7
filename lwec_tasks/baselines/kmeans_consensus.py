"""k-means-based consensus: KCC (Wu et al., TKDE 2015) and SEC (Liu et al., KDD 2015).

Both run k-means on the objects' binary cluster-indicator rows b_i (row i of the
N × n_c incidence matrix, one 1 per base clustering):

- KCC with the categorical utility U_c is plain k-means on b_i; the consensus
  utility it maximises is, up to constants, the k-means objective on these rows.
- SEC shows that spectral clustering (normalised cut) of the co-association
  matrix S = BBᵀ equals weighted k-means on b_i / d_i with weights d_i, where
  d_i = Σ_j S_ij = Σ_m |Cls^m(o_i)|.

Identical label rows give identical points, so k-means runs on one point per
microcluster weighted by its size (same objective, same optimum).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans

from lwec_tasks.baselines._shape import microcluster_incidence, requested_ks, shaped
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.seeds import base_seed, derived_seed

#: k-means restarts per k (best objective kept) and iteration cap.
KMEANS_REPLICATES = 3
KMEANS_MAX_ITER = 100


def _weighted_kmeans_cuts(ensemble: Ensemble, points, weights, ks, random_state) -> list[np.ndarray]:
    base = base_seed(random_state)
    columns = []
    for k in ks:
        model = KMeans(
            n_clusters=int(k),
            n_init=KMEANS_REPLICATES,
            max_iter=KMEANS_MAX_ITER,
            random_state=derived_seed(base, int(k)),
        )
        micro_labels = model.fit_predict(points, sample_weight=weights)
        columns.append(micro_labels[ensemble.microcluster_of])
    return columns


def kcc(labels, n_clusters, random_state=None) -> np.ndarray:
    """k-means-based consensus clustering with the categorical utility U_c.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int, each in 2..Ñ
    random_state : None, int or RandomState — seeds k-means for each k

    Returns
    -------
    ndarray (N,) or (N, len(n_clusters)).
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters)
    points = microcluster_incidence(ensemble).astype(np.float64)
    weights = ensemble.microcluster_sizes.astype(np.float64)
    return shaped(_weighted_kmeans_cuts(ensemble, points, weights, ks, random_state), scalar)


def sec(labels, n_clusters, random_state=None) -> np.ndarray:
    """Spectral ensemble clustering, computed as its equivalent weighted k-means.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int, each in 2..Ñ
    random_state : None, int or RandomState — seeds k-means for each k

    Returns
    -------
    ndarray (N,) or (N, len(n_clusters)).
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters)
    incidence = microcluster_incidence(ensemble).astype(np.float64)
    degree = ensemble.cluster_sizes[ensemble.microcluster_codes].sum(axis=1).astype(np.float64)
    points = sp.diags(1.0 / degree) @ incidence
    weights = degree * ensemble.microcluster_sizes
    return shaped(_weighted_kmeans_cuts(ensemble, points.tocsr(), weights, ks, random_state), scalar)
