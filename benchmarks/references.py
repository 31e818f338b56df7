"""Straightforward reference implementations, timed against the package.

They follow the textbook route the package avoids: the N × n_c incidence
matrix in scipy.sparse, the dense N × N LWCA matrix with scipy's average
linkage, scikit-learn's KMeans on all N embedding rows.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.spatial.distance import squareform
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from lwec_tasks.core.lwca import lwca


def encode(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, M) global cluster ids by np.unique per column, and (M + 1,) offsets."""
    columns, offsets = [], [0]
    for m in range(labels.shape[1]):
        _, inverse = np.unique(labels[:, m], return_inverse=True)
        columns.append(inverse.astype(np.int64) + offsets[-1])
        offsets.append(offsets[-1] + int(inverse.max()) + 1)
    return np.column_stack(columns), np.array(offsets)


def eci(labels: np.ndarray, theta: float = 0.4) -> np.ndarray:
    """ECI from pairwise contingency tables built by np.bincount (numpy only)."""
    codes, offsets = encode(labels)
    n_columns = labels.shape[1]
    sizes = np.bincount(codes.ravel(), minlength=offsets[-1]).astype(float)
    h = np.zeros(offsets[-1])
    for a in range(n_columns):
        for b in range(n_columns):
            if a == b:
                continue
            k_b = offsets[b + 1] - offsets[b]
            key = (codes[:, a] - offsets[a]) * k_b + (codes[:, b] - offsets[b])
            table = np.bincount(key, minlength=(offsets[a + 1] - offsets[a]) * k_b)
            table = table.reshape(-1, k_b).astype(float)
            p = table / sizes[offsets[a]:offsets[a + 1], None]
            h[offsets[a]:offsets[a + 1]] -= np.sum(p * np.log2(np.where(p > 0, p, 1.0)), axis=1)
    return np.exp(-h / (theta * n_columns))


def dense_lwea(labels: np.ndarray, ks, theta: float = 0.4) -> np.ndarray:
    """Average linkage (scipy) on the dense 1 − LWCA over all N objects; (N, len(ks))."""
    distance = 1.0 - lwca(labels, theta)
    np.fill_diagonal(distance, 0.0)
    condensed = squareform(distance, checks=False)
    del distance
    tree = linkage(condensed, method="average")
    return cut_tree(tree, n_clusters=list(ks))


def sparse_lwgp(labels: np.ndarray, ks, theta: float = 0.4, seed: int = 0) -> np.ndarray:
    """Tcut with scipy.sparse (B, Wy = Bᵀ Dx⁻¹ B), eigsh/eigh, sklearn KMeans on all rows."""
    codes, offsets = encode(labels)
    n, n_columns = codes.shape
    weights = eci(labels, theta)
    b = sp.csr_matrix(
        (weights[codes.ravel()], codes.ravel(), np.arange(0, n * n_columns + 1, n_columns)),
        shape=(n, offsets[-1]),
    )
    dx = np.asarray(b.sum(axis=1)).ravel()
    wy = (b.T @ sp.diags(1.0 / dx) @ b).tocsr()
    inv_sqrt_d = 1.0 / np.sqrt(np.asarray(wy.sum(axis=1)).ravel())
    normalised = sp.diags(inv_sqrt_d) @ wy @ sp.diags(inv_sqrt_d)
    n_vectors = int(max(ks))
    n_c = normalised.shape[0]
    if n_c <= 3000:
        _, vectors = scipy.linalg.eigh(normalised.toarray(), subset_by_index=[n_c - n_vectors, n_c - 1])
    else:
        _, vectors = scipy.sparse.linalg.eigsh(normalised, k=n_vectors, which="LA")
    vectors = vectors[:, ::-1] * inv_sqrt_d[:, None]
    embedding = (b @ vectors) / dx[:, None]
    out = []
    # One thread, as the package's own k-means fits: on a busy 2-core machine
    # scikit-learn's spinning OpenMP threads are several times slower.
    with threadpool_limits(1):
        for k in ks:
            rows = embedding[:, :k]
            rows = rows / (np.sqrt((rows * rows).sum(axis=1, keepdims=True)) + 1e-10)
            model = KMeans(n_clusters=int(k), n_init=3, max_iter=100, random_state=seed)
            out.append(model.fit_predict(rows))
    return np.column_stack(out)
