"""The locally weighted co-association matrix (paper Def. 7)."""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.eci import DEFAULT_THETA, ensemble_eci
from lwec_tasks.core.ensemble import as_ensemble
from lwec_tasks.core.memory import ensure_fits
from lwec_tasks.core.validation import check_theta


def lwca(labels, theta: float = DEFAULT_THETA) -> np.ndarray:
    """Dense N × N LWCA matrix: ã_ij = (1/M) Σ_m ECI(Cls^m(o_i)) · [Cls^m(o_i) = Cls^m(o_j)].

    The diagonal is set to 1, as in the authors' code. Intended for inspection and
    small N: raises :class:`~lwec_tasks.core.errors.LwecMemoryError` when the matrix
    would not fit in memory (LWEA itself never builds it).

    Returns
    -------
    ndarray of shape (N, N), float64, symmetric, entries in [0, 1].
    """
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    n = ensemble.n_objects
    ensure_fits(
        2 * n * n * 8,
        f"the dense LWCA matrix for N={n} objects",
        "use lwea() (works on microclusters) or lwgp() instead",
    )
    weights = ensemble_eci(ensemble, theta)
    incidence = ensemble.incidence
    weighted = incidence.multiply(weights[np.newaxis, :]).tocsr()
    matrix = (weighted @ incidence.T).toarray() / ensemble.n_columns
    np.fill_diagonal(matrix, 1.0)
    return matrix
