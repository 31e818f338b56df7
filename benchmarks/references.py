"""Straightforward reference implementations of the paper's definitions.

The tests compare the package against them and the benchmarks time the package
against them. They take the textbook route the package avoids — per-column
``np.unique`` codes, contingency tables by ``np.bincount``, the N × n_c
incidence matrix in scipy.sparse, dense N × N matrices with scipy's average
linkage, dense or ARPACK eigensolvers, scikit-learn's KMeans on all N embedding
rows — and import nothing from ``lwec_tasks``, so that they stay independent of
the code they check.

Clusters are numbered column by column and, within a column, by ascending
label value, as in the package.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.spatial.distance import squareform
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

#: Up to this many clusters the Tcut eigenproblem is solved densely (LAPACK).
DENSE_EIGEN_LIMIT = 3000


# --- encoding -----------------------------------------------------------------


def encode(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, M) global cluster ids by np.unique per column, and (M + 1,) offsets."""
    labels = np.asarray(labels)
    columns, offsets = [], [0]
    for m in range(labels.shape[1]):
        _, inverse = np.unique(labels[:, m], return_inverse=True)
        columns.append(inverse.astype(np.int64) + offsets[-1])
        offsets.append(offsets[-1] + int(inverse.max()) + 1)
    return np.column_stack(columns), np.array(offsets)


def clusters_in_order(labels: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """[(column, boolean member mask)] column by column, ascending label."""
    out = []
    for m in range(labels.shape[1]):
        for value in sorted(set(labels[:, m].tolist())):
            out.append((m, labels[:, m] == value))
    return out


def incidence(labels: np.ndarray, weights: np.ndarray | None = None) -> sp.csr_matrix:
    """B (N, n_c): entry (i, c) = weight of cluster c if object i is in it, else 0 (default weight 1)."""
    codes, offsets = encode(labels)
    n, n_columns = codes.shape
    values = np.ones(n * n_columns) if weights is None else np.asarray(weights, float)[codes.ravel()]
    return sp.csr_matrix(
        (values, codes.ravel(), np.arange(0, n * n_columns + 1, n_columns)), shape=(n, offsets[-1])
    )


# --- cluster uncertainty and ECI (Defs 3–5) -------------------------------------


def uncertainty(labels: np.ndarray) -> np.ndarray:
    """H^Π(C) = Σ_m −Σ_j p log2 p, p = |C ∩ C_j^m| / |C|, from the M × M contingency tables."""
    codes, offsets = encode(labels)
    n_columns = codes.shape[1]
    sizes = np.bincount(codes.ravel(), minlength=offsets[-1]).astype(float)
    h = np.zeros(offsets[-1])
    for a in range(n_columns):
        for b in range(n_columns):
            if a == b:
                continue
            k_b = offsets[b + 1] - offsets[b]
            key = (codes[:, a] - offsets[a]) * k_b + (codes[:, b] - offsets[b])
            table = np.bincount(key, minlength=(offsets[a + 1] - offsets[a]) * k_b)
            p = table.reshape(-1, k_b).astype(float) / sizes[offsets[a]:offsets[a + 1], None]
            h[offsets[a]:offsets[a + 1]] -= np.sum(p * np.log2(np.where(p > 0, p, 1.0)), axis=1)
    return h


def eci(labels: np.ndarray, theta: float = 0.4) -> np.ndarray:
    """ECI(C) = exp(−H^Π(C) / (θ·M)) of every cluster."""
    return np.exp(-uncertainty(labels) / (theta * np.asarray(labels).shape[1]))


# --- LWCA and LWEA (Def. 7, Alg. 1) ----------------------------------------------


def lwca(labels: np.ndarray, theta: float = 0.4) -> np.ndarray:
    """Dense ã_ij = (1/M) Σ_m ECI(Cls^m(o_i)) δ^m_ij with a unit diagonal, by a loop over clusters."""
    labels = np.asarray(labels)
    n, n_columns = labels.shape
    weights = eci(labels, theta)
    matrix = np.zeros((n, n))
    for (_, members), weight in zip(clusters_in_order(labels), weights):
        idx = np.flatnonzero(members)
        matrix[np.ix_(idx, idx)] += weight / n_columns
    np.fill_diagonal(matrix, 1.0)
    return matrix


def similarity_linkage(similarity: np.ndarray) -> np.ndarray:
    """scipy average linkage on the distances 1 − similarity; overwrites ``similarity``.

    The diagonal is ignored; round-off below 0 is clipped.
    """
    distance = np.subtract(1.0, similarity, out=similarity)
    np.fill_diagonal(distance, 0.0)
    np.clip(distance, 0.0, None, out=distance)
    return linkage(squareform(distance, checks=False), method="average")


def dense_lwea(labels: np.ndarray, ks, theta: float = 0.4) -> np.ndarray:
    """Average linkage on the dense 1 − LWCA over all N objects, cut into each k; (N, len(ks))."""
    return cut_tree(similarity_linkage(lwca(labels, theta)), n_clusters=list(ks))


def coassociation(labels: np.ndarray, column_weights: np.ndarray) -> np.ndarray:
    """Dense Σ_m w_m [Cls^m(o_i) = Cls^m(o_j)] (EAC with equal weights 1/M, WEAC with NCAI weights)."""
    labels = np.asarray(labels)
    n = labels.shape[0]
    matrix = np.zeros((n, n))
    for m in range(labels.shape[1]):
        matrix += column_weights[m] * (labels[:, m][:, None] == labels[:, m][None, :])
    return matrix


def expanded_average_linkage(
    condensed: np.ndarray, sizes: np.ndarray, intra: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Average linkage of weighted points by expanding point p into ``sizes[p]`` objects.

    Objects of one point are at distance ``intra[p]`` (default 0) from each other
    and at the point's distances from everything else. Returns (scipy linkage of
    the Σ sizes objects, (Σ sizes,) point of each object).
    """
    sizes = np.asarray(sizes)
    point_of = np.repeat(np.arange(len(sizes)), sizes)
    expanded = squareform(np.asarray(condensed, float))[np.ix_(point_of, point_of)]
    same = point_of[:, None] == point_of[None, :]
    expanded[same] = 0.0 if intra is None else np.asarray(intra, float)[point_of][np.nonzero(same)[0]]
    np.fill_diagonal(expanded, 0.0)
    return linkage(squareform(expanded, checks=False), method="average"), point_of


# --- LWGP: Tcut (Alg. 2) --------------------------------------------------------------


def tcut(labels: np.ndarray, weights: np.ndarray, n_vectors: int) -> tuple[np.ndarray, np.ndarray]:
    """Tcut as in the authors' code, with scipy.sparse B: (eigenvalues, embedding).

    B = incidence weighted by ``weights`` (ECI for LWGP, ones for HBGF),
    Dx = diag(B·1), Wy = Bᵀ Dx⁻¹ B, D = diag(Wy·1); V holds the ``n_vectors``
    leading eigenvectors of D^{-1/2} Wy D^{-1/2} (descending eigenvalue, signs as
    the solver returns them). Returns their eigenvalues (n_vectors,) and the
    object embedding Dx⁻¹ B D^{-1/2} V (N, n_vectors), not row-normalised.
    """
    b = incidence(labels, weights)
    dx = np.asarray(b.sum(axis=1)).ravel()
    wy = (b.T @ sp.diags(1.0 / dx) @ b).tocsr()
    inv_sqrt_d = 1.0 / np.sqrt(np.asarray(wy.sum(axis=1)).ravel())
    normalised = sp.diags(inv_sqrt_d) @ wy @ sp.diags(inv_sqrt_d)
    n_c = normalised.shape[0]
    if n_c <= DENSE_EIGEN_LIMIT or n_vectors >= n_c - 1:
        values, vectors = scipy.linalg.eigh(normalised.toarray(), subset_by_index=[n_c - n_vectors, n_c - 1])
    else:
        values, vectors = scipy.sparse.linalg.eigsh(normalised, k=n_vectors, which="LA")
    order = np.argsort(values)[::-1]
    embedding = (b @ (vectors[:, order] * inv_sqrt_d[:, None])) / dx[:, None]
    return values[order], embedding


def tcut_embedding(labels: np.ndarray, weights: np.ndarray, n_vectors: int) -> np.ndarray:
    """The object embedding of :func:`tcut`, (N, n_vectors)."""
    return tcut(labels, weights, n_vectors)[1]


def sparse_lwgp(labels: np.ndarray, ks, theta: float = 0.4, seed: int = 0) -> np.ndarray:
    """LWGP: Tcut with scipy.sparse, row normalisation, scikit-learn KMeans on all N rows; (N, len(ks))."""
    embedding = tcut_embedding(labels, eci(labels, theta), int(max(ks)))
    out = []
    # One thread: on a busy 2-core machine scikit-learn's spinning OpenMP
    # threads are several times slower.
    with threadpool_limits(1):
        for k in ks:
            rows = embedding[:, :k]
            rows = rows / (np.sqrt((rows * rows).sum(axis=1, keepdims=True)) + 1e-10)
            model = KMeans(n_clusters=int(k), n_init=3, max_iter=100, random_state=seed)
            out.append(model.fit_predict(rows))
    return np.column_stack(out)


# --- scores -----------------------------------------------------------------------


def entropy_bits(labels: np.ndarray) -> float:
    _, counts = np.unique(labels, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def nmi(a: np.ndarray, b: np.ndarray, normalization: str = "max") -> float:
    """MI from the joint distribution, normalised by max/geometric/arithmetic of the entropies."""
    joint: dict = {}
    for x, y in zip(a.tolist(), b.tolist()):
        joint[(x, y)] = joint.get((x, y), 0) + 1
    n = len(a)
    pa = {x: np.mean(a == x) for x in set(a.tolist())}
    pb = {y: np.mean(b == y) for y in set(b.tolist())}
    mi = sum(c / n * math.log2((c / n) / (pa[x] * pb[y])) for (x, y), c in joint.items())
    ha, hb = entropy_bits(a), entropy_bits(b)
    denominator = {"max": max(ha, hb), "geometric": math.sqrt(ha * hb), "arithmetic": (ha + hb) / 2}[
        normalization
    ]
    return mi / denominator


def ari(a: np.ndarray, b: np.ndarray) -> float:
    """ARI from the pair counts N11, N00, N10, N01 of the paper's formula (nan when undefined)."""
    n = len(a)
    same_a = a[:, None] == a[None, :]
    same_b = b[:, None] == b[None, :]
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    n11 = np.sum(same_a & same_b & upper)
    n00 = np.sum(~same_a & ~same_b & upper)
    n10 = np.sum(same_a & ~same_b & upper)
    n01 = np.sum(~same_a & same_b & upper)
    denominator = (n00 + n01) * (n01 + n11) + (n00 + n10) * (n10 + n11)
    return float("nan") if denominator == 0 else 2 * (n00 * n11 - n01 * n10) / denominator
