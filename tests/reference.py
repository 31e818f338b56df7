"""Straightforward reference implementations of the paper's definitions.

They follow the text literally (loops over clusters and objects, dense
matrices, scipy's linkage) and are independent of the package's vectorised
code, which the tests compare against them.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.spatial.distance import squareform


def clusters_in_order(labels: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """[(column, boolean member mask)] column by column, ascending label."""
    out = []
    for m in range(labels.shape[1]):
        for value in sorted(set(labels[:, m].tolist())):
            out.append((m, labels[:, m] == value))
    return out


def uncertainty(labels: np.ndarray) -> np.ndarray:
    """H^Π(C) = Σ_m −Σ_j p log2 p with p = |C ∩ C_j^m| / |C| (Defs 3–4)."""
    values = []
    for _, members in clusters_in_order(labels):
        total = 0.0
        size = members.sum()
        for m in range(labels.shape[1]):
            for value in set(labels[members, m].tolist()):
                p = np.sum(labels[members, m] == value) / size
                total -= p * math.log2(p)
        values.append(total)
    return np.array(values)


def eci(labels: np.ndarray, theta: float) -> np.ndarray:
    return np.exp(-uncertainty(labels) / (theta * labels.shape[1]))


def lwca(labels: np.ndarray, theta: float) -> np.ndarray:
    """ã_ij = (1/M) Σ_m ECI(Cls^m(o_i)) δ^m_ij with a unit diagonal, by loops over columns."""
    n, m_count = labels.shape
    weights = eci(labels, theta)
    clusters = clusters_in_order(labels)
    matrix = np.zeros((n, n))
    for (column, members), weight in zip(clusters, weights):
        idx = np.flatnonzero(members)
        matrix[np.ix_(idx, idx)] += weight / m_count
    np.fill_diagonal(matrix, 1.0)
    return matrix


def dense_lwea(labels: np.ndarray, ks, theta: float) -> np.ndarray:
    """Average linkage on 1 − LWCA over all N objects, cut into each k (N × len(ks))."""
    distance = 1.0 - lwca(labels, theta)
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="average")
    return cut_tree(tree, n_clusters=list(ks))


def entropy_bits(labels: np.ndarray) -> float:
    _, counts = np.unique(labels, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def nmi(a: np.ndarray, b: np.ndarray, normalization: str) -> float:
    """MI from the joint distribution, normalised by max/geometric/arithmetic of the entropies."""
    joint = {}
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
    """ARI from the pair counts N11, N00, N10, N01 of the paper's formula."""
    n = len(a)
    same_a = a[:, None] == a[None, :]
    same_b = b[:, None] == b[None, :]
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    n11 = np.sum(same_a & same_b & upper)
    n00 = np.sum(~same_a & ~same_b & upper)
    n10 = np.sum(same_a & ~same_b & upper)
    n01 = np.sum(~same_a & same_b & upper)
    return 2 * (n00 * n11 - n01 * n10) / ((n00 + n01) * (n01 + n11) + (n00 + n10) * (n10 + n11))


def tcut_embedding(labels: np.ndarray, theta: float, n_vectors: int) -> np.ndarray:
    """Tcut as in the authors' code, with dense matrices: Dx⁻¹ B D^{-1/2} V (N × n_vectors)."""
    weights = eci(labels, theta)
    clusters = clusters_in_order(labels)
    b = np.column_stack([members * w for (_, members), w in zip(clusters, weights)]).astype(float)
    dx = b.sum(axis=1)
    wy = b.T @ np.diag(1 / dx) @ b
    d = wy.sum(axis=1)
    normalised = np.diag(d**-0.5) @ wy @ np.diag(d**-0.5)
    values, vectors = np.linalg.eigh((normalised + normalised.T) / 2)
    order = np.argsort(values)[::-1][:n_vectors]
    return np.diag(1 / dx) @ b @ np.diag(d**-0.5) @ vectors[:, order]
