"""Cluster uncertainty H^Π and the ensemble-driven cluster index ECI (paper Defs 3–5)."""

from __future__ import annotations

import numpy as np

from lwec_tasks.ensemble import Ensemble, as_ensemble
from lwec_tasks.params import check_theta

DEFAULT_THETA = 0.4


def _sum_xlog2x(table: np.ndarray, axis: int) -> np.ndarray:
    positive = np.where(table > 0, table, 1.0)
    return np.sum(table * np.log2(positive), axis=axis)


def _split_entropy(table: np.ndarray, axis: int, sizes: np.ndarray) -> np.ndarray:
    """Entropy (bits) of how each cluster's objects split along ``axis`` of a count table.

    H = -Σ_j (t_j/s) log2(t_j/s) = log2 s - (Σ_j t_j log2 t_j) / s.
    """
    h = np.log2(sizes) - _sum_xlog2x(table, axis) / sizes
    return np.maximum(h, 0.0)  # clip round-off below zero


def ensemble_uncertainty(ensemble: Ensemble) -> np.ndarray:
    """H^Π of every cluster of an encoded ensemble, shape (n_c,), in bits.

    Computed from the M(M-1)/2 pairwise contingency tables: table (a, b) gives
    H^b of every cluster of column a (row entropies) and H^a of every cluster of
    column b (column entropies). A cluster's entropy w.r.t. its own column is 0.
    """
    cached = getattr(ensemble, "_uncertainty", None)
    if cached is not None:
        return cached
    h = np.zeros(ensemble.n_clusters_total)
    offsets, sizes = ensemble.offsets, ensemble.cluster_sizes.astype(np.float64)
    for a in range(ensemble.n_columns):
        rows = slice(offsets[a], offsets[a + 1])
        for b in range(a + 1, ensemble.n_columns):
            cols = slice(offsets[b], offsets[b + 1])
            table = ensemble.contingency(a, b).astype(np.float64)
            h[rows] += _split_entropy(table, 1, sizes[rows])
            h[cols] += _split_entropy(table, 0, sizes[cols])
    h.setflags(write=False)
    ensemble._uncertainty = h
    return h


def eci_from_uncertainty(uncertainty: np.ndarray, theta: float, n_columns: int) -> np.ndarray:
    """ECI(C) = exp(-H^Π(C) / (θ·M)) (paper Eq. 9)."""
    return np.exp(-uncertainty / (theta * n_columns))


def cluster_uncertainty(labels) -> np.ndarray:
    """Uncertainty H^Π of every cluster in the ensemble (paper Def. 4), in bits.

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble

    Returns
    -------
    ndarray of shape (n_c,)
        One value per cluster, clusters ordered column by column and, within a
        column, by ascending label value.
    """
    return ensemble_uncertainty(as_ensemble(labels)).copy()


def eci(labels, theta: float = DEFAULT_THETA) -> np.ndarray:
    """Ensemble-driven cluster index of every cluster (paper Def. 5).

    Parameters
    ----------
    labels : array-like (N, M) or Ensemble
    theta : float, default 0.4
        Must be finite and > 0; smaller values punish uncertain clusters harder.

    Returns
    -------
    ndarray of shape (n_c,), values in (0, 1], in the cluster order of
    :func:`cluster_uncertainty`.
    """
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    return eci_from_uncertainty(ensemble_uncertainty(ensemble), theta, ensemble.n_columns)
