"""HBGF: the hybrid bipartite graph of objects and clusters, without weights.

Fern & Brodley (2004) cut the bipartite graph whose edges join each object to
the clusters that contain it. Here it is cut by Tcut, exactly as LWGP cuts its
locally weighted graph, so HBGF is LWGP with every ECI equal to 1 — the cleanest
way to see what the local weights add.
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.baselines._shape import requested_ks, seeded_cuts
from lwec_tasks.core.ensemble import as_ensemble
from lwec_tasks.core.lwgp import partition_embedding, tcut_embedding


def hbgf(labels, n_clusters, random_state=None) -> np.ndarray:
    """Consensus by cutting the unweighted object–cluster bipartite graph (Tcut).

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int, each in 2..min(n_c, Ñ)
    random_state : None, int or RandomState — seeds the k-means of each k

    Returns
    -------
    ndarray (N,) or (N, len(n_clusters)).
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters, within_clusters=True)
    unit = np.ones(ensemble.n_clusters_total)
    embedding = tcut_embedding(ensemble, unit, int(ks.max()))
    first = ensemble.microcluster_representative
    weights = ensemble.microcluster_sizes.astype(np.float64)
    return seeded_cuts(ks, scalar, random_state, lambda k, seed: partition_embedding(
        embedding[first], k, seed, weights)[ensemble.microcluster_of])
