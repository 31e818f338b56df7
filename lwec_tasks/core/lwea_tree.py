"""LWEA's dendrogram over microclusters and its cuts at given ks (paper Alg. 1, without "auto").

Below :mod:`lwec_tasks.core.k_criterion`, which cuts it while choosing k, and
below :mod:`lwec_tasks.core.lwea`, whose :func:`~lwec_tasks.core.lwea.lwea`
adds ``n_clusters="auto"`` on top; both re-export these names.
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.counts_linkage import counts_average_linkage
from lwec_tasks.core.dendrogram_cut import MicroclusterDendrogram
from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.validation import check_n_clusters


def microcluster_linkage(ensemble: Ensemble, eci: np.ndarray) -> np.ndarray:
    """Size-weighted average linkage of the microclusters on 1 − LWCA, (Ñ − 1, 4) scipy format.

    Rows are sorted by merge distance; column 3 counts the microclusters
    (leaves) under each new node. ``eci`` (n_c,) may be any cluster weights:
    M·w_m for every cluster of column m gives EAC's and WEAC's w-weighted co-association.
    Built from cluster counts (:mod:`lwec_tasks.core.counts_linkage`): memory O(Ñ·M).
    """
    return counts_average_linkage(ensemble.microcluster_codes, eci, ensemble.n_columns, ensemble.microcluster_sizes)


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
    # Identical objects i, j have ã_ij = mean ECI of their clusters.
    intra = 1.0 - eci[codes].sum(axis=1) / ensemble.n_columns
    return MicroclusterDendrogram(
        microcluster_linkage(ensemble, eci), intra, ensemble.microcluster_of, ensemble.microcluster_sizes
    )


def lwea_cuts(ensemble: Ensemble, n_clusters, theta: float) -> np.ndarray:
    """:func:`lwec_tasks.core.lwea.lwea` for given ks: ``n_clusters`` an int or a sequence of ints, each in 2..Ñ.

    ``theta`` must already be checked. Returns (N,) labels for an int, else (N, len(n_clusters)).
    """
    ks, scalar = check_n_clusters(
        n_clusters, upper=ensemble.n_microclusters, upper_name="the number of microclusters", auto=True
    )
    dendrogram = lwea_dendrogram(ensemble, ensemble_eci(ensemble, theta))
    cuts = dendrogram.cuts(ks)
    return cuts[:, 0] if scalar else cuts
