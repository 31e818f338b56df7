"""CSPA and MCLA (Strehl & Ghosh, JMLR 2002), partitioned with METIS.

CSPA partitions the co-association graph of the objects. Here its vertices are
the microclusters (objects with identical label rows), weighted by their sizes,
and the edge between microclusters a and b carries the total co-association of
their object pairs, |a|·|b|·(shared clusters); identical objects are thereby
kept together, which a balanced cut of the object graph would almost never
separate anyway (they are joined by the heaviest edges there are).

MCLA partitions the meta-graph of clusters (Jaccard similarity of their member
sets) into k meta-clusters, averages each meta-cluster's indicator vectors into
an association of every object with it, and assigns each object to the
meta-cluster it is most associated with. A meta-cluster that wins no object
disappears, so MCLA may return fewer than k clusters (as in the original).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from lwec_tasks.baselines._shape import microcluster_incidence, requested_ks, seeded_cuts
from lwec_tasks.baselines.graph_partition import metis_partition
from lwec_tasks.core.dendrogram_cut import first_appearance_labels
from lwec_tasks.core.ensemble import as_ensemble


def cspa(labels, n_clusters, random_state=None) -> np.ndarray:
    """Cluster-based similarity partitioning: METIS on the co-association graph.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int, each in 2..Ñ
    random_state : None, int or RandomState — seeds METIS for each k

    Returns
    -------
    ndarray (N,) or (N, len(n_clusters)); labels numbered by first appearance.
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters)
    incidence = microcluster_incidence(ensemble)
    sizes = ensemble.microcluster_sizes.astype(np.float64)
    shared = (incidence @ incidence.T).tocsr().astype(np.float64)
    graph = sp.diags(sizes) @ shared @ sp.diags(sizes)
    return seeded_cuts(ks, scalar, random_state, lambda k, seed: first_appearance_labels(
        metis_partition(graph, k, seed, ensemble.microcluster_sizes)[ensemble.microcluster_of]))


def mcla(labels, n_clusters, random_state=None) -> np.ndarray:
    """Meta-clustering algorithm: METIS on the Jaccard graph of clusters, then majority association.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int, each in 2..min(n_c, Ñ)
    random_state : None, int or RandomState — seeds METIS for each k

    Returns
    -------
    ndarray (N,) or (N, len(n_clusters)); at most k distinct labels per column,
    numbered by first appearance. Ties in association go to the lowest meta-cluster.
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters, within_clusters=True)
    intersection = (ensemble.incidence.T @ ensemble.incidence).tocsr().astype(np.float64)
    sizes = ensemble.cluster_sizes.astype(np.float64)
    coo = intersection.tocoo()
    jaccard = coo.data / (sizes[coo.row] + sizes[coo.col] - coo.data)
    meta_graph = sp.csr_matrix((jaccard, (coo.row, coo.col)), shape=intersection.shape)
    micro = microcluster_incidence(ensemble)

    def cut(k: int, seed: int) -> np.ndarray:
        meta = metis_partition(meta_graph, k, seed)
        membership = sp.csr_matrix((np.ones(len(meta)), (np.arange(len(meta)), meta)), shape=(len(meta), k))
        counts = np.maximum(np.asarray(membership.sum(axis=0)).ravel(), 1.0)
        association = np.asarray((micro @ membership).todense()) / counts
        winner = np.argmax(association, axis=1)
        return first_appearance_labels(winner[ensemble.microcluster_of])

    return seeded_cuts(ks, scalar, random_state, cut)
