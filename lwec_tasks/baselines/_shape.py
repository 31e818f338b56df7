"""Shared argument handling for the baselines: one k or a list of ks."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.validation import check_n_clusters


def requested_ks(ensemble: Ensemble, n_clusters, within_clusters: bool = False) -> tuple[np.ndarray, bool]:
    """Validate ``n_clusters`` against the ensemble; return (ks, scalar).

    A consensus of Ñ distinct label rows (microclusters) cannot have more than
    Ñ clusters, so each k must be in 2..Ñ; with ``within_clusters`` (methods that
    partition the clusters), also at most n_c, the number of clusters in the ensemble.
    """
    ks, scalar = check_n_clusters(n_clusters, upper=ensemble.n_microclusters,
                                  upper_name="the number of distinct label rows (microclusters)")
    if within_clusters:
        check_n_clusters(n_clusters, upper=ensemble.n_clusters_total,
                         upper_name="the number of clusters in the ensemble")
    return ks, scalar


def seeded_cuts(ks: np.ndarray, scalar: bool, random_state, cut: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """``cut(k, seed)`` (N,) for every k, seeded from ``random_state`` and k; stacked as :func:`shaped`."""
    base = base_seed(random_state)
    return shaped([cut(int(k), derived_seed(base, int(k))) for k in ks], scalar)


def shaped(columns: list[np.ndarray], scalar: bool) -> np.ndarray:
    """Stack one label vector per k into (N, len(ks)), or return the single vector."""
    cuts = np.column_stack(columns)
    return cuts[:, 0] if scalar else cuts


def microcluster_incidence(ensemble: Ensemble):
    """(Ñ, n_c) sparse 0/1 incidence of each microcluster's label row."""
    return ensemble.incidence[ensemble.microcluster_representative]
