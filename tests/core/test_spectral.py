"""The normalised graph's leading eigenvectors, against dense LAPACK on random graphs that fall apart."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from lwec_tasks.core.spectral import normalised_graph_eigenvectors


def _random_graph(rng: np.random.Generator, sizes: list[int], n_isolated: int) -> np.ndarray:
    """A symmetric non-negative W: one dense random block per entry of ``sizes``, then ``n_isolated`` nodes with
    no edge, all shuffled."""
    n = sum(sizes) + n_isolated
    W = np.zeros((n, n))
    start = 0
    for size in sizes:
        block = rng.uniform(0.1, 1.0, size=(size, size))
        W[start:start + size, start:start + size] = block + block.T
        start += size
    order = rng.permutation(n)
    return W[np.ix_(order, order)]


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(2, 6), min_size=1, max_size=4), n_isolated=st.integers(0, 2),
       seed=st.integers(0, 2**31), sparse=st.booleans(), data=st.data())
def test_leading_eigenvectors_of_a_graph_that_falls_apart(sizes, n_isolated, seed, sparse, data):
    W = _random_graph(np.random.default_rng(seed), sizes, n_isolated)
    n = len(W)
    degrees = W.sum(axis=1) + 1e-12  # as the callers pass them: an isolated node's degree is not 0
    root = 1.0 / np.sqrt(degrees)
    normalised = root[:, None] * W * root[None, :]
    n_vectors = data.draw(st.integers(1, n - 1))
    vectors, n_components = normalised_graph_eigenvectors(sp.csr_matrix(normalised) if sparse else normalised,
                                                          degrees, n_vectors)
    assert n_components == len(sizes) + n_isolated
    assert vectors.shape == (n, n_vectors)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(n_vectors), atol=1e-8)
    # Each column is an eigenvector, and the eigenvalues are the largest ones, in descending order.
    expected = scipy.linalg.eigvalsh(normalised)[::-1][:n_vectors]
    values = np.einsum("ij,ij->j", vectors, normalised @ vectors)
    np.testing.assert_allclose(normalised @ vectors, vectors * values, atol=1e-7)
    np.testing.assert_allclose(values, expected, atol=1e-7)
    # The eigenvalue-1 vectors are the fixed basis: √degree on one component (linked nodes only), zero elsewhere.
    for column in range(min(n_vectors, len(sizes))):
        vector = vectors[:, column]
        support = np.flatnonzero(np.abs(vector) > 1e-12)
        assert np.all(W[support].sum(axis=1) > 0)
        np.testing.assert_allclose(vector[support], np.sqrt(degrees[support]) / np.linalg.norm(
            np.sqrt(degrees[support])), rtol=1e-10)
