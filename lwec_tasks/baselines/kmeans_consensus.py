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

from lwec_tasks.baselines._shape import microcluster_incidence, requested_ks, seeded_cuts
from lwec_tasks.core.ensemble import Ensemble, as_ensemble

#: k-means restarts per k (best objective kept) and iteration cap.
KMEANS_REPLICATES = 3
KMEANS_MAX_ITER = 100


def _kmeans_consensus(labels, n_clusters, random_state, weighted_points) -> np.ndarray:
    """Weighted k-means on one point per microcluster, for every requested k.

    ``weighted_points(ensemble)`` gives the (Ñ, n_c) points and the (Ñ,) float64
    weights; each k-means is seeded from ``random_state`` and k. Returns (N,) or
    (N, len(n_clusters)), each object labelled by its microcluster.
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters)
    points, weights = weighted_points(ensemble)

    def cut(k: int, seed: int) -> np.ndarray:
        model = KMeans(n_clusters=k, n_init=KMEANS_REPLICATES, max_iter=KMEANS_MAX_ITER, random_state=seed)
        return model.fit_predict(points, sample_weight=weights)[ensemble.microcluster_of]

    return seeded_cuts(ks, scalar, random_state, cut)


def _indicator_rows(ensemble: Ensemble) -> tuple[sp.csr_matrix, np.ndarray]:
    """KCC's points: the microclusters' indicator rows b_i, weighted by microcluster size."""
    points = microcluster_incidence(ensemble).astype(np.float64)
    return points, ensemble.microcluster_sizes.astype(np.float64)


def _degree_scaled_indicator_rows(ensemble: Ensemble) -> tuple[sp.csr_matrix, np.ndarray]:
    """SEC's points: b_i / d_i, weighted by d_i times the microcluster size (d_i = Σ_m |Cls^m(o_i)|)."""
    incidence = microcluster_incidence(ensemble).astype(np.float64)
    degree = ensemble.cluster_sizes[ensemble.microcluster_codes].sum(axis=1).astype(np.float64)
    points = sp.diags(1.0 / degree) @ incidence
    return points.tocsr(), degree * ensemble.microcluster_sizes


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
    return _kmeans_consensus(labels, n_clusters, random_state, _indicator_rows)


def sec(labels, n_clusters, random_state=None) -> np.ndarray:
    """Spectral ensemble clustering, computed as its equivalent weighted k-means.

    Parameters and result as :func:`kcc`: ``labels`` (N, M) or Ensemble,
    ``n_clusters`` an int or ints in 2..Ñ, ``random_state`` seeding k-means for
    each k; returns (N,) or (N, len(n_clusters)).
    """
    return _kmeans_consensus(labels, n_clusters, random_state, _degree_scaled_indicator_rows)
