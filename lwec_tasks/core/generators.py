"""Base-clustering generators beside the paper's k-means, and the mixes that choose them.

Every generator is seeded and fitted on at most :data:`FIT_SAMPLE` rows (:data:`LARGE_N_FIT_SAMPLE` above
``LARGE_N`` rows; a seeded uniform sample when there are more); every row, in the sample or not, is then
labelled by its nearest *prototype*: at most :func:`prototype_budget` points of the fitted sample, each
carrying its cluster (up to that many sample rows the prototypes are the sample rows themselves; beyond it,
k-means sub-centres within each cluster, as many per cluster as its share of the sample). So the cost is
linear in N and a model is a set of labelled centres, which the labelling model
(:mod:`lwec_tasks.core.placement`) places new rows with.

Generators (``k`` is the base clustering's drawn number of clusters):

- ``kmeans`` — the paper's protocol (one k-means initialisation), see :mod:`lwec_tasks.core.base_clusterings`
- ``genie`` — Genie, the Gini-index-corrected minimum-spanning-tree linkage (genieclust), Gini threshold
  drawn from :data:`GENIE_THRESHOLDS`
- ``spectral`` — spectral clustering on an anchor graph (U-SPEC: :data:`SPECTRAL_ANCHORS` anchors, a seeded
  sample of the rows, each row linked to its :data:`SPECTRAL_NEIGHBOURS` nearest anchors by a Gaussian
  kernel, the transfer cut's eigenproblem on the anchors, k-means on the rows' embedding); linear in the rows
- ``gmm`` — a Gaussian mixture with full covariances
- ``subspace`` — k-means on a random half or more of the features
- ``dbscan`` — density-based (DBSCAN, eps the median distance to the 10th neighbour, scaled by a drawn
  factor); its noise points are missing labels, filled by their nearest clustered prototype (the rule that
  places any row)

The mixes that choose among them are read by :mod:`lwec_tasks.core.mixes`. scikit-learn is imported by the
functions that fit (and by :func:`load_libraries`), so a process that fits nothing — a Dask run's flow process —
never loads it.
"""

from __future__ import annotations

import importlib
import math
import sys
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from lwec_tasks.core.nearest_centre import nearest
from lwec_tasks.core.spectral import normalised_graph_eigenvectors
from lwec_tasks.core.thread_pools import find_pools_again

#: scikit-learn's modules the generators fit with (k-means is every mix's), imported by :func:`load_libraries`.
FITTING_LIBRARIES = ("sklearn.cluster", "sklearn.mixture", "sklearn.neighbors")
#: Rows a non-k-means generator is fitted on, at most (a fresh seeded uniform sample per clustering).
FIT_SAMPLE = 10_000
#: Rows a non-k-means generator is fitted on above ``LARGE_N`` rows, at most.
LARGE_N_FIT_SAMPLE = 5_000
#: Prototypes per base clustering up to ``LARGE_N`` rows, at most.
PROTOTYPES = 10_000
#: Prototypes per base clustering above ``LARGE_N`` rows, at most (the cost of placing every row).
LARGE_N_PROTOTYPES = 64
#: Gini thresholds Genie draws from.
GENIE_THRESHOLDS = (0.1, 0.3, 0.5, 0.7, 1.0)
#: Anchors of the spectral generator (a seeded sample of the rows), at most.
SPECTRAL_ANCHORS = 500
#: Nearest anchors each row is linked to.
SPECTRAL_NEIGHBOURS = 5


def fit_rows(kind: str, n_rows: int, large_n: int, sample_size: int) -> int:
    """How many rows generator ``kind`` is fitted on out of ``n_rows`` (k-means keeps the paper's rule:
    all rows up to ``large_n``, else ``sample_size``)."""
    if kind == "kmeans":
        return n_rows if n_rows <= large_n else min(sample_size, n_rows)
    return min(FIT_SAMPLE if n_rows <= large_n else LARGE_N_FIT_SAMPLE, n_rows)


def prototype_budget(n_rows: int, large_n: int) -> int:
    """The most prototypes one base clustering of ``n_rows`` rows keeps."""
    return PROTOTYPES if n_rows <= large_n else LARGE_N_PROTOTYPES


@dataclass(frozen=True)
class Prototypes:
    """A fitted base clustering: rows take the cluster of their nearest prototype.

    cluster_centers_ : (P, d) float64 prototypes, in the space of the rows clustered
    centre_labels : (P,) int64 cluster of each prototype, 0..k−1 (every cluster has one)
    """

    cluster_centers_: np.ndarray
    centre_labels: np.ndarray

    def predict(self, X: np.ndarray) -> np.ndarray:
        """(n,) int64: each row's nearest prototype's cluster (ties: the first prototype)."""
        return self.centre_labels[nearest(X, self.cluster_centers_)]


def load_libraries(kinds) -> None:
    """Import the libraries the generators ``kinds`` need now, in the calling thread, before threads fit them
    side by side (an extension module is then not first loaded by one of them), and find the thread pools they
    bring (:func:`~lwec_tasks.core.thread_pools.find_pools_again`): :data:`FITTING_LIBRARIES` whatever the kinds,
    genieclust for ``genie``."""
    loaded = set(sys.modules)
    for name in (*FITTING_LIBRARIES, *(("genieclust",) if "genie" in kinds else ())):
        importlib.import_module(name)
    if set(sys.modules) != loaded:
        find_pools_again()


def fit_generator(kind: str, X: np.ndarray, k: int, seed: int, budget: int) -> Prototypes:
    """Generator ``kind`` (not ``kmeans``) fitted on the (S, d) rows ``X`` with ``k`` clusters and ``seed``,
    kept as at most ``budget`` prototypes."""
    rng = np.random.default_rng(seed)
    labels = _FIT[kind](X, int(k), rng)
    return compress(X, _compact(labels), budget, int(rng.integers(2**31 - 1)))


def _compact(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..k−1 in order of value; negative labels (noise) stay −1."""
    out = np.full(len(labels), -1, dtype=np.int64)
    clustered = labels >= 0
    if not clustered.any():  # all noise: one cluster
        return np.zeros(len(labels), dtype=np.int64)
    out[clustered] = np.unique(labels[clustered], return_inverse=True)[1]
    return out


def compress(X: np.ndarray, labels: np.ndarray, budget: int, seed: int) -> Prototypes:
    """At most ``budget`` labelled prototypes of the rows ``X`` and their ``labels`` (−1: missing, left out)."""
    kept = labels >= 0
    X, labels = X[kept], labels[kept]
    if len(X) <= budget:
        return Prototypes(np.ascontiguousarray(X, dtype=np.float64), labels.astype(np.int64))
    k = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=k)
    shares = np.maximum(1, np.floor(sizes * (budget - k) / len(X)).astype(np.int64))
    centres, owners = [], []
    for c in range(k):
        members = X[labels == c]
        if len(members) <= shares[c]:
            centres.append(members)
        else:
            from sklearn.cluster import KMeans

            model = KMeans(n_clusters=int(shares[c]), n_init=1, max_iter=50, random_state=seed + c).fit(members)
            centres.append(model.cluster_centers_)
        owners.append(np.full(len(centres[-1]), c, dtype=np.int64))
    return Prototypes(np.ascontiguousarray(np.concatenate(centres), dtype=np.float64), np.concatenate(owners))


def _genie(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    import genieclust

    threshold = float(rng.choice(GENIE_THRESHOLDS))
    # Genie is deterministic; the seed's part is the threshold (and the sample the rows came from).
    return np.asarray(genieclust.Genie(n_clusters=min(k, len(X) - 1), gini_threshold=threshold).fit_predict(X))


def _spectral(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = len(X)
    p = min(SPECTRAL_ANCHORS, n)
    # Anchors are a seeded sample of the rows, not k-means centres: k-means on this many centres amplifies
    # last-bit differences in its arithmetic (which vary between processes) into other anchors and labels.
    anchors = X[np.sort(rng.choice(n, size=p, replace=False))]
    rng.integers(2**31 - 1)  # a draw skipped, so the embedding's k-means below takes the stream's third value
    from sklearn.cluster import KMeans
    from sklearn.neighbors import NearestNeighbors

    K = min(SPECTRAL_NEIGHBOURS, p)
    distances, index = NearestNeighbors(n_neighbors=K).fit(anchors).kneighbors(X)
    sigma2 = max(float(np.mean(distances ** 2)), 1e-12)
    weights = np.exp(-(distances ** 2) / (2.0 * sigma2))
    B = sp.csr_matrix((weights.ravel(), index.ravel(), np.arange(0, n * K + 1, K)), shape=(n, p))
    embedding = transfer_cut_embedding(B, min(k, p - 1))
    norms = np.linalg.norm(embedding, axis=1, keepdims=True)
    embedding /= np.where(norms > 0, norms, 1.0)
    return KMeans(n_clusters=k, n_init=1, random_state=int(rng.integers(2**31 - 1))).fit_predict(embedding)


def transfer_cut_embedding(B: sp.csr_matrix, n_vectors: int) -> np.ndarray:
    """(n, n_vectors) rows' embedding of the transfer cut on the (n, p) row–anchor graph ``B`` (U-SPEC).

    On the anchors, Wy = Bᵀ Dx⁻¹ B; the n_vectors smallest generalised eigenvectors v of (Dy − Wy) v = λ Dy v are
    Dy^{-1/2} u for the leading eigenvectors u of Dy^{-1/2} Wy Dy^{-1/2}, and each row takes Dx⁻¹ B v. When the
    anchor graph falls apart, its eigenvalue-1 space is spanned by a fixed basis (one vector per component,
    :func:`~lwec_tasks.core.spectral.normalised_graph_eigenvectors`) rather than by whatever rotation of it a
    solver returns for the last bits of the input: with fewer vectors than components that rotation would pick
    the clusters.
    """
    dx = np.asarray(B.sum(axis=1)).ravel() + 1e-12
    Wy = (B.T @ sp.diags(1.0 / dx) @ B).tocsr()
    dy = np.asarray(Wy.sum(axis=1)).ravel() + 1e-12
    root = 1.0 / np.sqrt(dy)
    # An anchor no row links to has no edge: its eigenvalue is 0, and it stays out of the eigenvalue-1 basis.
    vectors, _ = normalised_graph_eigenvectors(sp.diags(root) @ Wy @ sp.diags(root), dy, n_vectors)
    return (B @ (vectors * root[:, None])) / dx[:, None]


def _gmm(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    from sklearn.mixture import GaussianMixture

    model = GaussianMixture(n_components=k, covariance_type="full", reg_covar=1e-4, max_iter=100,
                            random_state=int(rng.integers(2**31 - 1)))
    return model.fit(X).predict(X)


def _subspace(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    from sklearn.cluster import KMeans

    d = X.shape[1]
    size = int(rng.integers(max(1, math.ceil(d / 2)), d + 1))
    columns = np.sort(rng.choice(d, size=size, replace=False))
    return KMeans(n_clusters=k, n_init=1, random_state=int(rng.integers(2**31 - 1))).fit_predict(X[:, columns])


def _dbscan(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    from sklearn.cluster import DBSCAN
    from sklearn.neighbors import NearestNeighbors

    neighbours = min(10, len(X) - 1)
    distances, _ = NearestNeighbors(n_neighbors=neighbours + 1).fit(X).kneighbors(X)
    eps = float(np.median(distances[:, -1])) * float(rng.uniform(0.7, 1.5))
    return DBSCAN(eps=max(eps, 1e-12), min_samples=neighbours).fit_predict(X)


_FIT = {"genie": _genie, "spectral": _spectral, "gmm": _gmm, "subspace": _subspace, "dbscan": _dbscan}
