"""Locally weighted evidence accumulation (paper Alg. 1), exact and on microclusters."""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.auto_k import auto_consensus, is_auto
from lwec_tasks.core.average_linkage import microcluster_distances, weighted_average_linkage
from lwec_tasks.core.dendrogram_cut import MicroclusterDendrogram
from lwec_tasks.core.eci import DEFAULT_THETA, ensemble_eci
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.validation import check_n_clusters, check_theta


def microcluster_linkage(ensemble: Ensemble, eci: np.ndarray) -> np.ndarray:
    """Size-weighted average linkage of the microclusters on 1 − LWCA, (Ñ − 1, 4) scipy format.

    Rows are sorted by merge distance; column 3 counts the microclusters
    (leaves) under each new node.
    """
    condensed = microcluster_distances(ensemble.microcluster_codes, eci, ensemble.n_columns)
    return weighted_average_linkage(condensed, ensemble.microcluster_sizes)


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


def lwea_linkage(labels, theta: float = DEFAULT_THETA) -> tuple[np.ndarray, np.ndarray]:
    """LWEA's dendrogram over microclusters as a scipy linkage matrix.

    The leaves are the microclusters (objects with identical label rows, which
    LWEA merges with each other before anything else); Z is average linkage on
    1 − LWCA between them with each microcluster weighted by its number of
    objects — the dendrogram :func:`lwea` cuts. Every scipy function that takes
    a linkage matrix accepts Z (``fcluster``, ``cut_tree``, ``dendrogram``, ...).

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    theta : float, default 0.4

    Returns
    -------
    microcluster_of : ndarray (N,) int64
        The leaf of each object: leaf j of Z holds the objects with
        ``microcluster_of == j``; ``np.bincount(microcluster_of)`` gives the
        number of objects of each leaf.
    Z : ndarray (Ñ − 1, 4) float64
        Rows in order of non-decreasing merge distance (column 2); column 3 is
        the number of leaves (microclusters) under the new node, as scipy
        requires (it rejects counts above Ñ).

    Notes
    -----
    ``cut_tree(Z, k)[microcluster_of]`` equals ``lwea(labels, k)`` (up to label
    names) whenever that cut keeps every microcluster whole. The full object
    dendrogram also merges each microcluster's objects with each other, at
    distance 1 − (mean ECI of its clusters); when that is above Z's lowest
    kept merges, ``lwea`` splits the microcluster, which Z cannot express.
    """
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    tree = microcluster_linkage(ensemble, ensemble_eci(ensemble, theta))
    return ensemble.microcluster_of.copy(), tree


def lwea(labels, n_clusters, theta: float = DEFAULT_THETA) -> np.ndarray:
    """Consensus clustering by LWEA: average linkage on the LWCA matrix.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
        Base clusterings, one per column.
    n_clusters : int, sequence of int or "auto"
        Number(s) of consensus clusters; each in 2..Ñ (number of microclusters).
        All cuts come from one dendrogram. "auto" chooses k by
        :func:`lwec_tasks.core.auto_k.select_k` (k in 2..min(50, Ñ)).
    theta : float, default 0.4
        ECI parameter θ > 0.

    Returns
    -------
    ndarray of shape (N,) for an int ``n_clusters`` or "auto", else
    (N, len(n_clusters)); labels 0..k−1 numbered in order of each cluster's
    first object.
    """
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    if is_auto(n_clusters):
        return auto_consensus(ensemble, "lwea", theta)[1]
    ks, scalar = check_n_clusters(
        n_clusters, upper=ensemble.n_microclusters, upper_name="the number of microclusters", auto=True
    )
    dendrogram = lwea_dendrogram(ensemble, ensemble_eci(ensemble, theta))
    cuts = dendrogram.cuts(ks)
    return cuts[:, 0] if scalar else cuts
