"""The scale path of ECI and LWGP at N = 10⁵ against straightforward scipy.sparse references.

The package never builds the N × n_c incidence matrix; here every step is
recomputed the textbook way (sparse B, Bᵀ Dx⁻¹ B, eigh, B·V) and compared.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks import references as reference
from lwec_tasks import Ensemble, eci, lwgp, nmi
from lwec_tasks.core import pair_kernels, spectral
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.synthetic import synthetic_ensemble

lwgp_module = importlib.import_module("lwec_tasks.core.lwgp")


def cluster_graph(ensemble, weights):
    """(Wy, dx): Wy = Bᵀ Dx⁻¹ B, the graph LWGP normalises, by the same accumulation with the weights as factors."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    return lwgp_module._accumulated_graph(ensemble, weights, weights)

N = 100_000
THETA = 0.4


@pytest.fixture(scope="module")
def ensemble_and_truth():
    labels, truth = synthetic_ensemble(N, 10, n_classes=6, k_min=20, k_max=120, random_state=3)
    return labels, truth


@pytest.fixture(scope="module")
def encoded(ensemble_and_truth):
    return Ensemble(ensemble_and_truth[0])


def _same_up_to_sign(a: np.ndarray, b: np.ndarray, atol: float) -> None:
    for j in range(a.shape[1]):
        sign = np.sign(a[:, j] @ b[:, j])
        np.testing.assert_allclose(a[:, j], sign * b[:, j], atol=atol, err_msg=f"vector {j}")


def test_int32_input_is_encoded_without_copy_like_the_general_path(ensemble_and_truth, encoded):
    labels = ensemble_and_truth[0]
    assert labels.dtype == np.int32
    general = Ensemble(labels[:2000].astype(float))  # validated, int64 route
    fast = Ensemble(labels[:2000])
    assert np.array_equal(general.codes, fast.codes)
    assert np.array_equal(general.cluster_sizes, fast.cluster_sizes)
    assert np.array_equal(general.cluster_label, fast.cluster_label)
    assert encoded.codes.dtype == np.int32 and encoded.codes.shape == labels.shape
    assert np.array_equal(
        encoded.cluster_sizes, np.concatenate([np.bincount(c) for c in encoded.codes.T])
    )


def test_eci_equals_the_bincount_reference(ensemble_and_truth, encoded):
    np.testing.assert_allclose(eci(encoded, THETA), reference.eci(ensemble_and_truth[0], THETA), rtol=1e-12)


def _reference_graph(labels: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Wy = Bᵀ Dx⁻¹ B dense, dx) with the reference's sparse B."""
    b = reference.incidence(labels, weights)
    dx = np.asarray(b.sum(axis=1)).ravel()
    return (b.T @ sp.diags(1 / dx) @ b).toarray(), dx


def test_cluster_graph_equals_the_sparse_product(ensemble_and_truth, encoded):
    weights = eci(encoded, THETA)
    expected, dx_ref = _reference_graph(ensemble_and_truth[0], weights)
    wy, dx = cluster_graph(encoded, weights)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-13)
    np.testing.assert_allclose(wy, expected, rtol=1e-10, atol=1e-12)
    # closed-form degrees used for the normalisation: Wy·1 = ECI ⊙ sizes
    np.testing.assert_allclose(wy.sum(axis=1), weights * encoded.cluster_sizes, rtol=1e-10)


def test_normalised_cluster_graph_equals_the_normalised_sparse_product(ensemble_and_truth, encoded):
    weights = eci(encoded, THETA)
    wy, dx_ref = _reference_graph(ensemble_and_truth[0], weights)
    d = wy.sum(axis=1)
    normalised, dx = lwgp_module.normalised_cluster_graph(encoded, weights)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-13)
    np.testing.assert_allclose(normalised, wy / np.sqrt(np.outer(d, d)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("build", ["cluster_graph", "normalised_cluster_graph"])
def test_sparse_cluster_graph_equals_the_dense_one(encoded, monkeypatch, build):
    weights = eci(encoded, THETA)
    build = cluster_graph if build == "cluster_graph" else lwgp_module.normalised_cluster_graph
    dense, _ = build(encoded, weights)
    monkeypatch.setattr(lwgp_module, "DENSE_GRAPH_LIMIT", 10)
    sparse, _ = build(encoded, weights)
    assert sp.issparse(sparse)
    np.testing.assert_allclose(sparse.toarray(), dense, rtol=1e-12, atol=1e-15)


def test_serial_and_parallel_kernels_agree(encoded, monkeypatch):
    weights = eci(encoded, THETA)
    serial_eci = pair_kernels.split_entropy_terms(
        pair_kernels.column_major_codes(encoded.codes), encoded.offsets, encoded.cluster_sizes.astype(float)
    )
    serial_graph, serial_dx = cluster_graph(encoded, weights)
    monkeypatch.setattr(pair_kernels, "PARALLEL_MIN_WORK", 0)
    parallel_eci = pair_kernels.split_entropy_terms(
        pair_kernels.column_major_codes(encoded.codes), encoded.offsets, encoded.cluster_sizes.astype(float)
    )
    parallel_graph, parallel_dx = cluster_graph(encoded, weights)
    assert np.array_equal(serial_eci, parallel_eci)
    assert np.array_equal(serial_graph, parallel_graph)
    assert np.array_equal(serial_dx, parallel_dx)


@pytest.mark.parametrize("eigen_limit", [10_000, 10], ids=["dense-eigh", "arpack"])
def test_embedding_equals_the_reference_up_to_sign(ensemble_and_truth, encoded, monkeypatch, eigen_limit):
    monkeypatch.setattr(spectral, "DENSE_EIGEN_LIMIT", eigen_limit)
    weights = eci(encoded, THETA)
    ours = lwgp_module.tcut_embedding(encoded, weights, 8)
    expected = reference.tcut_embedding(ensemble_and_truth[0], weights, 8)
    # the leading vector is the trivial one (constant after the transfer)
    np.testing.assert_allclose(ours[:, 0] / ours[0, 0], 1.0, rtol=1e-8)
    _same_up_to_sign(ours, expected, atol=1e-8 * np.abs(expected).max())


def test_embedding_of_selected_rows_is_the_same_rows(encoded):
    weights = eci(encoded, THETA)
    rows = np.array([5, 0, 99_999, 1234])
    np.testing.assert_allclose(
        lwgp_module.tcut_embedding(encoded, weights, 5, rows),
        lwgp_module.tcut_embedding(encoded, weights, 5)[rows],
        rtol=1e-12,
        atol=1e-15,
    )


def test_labels_equal_kmeans_on_the_reference_embedding(ensemble_and_truth, encoded):
    k, seed = 6, 11
    weights = eci(encoded, THETA)
    embedding = spectral._canonical_signs(reference.tcut_embedding(ensemble_and_truth[0], weights, k))
    rows = encoded.microcluster_representative
    expected = lwgp_module.partition_embedding(
        embedding[rows], k, derived_seed(base_seed(seed), k), encoded.microcluster_sizes.astype(float)
    )[encoded.microcluster_of]
    ours = lwgp(encoded, k, random_state=seed)
    assert np.array_equal(ours, expected)


def test_sampled_kmeans_on_many_microclusters_is_seeded_and_accurate(ensemble_and_truth, encoded, monkeypatch):
    """Above SAMPLE_THRESHOLD microclusters k-means' replicates run on a seeded sample of them, then Lloyd
    iterations on all of them (weighted)."""
    exact = lwgp(encoded, 6, random_state=5)
    assert encoded.n_microclusters > 2_000
    monkeypatch.setattr(lwgp_module, "SAMPLE_THRESHOLD", 2_000)
    monkeypatch.setattr(lwgp_module, "SAMPLE_SIZE", 1_000)
    first = lwgp(encoded, [4, 6], random_state=5)
    assert np.array_equal(first, lwgp(encoded, [4, 6], random_state=5))
    assert np.array_equal(first[:, 1], lwgp(encoded, 6, random_state=5))
    assert nmi(first[:, 1], ensemble_and_truth[1]) > 0.95
    assert nmi(first[:, 1], exact) > 0.95


@pytest.mark.parametrize("eigen_limit", [10_000, 10], ids=["dense-eigh", "arpack"])
def test_labels_for_a_k_do_not_depend_on_the_other_ks(encoded, monkeypatch, eigen_limit):
    monkeypatch.setattr(spectral, "DENSE_EIGEN_LIMIT", eigen_limit)
    together = lwgp(encoded, [3, 12], random_state=2)
    assert np.array_equal(together[:, 0], lwgp(encoded, 3, random_state=2))
    assert np.array_equal(together[:, 1], lwgp(encoded, 12, random_state=2))
