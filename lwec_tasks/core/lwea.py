"""Locally weighted evidence accumulation (paper Alg. 1), exact and on microclusters."""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.average_linkage import microcluster_distances, weighted_average_linkage
from lwec_tasks.core.dendrogram_cut import MicroclusterDendrogram
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.lwca import ensemble_eci
from lwec_tasks.core.validation import check_n_clusters, check_theta
from lwec_tasks.core.eci import DEFAULT_THETA


def lwea_dendrogram(ensemble: Ensemble, eci: np.ndarray) -> MicroclusterDendrogram:
    """Average-link dendrogram of 1 − LWCA, built on the ensemble's microclusters.

    Parameters
    ----------
    ensemble : encoded ensemble (N objects, M columns, Ñ microclusters)
    eci : (n_c,) ECI per cluster

    Returns
    -------
    MicroclusterDendrogram whose cuts equal those of average linkage on the
    dense N × N matrix 1 − LWCA (up to ties between equal distances).
    """
    codes = ensemble.microcluster_codes
    sizes = ensemble.microcluster_sizes
    condensed = microcluster_distances(codes, eci, ensemble.n_columns)
    linkage = weighted_average_linkage(condensed, sizes)
    # Identical objects i, j have ã_ij = mean ECI of their clusters.
    intra = 1.0 - eci[codes].sum(axis=1) / ensemble.n_columns
    return MicroclusterDendrogram(linkage, intra, ensemble.microcluster_of, sizes)


def lwea(labels, n_clusters, theta: float = DEFAULT_THETA) -> np.ndarray:
    """Consensus clustering by LWEA: average linkage on the LWCA matrix.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
        Base clusterings, one per column.
    n_clusters : int or sequence of int
        Number(s) of consensus clusters; each in 2..Ñ (number of microclusters).
        All cuts come from one dendrogram.
    theta : float, default 0.4
        ECI parameter θ > 0.

    Returns
    -------
    ndarray of shape (N,) for an int ``n_clusters``, else (N, len(n_clusters));
    labels 0..k−1 numbered in order of each cluster's first object.
    """
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    ks, scalar = check_n_clusters(
        n_clusters, upper=ensemble.n_microclusters, upper_name="the number of microclusters"
    )
    dendrogram = lwea_dendrogram(ensemble, ensemble_eci(ensemble, theta))
    cuts = dendrogram.cuts(ks)
    return cuts[:, 0] if scalar else cuts
