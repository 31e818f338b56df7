"""The clustering ensemble, validated and encoded once.

Every later step (uncertainty, ECI, LWCA, LWEA, LWGP, baselines) takes an
:class:`Ensemble`; public functions also accept a raw label matrix and encode
it through :func:`as_ensemble`.

Cluster order, used by every per-cluster vector in the package: clusters are
numbered column by column, and within a column by ascending label value (the
order of the authors' reference code).
"""

from __future__ import annotations

import numbers
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

from lwec_tasks.core.column_encoding import label_range, lookup_encode
from lwec_tasks.core.errors import LwecInputError

# Columns whose label range is at most this many times N are encoded by a
# lookup table (O(N)); wider ranges fall back to sorting.
_LOOKUP_RANGE_FACTOR = 4


_INT64_MAX = np.iinfo(np.int64).max


class Ensemble:
    """An N × M ensemble of base clusterings, encoded once.

    Parameters
    ----------
    labels : array-like of shape (N, M), or Ensemble
        Column m holds the cluster label of each object in base clustering m.
        Labels may be any integers (0- or 1-based, with gaps, negative). A
        pandas DataFrame's column names are kept for error messages. M = 1 is
        allowed (the consensus of one clustering is that clustering).

    Attributes
    ----------
    codes : ndarray of shape (N, M), int32
        Per-column compact codes 0..n^m - 1 in ascending label order.
    n_clusters_per_column : ndarray of shape (M,)
    offsets : ndarray of shape (M + 1,)
        Global id of cluster j of column m is ``offsets[m] + j``.
    cluster_sizes : ndarray of shape (n_c,)
    cluster_column : ndarray of shape (n_c,)
        Column (base clustering) each cluster belongs to.
    cluster_label : ndarray of shape (n_c,)
        Original label value of each cluster within its column.
    column_names : list[str]
    uncertainty : ndarray of shape (n_c,)
        H^Π of every cluster in bits, read-only, computed on first use.
    """

    def __init__(self, labels):
        if _is_plain_integer_matrix(labels):
            # Encode column by column straight from the input: no int64 copy of
            # the whole matrix (400 MB → 800 MB at N = 10⁷, M = 10).
            matrix = labels
            names = [f"column {j}" for j in range(labels.shape[1])]
        else:
            matrix, names = _label_matrix(labels)
        self.n_objects, self.n_columns = matrix.shape
        self.column_names = names
        # Column-major storage: every per-column pass (contingency tables, ECI,
        # LWGP kernels) then reads contiguous memory.
        codes = np.empty((self.n_columns, self.n_objects), dtype=np.int32).T
        label_values, column_sizes = [], []
        for m in range(self.n_columns):
            values, sizes = _encode_column(matrix[:, m], codes[:, m])
            label_values.append(values)
            column_sizes.append(sizes)
        self.codes = codes
        self.n_clusters_per_column = np.array([len(v) for v in label_values], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.n_clusters_per_column)])
        self.cluster_label = np.concatenate(label_values)
        self.cluster_column = np.repeat(np.arange(self.n_columns), self.n_clusters_per_column)
        self.cluster_sizes = np.concatenate(column_sizes)

    @property
    def n_clusters_total(self) -> int:
        """n_c, the total number of clusters over all base clusterings."""
        return int(self.offsets[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return self.n_objects, self.n_columns

    @cached_property
    def global_codes(self) -> np.ndarray:
        """(N, M) int64: the global cluster id of each object in each column."""
        return self.codes.astype(np.int64) + self.offsets[:-1]

    @cached_property
    def incidence(self) -> sp.csr_matrix:
        """(N, n_c) sparse 0/1 matrix: entry (i, c) = 1 iff object i is in cluster c."""
        n, m = self.shape
        return sp.csr_matrix(
            (np.ones(n * m), self.global_codes.ravel(), np.arange(0, n * m + 1, m)),
            shape=(n, self.n_clusters_total),
        )

    @cached_property
    def uncertainty(self) -> np.ndarray:
        """(n_c,) read-only H^Π of every cluster, in bits (paper Def. 4), computed on first use.

        From the M(M-1)/2 pairwise contingency tables (one compiled pass over the codes per pair, pairs in
        parallel): table (a, b) gives H^b of every cluster of column a (row entropies) and H^a of every cluster
        of column b (column entropies). A cluster's entropy w.r.t. its own column is 0.
        """
        from lwec_tasks.core.pair_kernels import column_major_codes, split_entropy_terms  # numba, on first use

        terms = split_entropy_terms(column_major_codes(self.codes), self.offsets.astype(np.int64),
                                    self.cluster_sizes.astype(np.float64))
        h = terms.sum(axis=0)
        h.setflags(write=False)
        return h

    @cached_property
    def _microclusters(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        key = np.zeros(self.n_objects, dtype=np.int64)
        bound = 1
        for m in range(self.n_columns):
            n_m = int(self.n_clusters_per_column[m])
            if bound * n_m >= 2**62:
                _, key = np.unique(key, return_inverse=True)
                bound = int(key.max()) + 1
            key = key * n_m + self.codes[:, m]
            bound *= n_m
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return inverse.astype(np.int64), first, np.bincount(inverse)

    @property
    def microcluster_of(self) -> np.ndarray:
        """(N,) id of each object's microcluster (objects with identical label rows)."""
        return self._microclusters[0]

    @property
    def microcluster_sizes(self) -> np.ndarray:
        """(Ñ,) number of objects in each microcluster."""
        return self._microclusters[2]

    @property
    def microcluster_representative(self) -> np.ndarray:
        """(Ñ,) index of the first object of each microcluster."""
        return self._microclusters[1]

    @property
    def microcluster_codes(self) -> np.ndarray:
        """(Ñ, M) global cluster ids of each microcluster's label row."""
        return self.global_codes[self._microclusters[1]]

    @property
    def n_microclusters(self) -> int:
        return len(self._microclusters[2])

    def __repr__(self) -> str:
        return (
            f"Ensemble(n_objects={self.n_objects}, n_columns={self.n_columns}, "
            f"n_clusters_total={self.n_clusters_total})"
        )


def as_ensemble(labels) -> Ensemble:
    """Return ``labels`` if it is already an :class:`Ensemble`, else encode it."""
    return labels if isinstance(labels, Ensemble) else Ensemble(labels)


def _label_matrix(labels) -> tuple[np.ndarray, list[str]]:
    """Validate any accepted input and return an (N, M) int64 matrix and column names."""
    if isinstance(labels, Ensemble):
        raise TypeError("already an Ensemble")
    if isinstance(labels, pd.DataFrame):
        names = [str(c) for c in labels.columns]
        columns = [labels.iloc[:, j].to_numpy() for j in range(labels.shape[1])]
        return _stack_columns(columns, names, n_rows=labels.shape[0]), names
    if isinstance(labels, np.ndarray):
        array = labels
    elif isinstance(labels, (list, tuple)):
        array = _array_from_rows(labels)
    else:
        raise LwecInputError(
            f"labels must be an (N, M) array, list of rows or DataFrame, got {type(labels).__name__}"
        )
    if array.ndim != 2:
        raise LwecInputError(
            f"labels must be 2-D (N objects × M base clusterings), got shape {array.shape}; "
            "for a single clustering use labels[:, None]"
        )
    names = [f"column {j}" for j in range(array.shape[1])]
    return _stack_columns([array[:, j] for j in range(array.shape[1])], names, array.shape[0]), names


def _is_plain_integer_matrix(labels) -> bool:
    """True for a 2-D integer ndarray that needs no validation beyond its shape."""
    return (
        isinstance(labels, np.ndarray)
        and labels.ndim == 2
        and labels.dtype.kind in "iu"
        and labels.shape[0] >= 2
        and labels.shape[1] >= 1
        and labels.dtype.itemsize <= 8
        and not (labels.dtype.kind == "u" and labels.dtype.itemsize == 8)
    )


def _array_from_rows(rows) -> np.ndarray:
    lengths = {len(r) if isinstance(r, (list, tuple, np.ndarray)) else -1 for r in rows}
    if -1 in lengths:
        if all(not isinstance(r, (list, tuple, np.ndarray)) for r in rows):
            raise LwecInputError(
                "labels must be 2-D (N objects × M base clusterings), got a flat list; "
                "wrap each label in its own row for a single clustering"
            )
        raise LwecInputError("labels rows must all be sequences of the same length")
    if len(lengths) > 1:
        first = len(rows[0])
        bad = next(i for i, r in enumerate(rows) if len(r) != first)
        raise LwecInputError(
            f"labels rows are ragged: row 0 has {first} labels but row {bad} has {len(rows[bad])}"
        )
    return np.array(rows, dtype=object) if rows else np.empty((0, 0))


def _stack_columns(columns: list[np.ndarray], names: list[str], n_rows: int) -> np.ndarray:
    if n_rows == 0 or not columns:
        raise LwecInputError(
            f"labels is empty ({n_rows} objects × {len(columns)} base clusterings)"
        )
    if n_rows < 2:
        raise LwecInputError(f"need at least 2 objects to cluster, got {n_rows}")
    out = np.empty((n_rows, len(columns)), dtype=np.int64)
    for j, (column, name) in enumerate(zip(columns, names)):
        out[:, j] = _integer_column(column, name)
    return out


def _integer_column(column: np.ndarray, name: str) -> np.ndarray:
    """Return the column as int64, or raise naming the column and the bad value."""
    if column.dtype.kind in "iu":
        if column.dtype.kind == "u" and column.dtype.itemsize == 8 and (column > _INT64_MAX).any():
            row = int(np.argmax(column > _INT64_MAX))
            raise LwecInputError(
                f"labels {name!r} holds label {int(column[row])} at row {row}, beyond the 64-bit "
                "signed range; renumber the labels"
            )
        return column.astype(np.int64)
    if column.dtype.kind == "b":
        raise LwecInputError(f"labels {name!r} holds booleans, expected integer cluster labels")
    if column.dtype.kind == "f":
        missing = np.isnan(column)
        if missing.any():
            raise LwecInputError(
                f"labels {name!r} has {int(missing.sum())} missing value(s) (NaN), "
                f"first at row {int(np.argmax(missing))}"
            )
        non_integer = ~np.isfinite(column) | (column != np.round(column))
        if non_integer.any():
            row = int(np.argmax(non_integer))
            raise LwecInputError(
                f"labels {name!r} holds a non-integer label {column[row].item()!r} at row {row}"
            )
        too_large = np.abs(column) >= 2.0**63
        if too_large.any():
            row = int(np.argmax(too_large))
            raise LwecInputError(
                f"labels {name!r} holds label {column[row].item()!r} at row {row}, beyond the "
                "64-bit integer range; renumber the labels"
            )
        return column.astype(np.int64)
    out = np.empty(len(column), dtype=np.int64)
    for i, value in enumerate(column):
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            raise LwecInputError(f"labels {name!r} has a missing value (None/NaN) at row {i}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or value != int(value):
            raise LwecInputError(f"labels {name!r} holds a non-integer label {value!r} at row {i}")
        if not -(2**63) <= int(value) < 2**63:
            raise LwecInputError(
                f"labels {name!r} holds label {value!r} at row {i}, beyond the 64-bit integer "
                "range; renumber the labels"
            )
        out[i] = int(value)
    return out


def _encode_column(column: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Write codes 0..n-1 (ascending label order) into ``out``; return (label values, sizes)."""
    low, high = label_range(column)
    if high - low <= _LOOKUP_RANGE_FACTOR * len(column):
        return lookup_encode(column, low, high, out)
    values, inverse = np.unique(column, return_inverse=True)
    out[:] = inverse
    return values.astype(np.int64), np.bincount(inverse, minlength=len(values))
