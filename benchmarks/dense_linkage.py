"""The dense reference for LWEA's linkage: size-weighted average linkage by the nearest-neighbour chain on
a condensed distance matrix (compiled with numba), O(Ñ²) memory.

The package builds the same dendrogram from cluster counts
(:mod:`lwec_tasks.core.counts_linkage`); this is what it replaced, kept for the tests and benchmarks that
compare the two. Starting the clusters with sizes > 1 (microclusters) gives the same dendrogram as expanding
every microcluster into its identical objects.
"""

from __future__ import annotations

import numba
import numpy as np

from lwec_tasks.core.linkage_numbering import scipy_numbering
from lwec_tasks.core.memory import ensure_fits


@numba.njit(inline="always")
def _condensed_index(n, i, j):
    if i > j:
        i, j = j, i
    return n * i - (i * (i + 1)) // 2 + (j - i - 1)


@numba.njit(parallel=True, cache=True)
def _lwca_distances(codes, weights, n_columns):
    n, m = codes.shape
    out = np.empty(n * (n - 1) // 2)
    for t in numba.prange(n - 1):
        # Rows alternate from both ends (0, n−2, 1, n−3, …) so that the static
        # split of the range gives each thread the same number of pairs.
        a = t // 2 if t % 2 == 0 else n - 2 - t // 2
        base = n * a - (a * (a + 1)) // 2 - a - 1
        for b in range(a + 1, n):
            shared = 0.0
            for c in range(m):
                if codes[a, c] == codes[b, c]:
                    shared += weights[codes[a, c]]
            out[base + b] = 1.0 - shared / n_columns
    return out


def microcluster_distances(micro_codes: np.ndarray, weights: np.ndarray, n_columns: int) -> np.ndarray:
    """Condensed distances 1 − (Σ weight of the shared clusters) / M between microclusters.

    With ECI as the weights this is 1 − LWCA (LWEA); with M·w_m for every
    cluster of column m it is 1 − the w-weighted co-association (EAC, WEAC).

    Parameters
    ----------
    micro_codes : (Ñ, M) int array of global cluster ids per microcluster
    weights : (n_c,) weight per cluster
    n_columns : M

    Returns
    -------
    ndarray of shape (Ñ(Ñ−1)/2,), scipy's condensed order.
    """
    n = len(micro_codes)
    ensure_fits(
        n * (n - 1) // 2 * 8,
        f"exact LWEA on {n} microclusters (condensed distance matrix)",
        "use method 'lwgp', which scales linearly in N, or fewer/coarser base clusterings",
    )
    return _lwca_distances(
        np.ascontiguousarray(micro_codes, dtype=np.int64), np.asarray(weights, dtype=np.float64), n_columns
    )


@numba.njit(cache=True)
def _nn_chain(dist, sizes):
    n = sizes.shape[0]
    size = sizes.astype(np.float64).copy()
    merges = np.empty((n - 1, 4))
    chain = np.empty(n, dtype=np.int64)
    chain_length = 0
    # Live slots in ascending order: scans skip merged-away slots, and the
    # ascending order keeps the tie-breaking of a full scan (lowest index wins).
    active = np.arange(n)
    n_active = n
    for step in range(n - 1):
        if chain_length == 0:
            chain[0] = active[0]
            chain_length = 1
        while True:
            x = chain[chain_length - 1]
            # Prefer the previous chain element on ties so the chain cannot cycle.
            if chain_length > 1:
                y = chain[chain_length - 2]
                current = dist[_condensed_index(n, x, y)]
            else:
                y = -1
                current = np.inf
            row_x = n * x - (x * (x + 1)) // 2 - x - 1
            for j in range(n_active):
                i = active[j]
                if i < x:
                    d = dist[n * i - (i * (i + 1)) // 2 + x - i - 1]
                elif i > x:
                    d = dist[row_x + i]
                else:
                    continue
                if d < current:
                    current = d
                    y = i
            if chain_length > 1 and y == chain[chain_length - 2]:
                break
            chain[chain_length] = y
            chain_length += 1
        chain_length -= 2
        if x > y:
            x, y = y, x
        nx, ny = size[x], size[y]
        merges[step, 0] = x
        merges[step, 1] = y
        merges[step, 2] = current
        merges[step, 3] = nx + ny
        size[x] = 0
        size[y] = nx + ny
        # Drop x from the live slots (keeping them sorted).
        position = np.searchsorted(active[:n_active], x)
        active[position:n_active - 1] = active[position + 1:n_active]
        n_active -= 1
        for j in range(n_active):
            i = active[j]
            if i == y:
                continue
            ix = _condensed_index(n, i, x)
            iy = _condensed_index(n, i, y)
            dist[iy] = (nx * dist[ix] + ny * dist[iy]) / (nx + ny)
    return merges


def weighted_average_linkage(condensed: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Average linkage of weighted points; consumes (overwrites) ``condensed``.

    Parameters
    ----------
    condensed : (n(n−1)/2,) float64 condensed distances
    sizes : (n,) initial cluster sizes (weights), all > 0

    Returns
    -------
    ndarray of shape (n − 1, 4) in scipy's linkage format (rows sorted by
    height, column 3 the number of leaves under each new node).
    """
    n = len(sizes)
    if n < 2:
        return np.empty((0, 4))
    merges = _nn_chain(condensed, np.asarray(sizes, dtype=np.float64))
    order = np.argsort(merges[:, 2], kind="mergesort")
    return scipy_numbering(merges[order], n, np.ones(n))
