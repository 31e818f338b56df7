"""Leading eigenvectors of the normalised cluster graph (the Tcut eigenproblem)."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from threadpoolctl import threadpool_limits

# Up to this many clusters a dense eigensolver (LAPACK, exact) is the fastest;
# above it, ARPACK (Lanczos) computes only the vectors needed.
DENSE_EIGEN_LIMIT = 2500


def _canonical_signs(vectors: np.ndarray) -> np.ndarray:
    """Flip each column so its largest-magnitude entry is positive (solver-independent)."""
    pivots = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[pivots, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def leading_eigenvectors(matrix, n_vectors: int) -> np.ndarray:
    """The ``n_vectors`` eigenvectors of a symmetric matrix with the largest eigenvalues.

    Parameters
    ----------
    matrix : (n, n) symmetric ndarray or sparse matrix
    n_vectors : 1 <= n_vectors <= n

    Returns
    -------
    (n, n_vectors) orthonormal columns by descending eigenvalue, each with its
    largest-magnitude entry positive.
    """
    n = matrix.shape[0]
    if n <= DENSE_EIGEN_LIMIT or n_vectors >= n - 1:
        dense = matrix.toarray() if sp.issparse(matrix) else matrix
        # One BLAS thread: at this size threading gains little, and a spinning
        # second thread stalls badly whenever the other core is busy.
        with threadpool_limits(1, user_api="blas"):
            _, vectors = scipy.linalg.eigh(dense, subset_by_index=[n - n_vectors, n - 1])
    else:
        # A fixed start vector keeps the result deterministic.
        start = np.random.default_rng(0).random(n) + 0.5
        values, vectors = scipy.sparse.linalg.eigsh(
            matrix, k=n_vectors, which="LA", v0=start, ncv=min(n, max(2 * n_vectors + 1, 32))
        )
        vectors = vectors[:, np.argsort(values, kind="stable")]
    return _canonical_signs(vectors[:, ::-1])

