"""LWGP: the Tcut embedding against the authors' dense formulation, and the consensus."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from benchmarks import references as reference
from lwec_tasks import LWGP, Ensemble, ari, eci, lwgp
from lwec_tasks.core.lwgp import tcut_embedding


def _align_signs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Flip columns of ``a`` to match the sign of ``b`` (eigenvectors are sign-free)."""
    signs = np.sign(np.sum(a * b, axis=0))
    signs[signs == 0] = 1
    return a * signs


@given(
    st.integers(6, 40).flatmap(
        lambda n: st.integers(2, 4).flatmap(
            lambda m: arrays(np.int64, (n, m), elements=st.integers(0, 4))
        )
    ),
    st.floats(0.1, 2.0),
)
def test_embedding_matches_dense_tcut_where_the_eigenvectors_are_unique(labels, theta):
    ensemble = Ensemble(labels)
    n_c = ensemble.n_clusters_total
    n_vectors = 3
    # Compare only when the leading eigenvalues are well separated (unique vectors).
    assume(n_c > n_vectors)
    values, ref = reference.tcut(labels, reference.eci(labels, theta), n_vectors + 1)
    assume(np.min(-np.diff(values)) >= 1e-6)
    ours = tcut_embedding(ensemble, eci(ensemble, theta), n_vectors)
    assert ours.shape == (len(labels), n_vectors)
    assert _align_signs(ours, ref[:, :n_vectors]) == pytest.approx(ref[:, :n_vectors], abs=1e-8)


def _blocks(seed: int, n_per_class: int = 30, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Four classes; eight base clusterings that each relabel some objects at random."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(4), n_per_class)
    columns = []
    for _ in range(8):
        column = truth.copy()
        flip = rng.random(len(truth)) < noise
        column[flip] = rng.integers(0, 6, flip.sum())
        columns.append(rng.permutation(6)[column])
    return np.column_stack(columns), truth


def test_recovers_well_separated_classes():
    labels, truth = _blocks(0)
    assert ari(lwgp(labels, 4, random_state=0), truth) > 0.9


def test_identical_base_clusterings_give_that_clustering():
    truth = np.repeat(np.arange(3), 7)
    labels = np.column_stack([truth, truth[::-1] * 0 + truth, (truth + 2) % 3])
    assert ari(lwgp(labels, 3, random_state=1), truth) == 1.0


def test_same_seed_same_labels_and_k_independent_of_other_ks():
    labels, _ = _blocks(1, noise=0.3)
    all_ks = lwgp(labels, [2, 3, 4, 5], random_state=7)
    assert all_ks.shape == (120, 4)
    assert np.array_equal(all_ks, lwgp(labels, [2, 3, 4, 5], random_state=7))
    assert np.array_equal(lwgp(labels, 4, random_state=7), all_ks[:, 2])
    for j, k in enumerate([2, 3, 4, 5]):
        assert len(np.unique(all_ks[:, j])) == k


def test_estimator_matches_function_and_sklearn_conventions():
    from sklearn.base import clone

    labels, _ = _blocks(2)
    model = LWGP(n_clusters=4, theta=0.5, random_state=3)
    assert model.get_params() == {"n_clusters": 4, "theta": 0.5, "random_state": 3}
    assert clone(model).get_params() == model.get_params()
    predicted = model.fit_predict(labels)
    assert np.array_equal(predicted, lwgp(labels, 4, theta=0.5, random_state=3))
    assert np.array_equal(model.eci_, eci(labels, 0.5))
    assert model.n_features_in_ == 8
    assert model.cluster_uncertainty_.shape == model.eci_.shape


def _disconnected(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four groups that no base clustering crosses: the cluster graph has 4 components."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 4, 400)
    labels = np.column_stack([groups * 10 + rng.integers(0, 3, 400) for _ in range(5)])
    return labels, groups


def test_disconnected_graph_gives_labels_independent_of_the_other_ks():
    labels, groups = _disconnected()
    alone = lwgp(labels, 2, random_state=0)
    together = lwgp(labels, [2, 4, 6], random_state=0)
    assert np.array_equal(alone, together[:, 0])
    assert ari(together[:, 1], groups) == 1.0


def test_sparse_eigensolver_finds_every_component(monkeypatch):
    import lwec_tasks.core.spectral as spectral

    labels, groups = _disconnected(1)
    dense = lwgp(labels, [3, 4, 8], random_state=2)
    monkeypatch.setattr(spectral, "DENSE_EIGEN_LIMIT", 10)
    sparse = lwgp(labels, [3, 4, 8], random_state=2)
    assert np.array_equal(dense, sparse)
    assert ari(sparse[:, 1], groups) == 1.0


def test_theta_so_small_that_eci_underflows_is_named():
    from lwec_tasks import LwecInputError

    labels = np.random.default_rng(0).integers(0, 5, (100, 6))
    with pytest.raises(LwecInputError, match="theta=0.001 is too small"):
        lwgp(labels, 4, theta=1e-3)
