"""One consensus run as the pipeline needs it: labels plus what explains them.

:func:`lwea` and :func:`lwgp` return labels only. The pipeline also logs the
chosen k with its criterion curve and, for LWEA, the dendrogram it cut, so
:func:`consensus` returns those alongside the labels without building
anything twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.auto_k import KSelection, auto_consensus, is_auto
from lwec_tasks.core.eci import DEFAULT_THETA, ensemble_eci
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.lwea import lwea_dendrogram
from lwec_tasks.core.lwgp import lwgp
from lwec_tasks.core.validation import check_n_clusters, check_theta


@dataclass(frozen=True)
class Consensus:
    """The consensus of one ensemble.

    Attributes
    ----------
    labels : (N,) int64 cluster ids 0..k−1
    k : the number of clusters asked for (chosen when ``selection`` is set)
    selection : the automatic choice of k (candidates and criterion), None when k was given
    linkage : LWEA's dendrogram over microclusters in scipy format, (Ñ − 1, 4); None for LWGP
    """

    labels: np.ndarray
    k: int
    selection: KSelection | None
    linkage: np.ndarray | None


def consensus(ensemble: Ensemble, method: str, n_clusters, theta: float = DEFAULT_THETA,
              random_state=None) -> Consensus:
    """LWEA or LWGP (``method`` "lwea"/"lwgp") into ``n_clusters`` (an int >= 2 or "auto") clusters.

    The labels equal ``lwea(ensemble, k, theta)`` / ``lwgp(ensemble, k, theta, random_state)``;
    for "auto", LWGP's are the cut the criterion scored, and LWEA's dendrogram is
    built once more for its linkage.
    """
    theta = check_theta(theta)
    method = str(method).lower()
    if method not in ("lwea", "lwgp"):
        raise LwecInputError(f"method must be 'lwea' or 'lwgp', got {method!r}")
    selection, labels = None, None
    if is_auto(n_clusters):
        selection, labels = auto_consensus(ensemble, method, theta=theta, random_state=random_state)
        k = int(selection.k)
    else:
        k = n_clusters
    if method == "lwgp":
        if labels is None:
            labels = lwgp(ensemble, k, theta=theta, random_state=random_state)
        return Consensus(np.asarray(labels, dtype=np.int64), int(k), selection, None)
    ks, _ = check_n_clusters(k, upper=ensemble.n_microclusters, upper_name="the number of microclusters")
    dendrogram = lwea_dendrogram(ensemble, ensemble_eci(ensemble, theta))
    labels = dendrogram.cuts(ks)[:, 0]
    return Consensus(np.asarray(labels, dtype=np.int64), int(ks[0]), selection, dendrogram.linkage)
