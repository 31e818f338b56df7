"""EAC and WEAC: average linkage on the (weighted) co-association matrix.

EAC (Fred & Jain 2005): a_ij = (1/M) Σ_m [Cls^m(o_i) = Cls^m(o_j)].
WEAC (Huang, Lai, Wang 2015): the same with base clustering m weighted by
NCAI_m^β / Σ_m' NCAI_m'^β, NCAI the normalised crowd agreement index.

Both are computed on microclusters (objects with identical label rows), which
is exact: identical objects have co-association 1 with each other (distance 0),
so they merge before anything else, and size-weighted average linkage on the
microclusters reproduces the object-level cuts. EAC is LWEA with every cluster
weight equal to 1.
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.baselines._shape import requested_ks, shaped
from lwec_tasks.core.dendrogram_cut import MicroclusterDendrogram
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.lwea_tree import microcluster_linkage
from lwec_tasks.core.metrics import nmi

#: Exponent β on NCAI in WEAC (the authors' demo uses β = 2).
DEFAULT_BETA = 2.0


def coassociation_dendrogram(ensemble: Ensemble, column_weights: np.ndarray) -> MicroclusterDendrogram:
    """Average-link dendrogram of 1 − weighted co-association, on microclusters.

    Parameters
    ----------
    ensemble : encoded ensemble with M columns
    column_weights : (M,) non-negative weights summing to 1; the co-association
        of objects i, j is Σ_m w_m [Cls^m(o_i) = Cls^m(o_j)].
    """
    # microcluster_linkage works on 1 − Σ_shared weight / M; give each cluster M·w_m.
    cluster_weights = (ensemble.n_columns * np.asarray(column_weights, dtype=np.float64))[ensemble.cluster_column]
    sizes = ensemble.microcluster_sizes
    linkage = microcluster_linkage(ensemble, cluster_weights)
    return MicroclusterDendrogram(linkage, np.zeros(len(sizes)), ensemble.microcluster_of, sizes)


def eac(labels, n_clusters, random_state=None) -> np.ndarray:
    """Evidence accumulation clustering: average linkage on the co-association matrix.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int, each in 2..Ñ (distinct label rows)
    random_state : ignored (EAC is deterministic); accepted for a uniform calling shape

    Returns
    -------
    ndarray (N,) for an int ``n_clusters``, else (N, len(n_clusters)); labels
    0..k−1 numbered in order of each cluster's first object.
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters)
    weights = np.full(ensemble.n_columns, 1.0 / ensemble.n_columns)
    dendrogram = coassociation_dendrogram(ensemble, weights)
    return shaped([dendrogram.cut(int(k)) for k in ks], scalar)


def ncai(labels) -> np.ndarray:
    """Normalised crowd agreement index of every base clustering, shape (M,).

    CAI_m = mean over the other columns m' of NMI_max(π_m, π_m'); NCAI = CAI / max CAI.
    With one column, NCAI = [1].
    """
    ensemble = as_ensemble(labels)
    m = ensemble.n_columns
    if m == 1:
        return np.ones(1)
    agreement = np.zeros((m, m))
    for a in range(m):
        for b in range(a + 1, m):
            agreement[a, b] = agreement[b, a] = nmi(ensemble.codes[:, a], ensemble.codes[:, b])
    cai = agreement.sum(axis=1) / (m - 1)
    top = cai.max()
    return cai / top if top > 0 else np.ones(m)


def weac(labels, n_clusters, random_state=None, beta: float = DEFAULT_BETA) -> np.ndarray:
    """Weighted evidence accumulation (WEAC-AL): NCAI^β-weighted co-association + average link.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    n_clusters : int or sequence of int, each in 2..Ñ
    random_state : ignored (deterministic)
    beta : float, default 2 — influence of NCAI on the weights

    Returns
    -------
    ndarray (N,) or (N, len(n_clusters)), as :func:`eac`.
    """
    ensemble = as_ensemble(labels)
    ks, scalar = requested_ks(ensemble, n_clusters)
    influence = ncai(ensemble) ** float(beta)
    total = influence.sum()
    weights = influence / total if total > 0 else np.full(len(influence), 1.0 / len(influence))
    dendrogram = coassociation_dendrogram(ensemble, weights)
    return shaped([dendrogram.cut(int(k)) for k in ks], scalar)
