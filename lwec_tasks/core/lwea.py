"""Locally weighted evidence accumulation (paper Alg. 1), exact and on microclusters.

The dendrogram and its cuts live in :mod:`lwec_tasks.core.lwea_tree` (re-exported
here), below :mod:`lwec_tasks.core.auto_k`, which cuts it while choosing k; this
module adds ``n_clusters="auto"`` on top of both.
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.auto_k import auto_consensus, is_auto
from lwec_tasks.core.eci import DEFAULT_THETA, ensemble_eci
from lwec_tasks.core.ensemble import as_ensemble
from lwec_tasks.core.lwea_tree import lwea_cuts, lwea_dendrogram, microcluster_linkage  # noqa: F401 - re-exported
from lwec_tasks.core.validation import check_theta


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
    return lwea_cuts(ensemble, n_clusters, theta)
