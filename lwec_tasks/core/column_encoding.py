"""Compiled O(N) encoding of one label column into compact codes (lookup table)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def label_range(column):
    """(min, max) of an integer column, as int64."""
    low = np.int64(column[0])
    high = low
    for i in range(column.shape[0]):
        value = np.int64(column[i])
        if value < low:
            low = value
        elif value > high:
            high = value
    return low, high


@numba.njit(cache=True)
def lookup_encode(column, low, high, out):
    """Write codes 0..n−1 (ascending label order) of ``column`` into ``out``.

    Parameters
    ----------
    column : (N,) integer labels within [low, high]
    out : (N,) int32, filled in place

    Returns
    -------
    (values, sizes): (n,) int64 label value and object count of each code.
    """
    span = high - low + 1
    counts = np.zeros(span, dtype=np.int64)
    for i in range(column.shape[0]):
        counts[np.int64(column[i]) - low] += 1
    lookup = np.empty(span, dtype=np.int32)
    n_codes = 0
    for v in range(span):
        if counts[v] > 0:
            lookup[v] = n_codes
            n_codes += 1
    values = np.empty(n_codes, dtype=np.int64)
    sizes = np.empty(n_codes, dtype=np.int64)
    for v in range(span):
        if counts[v] > 0:
            values[lookup[v]] = low + v
            sizes[lookup[v]] = counts[v]
    for i in range(column.shape[0]):
        out[i] = lookup[np.int64(column[i]) - low]
    return values, sizes
