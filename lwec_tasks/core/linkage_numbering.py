"""Linkage bookkeeping shared by the dendrogram builders and cutters: union-find roots and scipy's node numbering."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def find_root(parent, i):
    """Root of i in the union-find forest ``parent`` (paths halved on the way)."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@numba.njit(cache=True)
def scipy_numbering(merges, n, leaf_counts):
    """Turn merges of slot pairs (sorted by height) into scipy's node numbering.

    Each row merges the clusters that currently contain its two slots (union-find),
    so a parent sorted before its child by a round-off inversion still yields a
    valid tree. Column 3 becomes the number of leaves under the new node.
    """
    parent = np.arange(2 * n - 1)
    count = np.zeros(2 * n - 1)
    count[:n] = leaf_counts
    out = merges.copy()
    for step in range(n - 1):
        a = find_root(parent, np.int64(merges[step, 0]))
        b = find_root(parent, np.int64(merges[step, 1]))
        node = n + step
        parent[a] = node
        parent[b] = node
        out[step, 0] = min(a, b)
        out[step, 1] = max(a, b)
        count[node] = count[a] + count[b]
        out[step, 3] = count[node]
    return out
