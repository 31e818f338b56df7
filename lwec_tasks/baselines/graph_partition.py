"""Balanced k-way partitioning of a weighted graph with METIS (via pymetis).

CSPA and MCLA (Strehl & Ghosh 2002) partition a similarity graph with METIS;
this module turns a sparse symmetric similarity matrix into METIS's integer
CSR input and returns the part of every vertex.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

# METIS sums edge weights per vertex in 32-bit integers; keep every vertex's
# total below this after scaling.
_WEIGHT_BUDGET = 2**30


def metis_partition(similarity: sp.spmatrix, n_parts: int, seed: int,
                    vertex_weights: np.ndarray | None = None) -> np.ndarray:
    """Partition the graph with edge weights ``similarity`` into ``n_parts`` parts.

    Parameters
    ----------
    similarity : (V, V) sparse, symmetric, non-negative; the diagonal is ignored
    n_parts : number of parts, 2 ≤ n_parts ≤ V
    seed : METIS's random seed (results are deterministic for a given seed)
    vertex_weights : (V,) positive integers to balance (default: all 1)

    Returns
    -------
    ndarray of shape (V,), part ids in 0..n_parts−1 (a part can be empty).
    """
    import pymetis

    graph = sp.csr_matrix(similarity, dtype=np.float64)
    graph.setdiag(0)
    graph.eliminate_zeros()
    graph.sort_indices()
    n_vertices = graph.shape[0]
    weights = graph.data
    if len(weights):
        # Integer weights keep their ratios up to rounding; every edge keeps weight ≥ 1.
        top_row_sum = float(np.asarray(graph.sum(axis=1)).max())
        scale = min(1.0, _WEIGHT_BUDGET / top_row_sum) if top_row_sum > 0 else 1.0
        if scale == 1.0 and weights.max() < 1000:
            scale = 1000.0 / weights.max()  # weights in (0, 1] would all round to 1
            scale = min(scale, _WEIGHT_BUDGET / top_row_sum)
        weights = np.maximum(1, np.rint(weights * scale)).astype(np.int64)
    options = pymetis.Options(seed=int(seed) % (2**31 - 1))
    _, parts = pymetis.part_graph(
        int(n_parts),
        adjacency=pymetis.CSRAdjacency(adj_starts=graph.indptr.astype(np.int64),
                                       adjacent=graph.indices.astype(np.int64)),
        eweights=weights if len(weights) else None,
        vweights=None if vertex_weights is None else np.asarray(vertex_weights, dtype=np.int64),
        options=options,
    )
    parts = np.asarray(parts, dtype=np.int64)
    if len(parts) != n_vertices:
        raise RuntimeError("METIS returned a partition of the wrong size")
    return parts
