"""The explicit N × N locally weighted co-association matrix, for checking what is computed without it."""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.ensemble import Ensemble


def dense_lwca(ensemble: Ensemble, eci: np.ndarray) -> np.ndarray:
    """(N, N) ã_ij = (1/M) Σ_m ECI(Cls^m(o_i))·[Cls^m(o_i) = Cls^m(o_j)] (paper Eq. 10), diagonal included;
    ``eci`` (n_c,) per global cluster code."""
    codes = ensemble.global_codes
    return sum(eci[codes[:, j]][:, None] * (codes[:, j][:, None] == codes[:, j][None, :])
               for j in range(ensemble.n_columns)) / ensemble.n_columns
