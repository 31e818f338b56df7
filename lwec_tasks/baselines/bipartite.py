"""HBGF: the hybrid bipartite graph of objects and clusters, without weights.

Fern & Brodley (2004) cut the bipartite graph whose edges join each object to
the clusters that contain it. Here it is cut by Tcut, exactly as LWGP cuts its
locally weighted graph, so HBGF is LWGP with every ECI equal to 1 — the cleanest
way to see what the local weights add.
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.baselines._shape import requested_ks, shaped
from lwec_tasks.core.ensemble import as_ensemble
from lwec_tasks.core.lwgp import partition_embedding, tcut_embedding
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.validation import check_n_clusters


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
    ks, scalar = requested_ks(ensemble, n_clusters)
    check_n_clusters(
        n_clusters, upper=ensemble.n_clusters_total, upper_name="the number of clusters in the ensemble"
    )
    unit = np.ones(ensemble.n_clusters_total)
    embedding = tcut_embedding(ensemble, unit, int(ks.max()))
    first = ensemble.microcluster_representative
    weights = ensemble.microcluster_sizes.astype(np.float64)
    base = base_seed(random_state)
    columns = [
        partition_embedding(embedding[first], int(k), derived_seed(base, int(k)), weights)[
            ensemble.microcluster_of
        ]
        for k in ks
    ]
    return shaped(columns, scalar)
