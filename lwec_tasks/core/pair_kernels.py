"""Compiled kernels over the per-column cluster codes of an ensemble.

Everything LWGP and ECI need is a sum over objects of something indexed by
the objects' clusters in one or two base clusterings. These kernels take the
codes column-major — ``codes_t`` of shape (M, N), int32, C-contiguous, i.e.
``Ensemble.codes.T`` — so each pass reads whole columns sequentially, and they
never build an N × n_c incidence matrix. Work is split over column pairs (the
M(M+1)/2 pairwise code tables) or over objects, each writing only its own
results, so they do not depend on the number of threads.
"""

from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np
import scipy.sparse as sp

# Below this many code visits a kernel runs on one thread: waking the thread
# pool costs more than it saves (and much more when the other core is busy).
# One thread or many give identical results.
PARALLEL_MIN_WORK = 20_000_000


@numba.njit(cache=True)
def _pair_of(p, n_columns):
    """The p-th pair (a, b), a <= b, in the order (0,0), (0,1), ..., (1,1), ...

    The pairs a < b of n columns are those a <= b of n − 1 columns with b + 1.
    """
    # prange may hand an unsigned index; int64 + uint64 would type as float64.
    p = np.int64(p)
    a = 0
    row_length = n_columns
    while p >= row_length:
        p -= row_length
        a += 1
        row_length -= 1
    return a, a + p


@contextmanager
def _threads_for(n_objects: int, n_passes: int):
    """Run the kernels inside on one numba thread unless they touch at least ``PARALLEL_MIN_WORK`` codes
    (n_objects × n_passes). The setting is per calling thread and restored on exit."""
    if n_objects * n_passes >= PARALLEL_MIN_WORK:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def split_entropy_terms(codes_t, offsets, sizes):
    """H^b(C) for every cluster C and every column b, from the pairwise tables.

    Parameters
    ----------
    codes_t : (M, N) int32 per-column codes
    offsets : (M + 1,) int64 global id offsets
    sizes : (n_c,) float64 cluster sizes

    Returns
    -------
    (M, n_c) float64: entry [b, c] is the entropy (bits) of how cluster c's
    objects split among the clusters of column b (0 when c belongs to b).
    The uncertainty H^Π is the sum over axis 0.
    """
    n_columns, n = codes_t.shape
    with _threads_for(n, n_columns * (n_columns - 1) // 2):
        return _split_entropy(codes_t, offsets, sizes)


@numba.njit(parallel=True, cache=True)
def _split_entropy(codes_t, offsets, sizes):
    n_columns = codes_t.shape[0]
    out = np.zeros((n_columns, offsets[n_columns]))
    for p in numba.prange(n_columns * (n_columns - 1) // 2):
        col_a, col_b = _pair_of(p, n_columns - 1)
        col_b += 1  # the p-th pair a < b
        start_a, stop_a = offsets[col_a], offsets[col_a + 1]
        start_b, stop_b = offsets[col_b], offsets[col_b + 1]
        _pair_split_entropies(
            codes_t[col_a],
            codes_t[col_b],
            sizes[start_a:stop_a],
            sizes[start_b:stop_b],
            out[col_b, start_a:stop_a],
            out[col_a, start_b:stop_b],
        )
    return out


@numba.njit(cache=True)
def _pair_split_entropies(codes_a, codes_b, sizes_a, sizes_b, out_a, out_b):
    """Row and column entropies of one contingency table, written to out_a, out_b.

    H = −Σ p log2 p with p = t / s, so an unsplit cluster (p = 1) gets exactly 0
    and hence ECI exactly 1.
    """
    k_a, k_b = sizes_a.shape[0], sizes_b.shape[0]
    table = np.zeros((k_a, k_b), dtype=np.int32)
    for i in range(codes_a.shape[0]):
        table[codes_a[i], codes_b[i]] += 1
    every_column = np.arange(k_b)
    column_h = np.zeros(k_b)
    for r in range(k_a):
        out_a[r] = row_split_entropy(every_column, table[r], sizes_a[r], sizes_b, column_h)
    out_b[:] = column_h


# Inlined into its callers: called once per table row, a call each cost ECI ~20% at a million objects.
@numba.njit(cache=True, inline="always")
def row_split_entropy(columns, counts, row_size, column_sizes, column_h):
    """Entropy (bits) of how one row cluster of a contingency table splits; adds to the column entropies.

    Parameters
    ----------
    columns : (n,) int column index of each of the row's cells, ascending
    counts : (n,) the cells' counts t (cells with t = 0 are skipped)
    row_size : the row cluster's size s_r
    column_sizes : (k_b,) float64 column cluster sizes s_c
    column_h : (k_b,) float64, updated in place: column_h[c] −= (t / s_c) log2(t / s_c)

    Returns
    -------
    float: −Σ (t / s_r) log2(t / s_r) over the row's cells. Dense and sparse
    (CSR) tables give bit-identical results when they visit the same cells in
    the same order.
    """
    row_h = 0.0
    for j in range(columns.shape[0]):
        t = np.float64(counts[j])
        if t > 0.0:
            c = columns[j]
            q = t / row_size
            row_h -= q * np.log2(q)
            q = t / column_sizes[c]
            column_h[c] -= q * np.log2(q)
    return row_h


def object_degrees(codes_t, offsets, weights):
    """dx = B·1: (N,) sum over columns of the weight of each object's cluster (ECI for LWGP)."""
    n_columns, n = codes_t.shape
    out = np.empty(n)
    with _threads_for(n, n_columns):
        _degrees(codes_t, offsets, weights, out)
    return out


@numba.njit(parallel=True, cache=True)
def _degrees(codes_t, offsets, weights, out):
    n_columns, n = codes_t.shape
    for i in numba.prange(n):
        total = 0.0
        for m in range(n_columns):
            total += weights[offsets[m] + codes_t[m, i]]
        out[i] = total


def cluster_graph_dense(codes_t, offsets, factors, inv_dx):
    """Wy = Bᵀ Dx⁻¹ B (or its normalised form) as a dense (n_c, n_c) array without forming B.

    Entry (c, c') = f_c · f_c' · Σ_{i ∈ c ∩ c'} 1/dx_i: block (a, b) comes from one
    weighted count over the code pairs of columns a and b (diagonal blocks of a
    column are diagonal, since its clusters are disjoint). ``factors`` f are
    per-cluster: the cluster weights w give Wy, √(w / size) the normalised graph.
    """
    n_columns, n = codes_t.shape
    out = np.zeros((offsets[n_columns], offsets[n_columns]))
    with _threads_for(n, n_columns * (n_columns + 1) // 2):
        _graph(codes_t, offsets, factors, inv_dx, out)
    return out


def graph_blocks(codes_t, offsets, inv_dx) -> list:
    """The cluster graph's sums over a set of objects (a partition, or all), for :func:`sparse_cluster_graph`.

    Per column m its diagonal (k_m,) Σ_{i∈c} 1/dx_i, then per column pair (a < b, in :func:`column_pairs`
    order) the sparse (k_a, k_b) block Σ_{i∈c∩c'} 1/dx_i. Lists of disjoint sets of objects sum element-wise
    to the list of their union.
    """
    ks = np.diff(offsets)
    diagonals = [np.bincount(codes_t[m], weights=inv_dx, minlength=int(k)) for m, k in enumerate(ks)]
    blocks = [pair_table(codes_t[a], codes_t[b], int(ks[a]), int(ks[b]), inv_dx) for a, b in column_pairs(len(ks))]
    return diagonals + blocks


def sparse_cluster_graph(parts: list, offsets, factors) -> sp.csr_matrix:
    """The (n_c, n_c) cluster graph, sparse CSR, from the (summed) output of :func:`graph_blocks`.

    Entry (c, c') = f_c f_c' Σ_{i∈c∩c'} 1/dx_i, as :func:`cluster_graph_dense`; a column's own block is
    diagonal (its clusters are disjoint).
    """
    n_columns = len(offsets) - 1
    rows, cols, values = [], [], []
    for m, diagonal in enumerate(parts[:n_columns]):
        ids = np.arange(offsets[m], offsets[m + 1])
        rows.append(ids)
        cols.append(ids)
        values.append(factors[ids] ** 2 * diagonal)
    for (a, b), block in zip(column_pairs(n_columns), parts[n_columns:]):
        block = block.tocoo()
        r, c = block.row + offsets[a], block.col + offsets[b]
        value = factors[r] * factors[c] * block.data
        rows += [r, c]
        cols += [c, r]
        values += [value, value]
    n_c = int(offsets[-1])
    graph = sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=(n_c, n_c))
    graph.sort_indices()
    return graph


@numba.njit(parallel=True, cache=True)
def _graph(codes_t, offsets, factors, inv_dx, out):
    n_columns = codes_t.shape[0]
    for p in numba.prange(n_columns * (n_columns + 1) // 2):
        col_a, col_b = _pair_of(p, n_columns)
        _fill_pair_block(
            codes_t[col_a], codes_t[col_b], offsets[col_a], offsets[col_b],
            offsets[col_a + 1] - offsets[col_a], offsets[col_b + 1] - offsets[col_b],
            col_a == col_b, factors, inv_dx, out,
        )


@numba.njit(cache=True)
def _fill_pair_block(codes_a, codes_b, off_a, off_b, k_a, k_b, same, factors, inv_dx, out):
    """Write block (a, b) of Wy and its mirror (b, a) into ``out``."""
    if same:
        diagonal = np.zeros(k_a)
        for i in range(codes_a.shape[0]):
            diagonal[codes_a[i]] += inv_dx[i]
        for r in range(k_a):
            out[off_a + r, off_a + r] = factors[off_a + r] ** 2 * diagonal[r]
        return
    block = np.zeros((k_a, k_b))  # Σ_{i ∈ c ∩ c'} 1/dx_i
    for i in range(codes_a.shape[0]):
        block[codes_a[i], codes_b[i]] += inv_dx[i]
    for r in range(k_a):
        for c in range(k_b):
            value = factors[off_a + r] * factors[off_b + c] * block[r, c]
            out[off_a + r, off_b + c] = value
            out[off_b + c, off_a + r] = value


def pair_table(codes_a: np.ndarray, codes_b: np.ndarray, k_a: int, k_b: int,
               weights: np.ndarray | None = None) -> sp.csr_matrix:
    """(k_a, k_b) sparse table: entry (r, c) = Σ weight of the rows in cluster r of a and c of b (count by default).

    Rows are visited in order, so the result does not depend on anything but the rows. Integer weights (or
    none) give an int64 table.
    """
    keys = codes_a.astype(np.int64) * k_b + codes_b
    dtype = np.int64 if weights is None or np.asarray(weights).dtype.kind in "iu" else np.float64
    if k_a * k_b <= max(4 * len(keys), 1 << 16):
        sums = np.bincount(keys, weights=weights, minlength=k_a * k_b)
        present = np.flatnonzero(sums)
        values = sums[present]
    else:
        present, inverse = np.unique(keys, return_inverse=True)
        values = np.bincount(inverse, weights=weights, minlength=len(present))
    table = sp.csr_matrix((values.astype(dtype), (present // k_b, present % k_b)), shape=(k_a, k_b))
    table.sort_indices()
    return table


def column_pairs(n_columns: int) -> list[tuple[int, int]]:
    """The pairs (a, b), a < b, in the order the tables are listed."""
    return [(a, b) for a in range(n_columns) for b in range(a + 1, n_columns)]


def transfer_rows(codes_t, offsets, cluster_vectors, inv_dx, rows=None):
    """Dx⁻¹ B U restricted to ``rows``: out[j] = Σ_m U[g_m(rows[j])] / dx[rows[j]].

    Parameters
    ----------
    codes_t : (M, N) per-column codes (made C-contiguous here if they are not)
    offsets : (M + 1,) global id offsets
    cluster_vectors : (n_c, r) U, already multiplied by each cluster's weight
    inv_dx : (N,) 1 / dx
    rows : (R,) object indices, default all N objects

    Returns
    -------
    (R, r) float64
    """
    codes_t = np.ascontiguousarray(codes_t)
    offsets = np.asarray(offsets, dtype=np.int64)
    cluster_vectors = np.ascontiguousarray(cluster_vectors)
    rows = np.arange(codes_t.shape[1], dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    out = np.zeros((rows.shape[0], cluster_vectors.shape[1]))
    with _threads_for(rows.shape[0], codes_t.shape[0]):
        _transfer(codes_t, offsets, cluster_vectors, inv_dx, rows, out)
    return out


@numba.njit(parallel=True, cache=True)
def _transfer(codes_t, offsets, cluster_vectors, inv_dx, rows, out):
    n_columns = codes_t.shape[0]
    r = cluster_vectors.shape[1]
    for j in numba.prange(rows.shape[0]):
        i = rows[j]
        for m in range(n_columns):
            g = offsets[m] + codes_t[m, i]
            for t in range(r):
                out[j, t] += cluster_vectors[g, t]
        scale = inv_dx[i]
        for t in range(r):
            out[j, t] *= scale


def column_major_codes(codes: np.ndarray) -> np.ndarray:
    """(M, N) int32 C-contiguous view (or copy) of an (N, M) code matrix."""
    return np.ascontiguousarray(codes.T, dtype=np.int32)
