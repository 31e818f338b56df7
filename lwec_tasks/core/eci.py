"""Cluster uncertainty H^Π and the ensemble-driven cluster index ECI (paper Defs 3–5)."""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.defaults import DEFAULT_THETA  # noqa: F401 - re-exported
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.validation import check_theta


def ensemble_uncertainty(ensemble: Ensemble) -> np.ndarray:
    """H^Π of every cluster of an encoded ensemble, shape (n_c,), in bits, read-only
    (:attr:`Ensemble.uncertainty <lwec_tasks.core.ensemble.Ensemble.uncertainty>`, computed once per ensemble)."""
    return ensemble.uncertainty


def eci_from_uncertainty(uncertainty: np.ndarray, theta: float, n_columns: int) -> np.ndarray:
    """ECI(C) = exp(-H^Π(C) / (θ·M)) (paper Eq. 9)."""
    return np.exp(-uncertainty / (theta * n_columns))


def ensemble_eci(ensemble: Ensemble, theta: float) -> np.ndarray:
    """ECI per cluster of an encoded ensemble, shape (n_c,); ``theta`` already validated."""
    return eci_from_uncertainty(ensemble_uncertainty(ensemble), theta, ensemble.n_columns)


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
    return ensemble_eci(as_ensemble(labels), theta)
