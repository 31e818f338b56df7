"""Partial results of one partition and how two of them combine.

Everything the flow needs from the whole table is a sum (or a union, or a minimum) of per-partition
pieces: column moments and element-wise table sums (:mod:`lwec_tasks.stages.sums`), the pairwise contingency
tables of the base clusterings, the cluster graph Wy = Bᵀ Dx⁻¹ B, the distinct label rows (microclusters) with
their counts, the contingency table of labels against ground truth. The functions here build and combine those
pieces; they are plain numpy/scipy and run wherever Dask puts them. Combining always happens in a fixed order
(see :func:`lwec_tasks.executors.dask.tree_reduce`), so floating-point sums do not depend on scheduling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from lwec_tasks.core.metrics import contingency_scores
from lwec_tasks.core.pair_kernels import column_pairs, graph_blocks, object_degrees, pair_table, row_split_entropy

# --- pairwise tables of base clusterings (ECI) and the cluster graph (LWGP) ----------------------------------

def pair_tables(codes_t: np.ndarray, ks: np.ndarray, weights: np.ndarray | None = None) -> list[sp.csr_matrix]:
    """One :func:`pair_table` per column pair (a < b) of the (M, n) codes."""
    return [pair_table(codes_t[a], codes_t[b], int(ks[a]), int(ks[b]), weights)
            for a, b in column_pairs(len(ks))]


@numba.njit(cache=True)
def _csr_split_entropies(indptr, indices, data, sizes_a, sizes_b, out_a, out_b):
    """Row and column entropies (bits) of one contingency table in CSR form (sorted indices).

    The local kernel's per-row arithmetic (:func:`lwec_tasks.core.pair_kernels.row_split_entropy`) on the
    same cells in the same order, so ECI matches bit for bit.
    """
    column_h = np.zeros(sizes_b.shape[0])
    for r in range(sizes_a.shape[0]):
        start, stop = indptr[r], indptr[r + 1]
        out_a[r] = row_split_entropy(indices[start:stop], data[start:stop], sizes_a[r], sizes_b, column_h)
    out_b[:] = column_h


def split_entropy_terms(tables: list[sp.csr_matrix], offsets: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(M, n_c): entry [b, c] is the entropy (bits) of how cluster c splits among column b's clusters.

    ``tables`` are the whole table's pairwise contingency tables (:func:`pair_tables`, summed); the
    uncertainty H^Π is the sum over axis 0 (as :func:`lwec_tasks.core.eci.ensemble_uncertainty`).
    """
    n_columns = len(offsets) - 1
    sizes = np.asarray(sizes, dtype=np.float64)
    out = np.zeros((n_columns, int(offsets[-1])))
    for (a, b), table in zip(column_pairs(n_columns), tables):
        table = table.tocsr()
        table.sort_indices()
        _csr_split_entropies(
            table.indptr.astype(np.int64), table.indices.astype(np.int64), table.data,
            sizes[offsets[a]:offsets[a + 1]], sizes[offsets[b]:offsets[b + 1]],
            out[b, offsets[a]:offsets[a + 1]], out[a, offsets[b]:offsets[b + 1]],
        )
    return out


# --- microclusters (distinct label rows) ---------------------------------------------------------------------

@dataclass(frozen=True)
class Microclusters:
    """Distinct label rows in lexicographic order (the library Ensemble's microcluster order) and their counts.

    rows : (Ñ, M) int32 per-column codes; counts : (Ñ,) int64; radices : (M,) clusters per column, or None;
    keys : (Ñ,) int64 mixed-radix key of each row (:func:`row_keys`, sorted like the rows), or None when the
    radices are not known or their product does not fit in 62 bits (rows are then compared column by column).
    """

    rows: np.ndarray
    counts: np.ndarray
    radices: np.ndarray | None = None
    keys: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.counts)


def row_keys(codes_t: np.ndarray, radices: np.ndarray | None) -> np.ndarray | None:
    """(n,) int64 keys Σ_m code_m · Π_{m' > m} radix_m' of the rows of the (M, n) codes — ordered as the rows
    are lexicographically — or None when ``radices`` is None or their product reaches 2⁶²."""
    if radices is None or np.prod(np.asarray(radices, dtype=float)) >= 2.0**62:
        return None
    keys = np.zeros(codes_t.shape[1], dtype=np.int64)
    for m, radix in enumerate(radices):
        keys *= int(radix)
        keys += codes_t[m]
    return keys


def microclusters_of(codes_t: np.ndarray, radices: np.ndarray | None = None) -> tuple[Microclusters, np.ndarray]:
    """The distinct rows of the (M, n) codes with their counts, and each row's index into them, (n,) int64;
    ``radices`` (M,) the clusters per column (optional: with them, rows are found by integer keys, several
    times faster)."""
    keys = row_keys(codes_t, radices)
    if keys is None:
        rows, inverse, counts = np.unique(np.ascontiguousarray(codes_t.T), axis=0, return_inverse=True,
                                          return_counts=True)
        return Microclusters(rows.astype(np.int32), counts.astype(np.int64)), inverse.ravel().astype(np.int64)
    unique, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    table = Microclusters(np.ascontiguousarray(codes_t[:, first].T, dtype=np.int32), counts.astype(np.int64),
                          np.asarray(radices), unique)
    return table, inverse.astype(np.int64)


def merge_microclusters(*parts: Microclusters) -> Microclusters:
    """The union of several microcluster tables, counts summed."""
    rows = np.concatenate([p.rows for p in parts])
    counts = np.concatenate([p.counts for p in parts])
    if all(p.keys is not None for p in parts):
        unique, first, inverse = np.unique(np.concatenate([p.keys for p in parts]), return_index=True,
                                           return_inverse=True)
        return Microclusters(rows[first], np.bincount(inverse, weights=counts).astype(np.int64), parts[0].radices,
                             unique)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    return Microclusters(unique.astype(np.int32), np.bincount(inverse.ravel(), weights=counts).astype(np.int64))


def _row_records(rows: np.ndarray) -> np.ndarray:
    """(n, M) int32 rows as a 1-D structured array that sorts and searches lexicographically."""
    rows = np.ascontiguousarray(rows, dtype=np.int32)
    return rows.view(np.dtype([(f"c{m}", np.int32) for m in range(rows.shape[1])])).ravel()


def microcluster_index(located: tuple[Microclusters, np.ndarray], table: Microclusters) -> np.ndarray:
    """(n,) index into the merged ``table`` of each row of a partition, from that partition's own microclusters
    and rows' indices into them (``located``, as :func:`microclusters_of` returns them)."""
    own, inverse = located
    if table.keys is not None and own.keys is not None:
        places = np.searchsorted(table.keys, own.keys)
    else:
        places = np.searchsorted(_row_records(table.rows), _row_records(own.rows))
    return places[inverse]


def microcluster_pair_tables(table: Microclusters, ks: np.ndarray) -> list[sp.csr_matrix]:
    """The pairwise contingency tables of the objects (:func:`pair_tables`), counted over the microclusters:
    each distinct label row stands for its count of objects, so the tables equal those of all the rows."""
    return pair_tables(np.ascontiguousarray(table.rows.T), ks, table.counts)


def microcluster_graph_blocks(table: Microclusters, offsets: np.ndarray, eci: np.ndarray) -> list:
    """The cluster graph's sums over all objects (:func:`lwec_tasks.core.pair_kernels.graph_blocks`), counted
    over the microclusters: the objects of one distinct label row share 1/dx, dx = Σ_m ECI of their clusters."""
    codes_t = np.ascontiguousarray(table.rows.T)
    return graph_blocks(codes_t, offsets, table.counts / object_degrees(codes_t, offsets, eci))


# --- agreement with ground truth from a contingency table -----------------------------------------------------

def agreement_from_contingency(table: np.ndarray) -> dict[str, float]:
    """NMI (max normalisation, as the paper) and ARI of two labelings from their (classes, clusters) table.

    Equal (to rounding) to :func:`lwec_tasks.core.metrics.nmi` / :func:`~lwec_tasks.core.metrics.ari` on the
    labelings, through :func:`~lwec_tasks.core.metrics.contingency_scores`; empty when fewer than 2 objects are
    counted.
    """
    table = np.asarray(table, dtype=np.float64)
    n = int(table.sum())
    if n < 2:
        return {}
    nmi, ari = contingency_scores(table.ravel(), table.sum(axis=1), table.sum(axis=0), n)
    return {"nmi": nmi, "ari": ari}
