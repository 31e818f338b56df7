"""Leading eigenvectors of the normalised cluster graph (the Tcut eigenproblem)."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.csgraph
import scipy.sparse.linalg

from lwec_tasks.core.dendrogram_cut import first_appearance_labels
from lwec_tasks.core.thread_pools import single_threaded

# Up to this many clusters a dense eigensolver (LAPACK, exact) is the fastest;
# above it, ARPACK (Lanczos) computes only the vectors needed.
DENSE_EIGEN_LIMIT = 2500


def _canonical_signs(vectors: np.ndarray) -> np.ndarray:
    """Flip each column so its largest-magnitude entry is positive (solver-independent)."""
    pivots = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[pivots, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def graph_components(matrix) -> tuple[int, np.ndarray]:
    """(number of connected components, component id per node) of a weighted graph.

    Components are numbered in order of their smallest node.
    """
    pattern = sp.csr_matrix(matrix) if not sp.issparse(matrix) else matrix.tocsr()
    pattern.eliminate_zeros()
    count, raw = scipy.sparse.csgraph.connected_components(pattern, directed=False)
    return count, first_appearance_labels(raw)


def unit_eigenvectors(degrees: np.ndarray, component: np.ndarray, n_components: int) -> np.ndarray:
    """(n, n_components) orthonormal basis of the eigenvalue-1 space of D^{-1/2} W D^{-1/2}.

    For each connected component C, D^{1/2}·1_C is an eigenvector with
    eigenvalue 1 (W·1_C = D·1_C); they are mutually orthogonal. Using this fixed
    basis, rather than whatever rotation of it a solver returns, keeps the
    embedding well defined when the graph is disconnected.
    """
    basis = np.zeros((len(degrees), n_components))
    basis[np.arange(len(degrees)), component] = np.sqrt(degrees)
    return basis / np.linalg.norm(basis, axis=0)


def leading_eigenvectors(matrix, n_vectors: int, unit_basis: np.ndarray | None = None) -> np.ndarray:
    """The ``n_vectors`` eigenvectors of a symmetric matrix with the largest eigenvalues.

    Parameters
    ----------
    matrix : (n, n) symmetric ndarray or sparse matrix
    n_vectors : 1 <= n_vectors <= n
    unit_basis : optional (n, c) orthonormal eigenvectors known to hold the top
        eigenvalue (see :func:`unit_eigenvectors`). They are returned first, in
        their given order, and the solver looks for the rest only in their
        orthogonal complement (the matrix is deflated by moving them to −2,
        below every eigenvalue of a normalised graph).

    Returns
    -------
    (n, n_vectors) orthonormal columns by descending eigenvalue, each with its
    largest-magnitude entry positive.
    """
    n = matrix.shape[0]
    fixed = np.zeros((n, 0)) if unit_basis is None else unit_basis[:, :n_vectors]
    remaining = n_vectors - fixed.shape[1]
    if remaining == 0:
        return _canonical_signs(fixed)
    shift = 3.0
    if n <= DENSE_EIGEN_LIMIT or n_vectors >= n - 1:
        dense = matrix.toarray() if sp.issparse(matrix) else np.array(matrix, dtype=np.float64)
        if fixed.shape[1]:
            dense -= shift * (fixed @ fixed.T)
        # One BLAS thread: at this size threading gains little, and a spinning
        # second thread stalls badly whenever the other core is busy.
        with single_threaded(user_api="blas"):
            _, vectors = scipy.linalg.eigh(dense, subset_by_index=[n - remaining, n - 1])
    else:
        operator = matrix
        if fixed.shape[1]:
            operator = scipy.sparse.linalg.LinearOperator(
                (n, n),
                matvec=lambda x: matrix @ x - shift * (fixed @ (fixed.T @ x)),
                dtype=np.float64,
            )
        # A fixed start vector keeps the result deterministic.
        start = np.random.default_rng(0).random(n) + 0.5
        values, vectors = scipy.sparse.linalg.eigsh(
            operator, k=remaining, which="LA", v0=start, ncv=min(n, max(2 * remaining + 1, 32))
        )
        vectors = vectors[:, np.argsort(values, kind="stable")]
    return _canonical_signs(np.hstack([fixed, vectors[:, ::-1]]))


def normalised_graph_eigenvectors(normalised, degrees: np.ndarray, n_vectors: int) -> tuple[np.ndarray, int]:
    """The ``n_vectors`` leading eigenvectors of a normalised graph, with a fixed basis for eigenvalue 1.

    Parameters
    ----------
    normalised : (n, n) symmetric ndarray or sparse matrix D^{-1/2} W D^{-1/2}
    degrees : (n,) the diagonal of D (W's row sums), all > 0
    n_vectors : 1 <= n_vectors <= n

    Returns
    -------
    vectors : (n, n_vectors), as :func:`leading_eigenvectors` gives them, the eigenvalue-1 space spanned by
        :func:`unit_eigenvectors` of the graph's components. A node with no edge (a zero row; its eigenvalue
        is 0, not 1) is left out of that basis.
    n_components : number of connected components, each such node counting as one
    """
    n_components, component = graph_components(normalised)
    row_mass = np.asarray(abs(normalised).sum(axis=1)).ravel()
    linked = np.bincount(component, weights=row_mass, minlength=n_components) > 0
    basis = unit_eigenvectors(degrees, component, n_components)[:, linked]
    return leading_eigenvectors(normalised, n_vectors, basis), n_components
