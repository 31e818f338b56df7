"""Sums over partitions that need no numba kernels: column moments (the standardisation's mean and scale)
and element-wise sums of tables.

Plain numpy: the read and the base clusterings load no numba kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class Moments:
    """Count, mean and sum of squared deviations (M2) of each column of a set of rows."""

    n: int
    mean: np.ndarray
    m2: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray) -> Moments:
        """The moments of the rows of X (n, d): mean = X.mean(axis=0), M2 = ((X - mean) ** 2).sum(axis=0), the
        same values bit for bit; for a row-major float64 X of two or more columns (a partition's features) M2 comes
        from :func:`squared_deviation_sums`, without numpy's two (n, d) temporaries."""
        if len(X) == 0:
            return cls(0, np.zeros(X.shape[1]), np.zeros(X.shape[1]))
        mean = X.mean(axis=0)
        if X.dtype == np.float64 and X.ndim == 2 and X.shape[1] > 1 and X.flags.c_contiguous:
            return cls(len(X), mean, squared_deviation_sums(X, mean))
        return cls(len(X), mean, ((X - mean) ** 2).sum(axis=0))

    def __add__(self, other: Moments) -> Moments:
        """Chan et al.'s pairwise update: exact in real arithmetic, stable in floating point."""
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        n = self.n + other.n
        delta = other.mean - self.mean
        return Moments(n, self.mean + delta * (other.n / n), self.m2 + other.m2 + delta**2 * (self.n * other.n / n))

    @property
    def variance(self) -> np.ndarray:
        """Population variance (ddof 0), as scikit-learn's scalers and k-means use."""
        return self.m2 / self.n


#: Rows whose squared deviations :func:`squared_deviation_sums` holds at a time (1 MiB at 16 columns).
DEVIATION_BLOCK_ROWS = 8192


def squared_deviation_sums(X: np.ndarray, mean: np.ndarray, block_rows: int = DEVIATION_BLOCK_ROWS) -> np.ndarray:
    """(d,) Σ_i (X[i, j] − mean[j])² of the row-major (n, d) X: numpy's ``((X - mean) ** 2).sum(axis=0)`` bit
    for bit when d > 1, without its two (n, d) temporaries.

    Along the first axis of such an array numpy adds the rows in order. The deviations are squared
    ``block_rows`` rows at a time, below a first row holding the sums so far, so summing that block makes the
    very additions the whole array's sum makes.
    """
    block = np.empty((min(block_rows, len(X)) + 1, X.shape[1]))
    sums = np.zeros(X.shape[1])
    for start in range(0, len(X), block_rows):
        rows = X[start:start + block_rows]
        deviations = block[1:len(rows) + 1]
        np.subtract(rows, mean, out=deviations)
        np.multiply(deviations, deviations, out=deviations)
        block[0] = sums
        sums = block[:len(rows) + 1].sum(axis=0)
    return sums


def standard_scale(moments: Moments) -> np.ndarray:
    """Per-column scale of a z-score: √variance, 1 for (near-)constant columns (scikit-learn's StandardScaler rule)."""
    variance = moments.variance
    eps = np.finfo(np.float64).eps
    constant = variance <= moments.n * eps * variance + (moments.n * moments.mean * eps) ** 2
    scale = np.sqrt(variance)
    scale[constant] = 1.0
    return scale


def add_tables(*parts: list) -> list:
    """Element-wise sum of lists of tables (sparse matrices or arrays), in the order given."""
    total = list(parts[0])
    for part in parts[1:]:
        for j, table in enumerate(part):
            total[j] = total[j] + table
    return [t.tocsr() if sp.issparse(t) else t for t in total]
