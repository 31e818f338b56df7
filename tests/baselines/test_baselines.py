"""Baseline consensus methods on small ensembles with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from benchmarks import references as reference
from lwec_tasks import Ensemble, LwecInputError, lwgp
from lwec_tasks.baselines import cspa, eac, hbgf, kcc, mcla, ncai, sec, weac
from lwec_tasks.baselines.coassociation import coassociation_dendrogram
from lwec_tasks.methods import METHODS, get_method, parse_methods, run_method

BASELINES = {"EAC": eac, "WEAC": weac, "HBGF": hbgf, "CSPA": cspa, "MCLA": mcla, "SEC": sec, "KCC": kcc}


def relabelled_copies(truth: np.ndarray, n_columns: int, seed: int = 0) -> np.ndarray:
    """n_columns copies of ``truth``, each with its labels permuted and shifted."""
    rng = np.random.default_rng(seed)
    k = truth.max() + 1
    return np.column_stack([rng.permutation(k)[truth] + 10 * m for m in range(n_columns)])


def noisy_blocks(n_per_block=(30, 25, 35), n_columns=12, noise=0.1, seed=0):
    """Truth of three blocks and base clusterings that mostly agree with it.

    Each column relabels ``noise`` of the objects at random; every third column
    also splits block 0 in two (a finer clustering of the same structure).
    """
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(len(n_per_block)), n_per_block)
    columns = []
    for m in range(n_columns):
        column = truth.copy()
        if m % 3 == 0:
            block0 = np.flatnonzero(truth == 0)
            column[block0[: len(block0) // 2]] = len(n_per_block)
        flip = rng.random(len(truth)) < noise
        column[flip] = rng.integers(0, len(n_per_block), flip.sum())
        columns.append(column)
    return np.column_stack(columns), truth


@pytest.mark.parametrize("name", list(BASELINES))
def test_identical_base_clusterings_give_that_clustering(name):
    truth = np.repeat([0, 1, 2], [7, 3, 10])
    labels = relabelled_copies(truth, n_columns=4)
    result = BASELINES[name](labels, 3, random_state=0)
    assert result.shape == (len(truth),)
    assert adjusted_rand_score(truth, result) == 1.0


@pytest.mark.parametrize("name", list(BASELINES))
def test_recovers_noisy_blocks(name):
    labels, truth = noisy_blocks()
    result = BASELINES[name](labels, 3, random_state=1)
    assert adjusted_rand_score(truth, result) > 0.9


@pytest.mark.parametrize("name", list(BASELINES))
def test_list_of_ks_gives_one_column_per_k_and_same_seed_same_answer(name):
    labels, _ = noisy_blocks(seed=3)
    ks = [2, 3, 5]
    first = BASELINES[name](Ensemble(labels), ks, random_state=7)
    again = BASELINES[name](labels, ks, random_state=7)
    assert first.shape == (labels.shape[0], 3)
    np.testing.assert_array_equal(first, again)
    for j, k in enumerate(ks):
        assert len(np.unique(first[:, j])) <= k
        single = BASELINES[name](labels, k, random_state=7)
        assert adjusted_rand_score(single, first[:, j]) == 1.0


@pytest.mark.parametrize("name", list(BASELINES))
def test_k_above_distinct_rows_is_a_clear_error(name):
    labels = relabelled_copies(np.array([0, 0, 1, 1, 2]), 3)
    with pytest.raises(LwecInputError, match="microclusters"):
        BASELINES[name](labels, 4)


def test_eac_hand_example():
    # Co-association: (0,1)=1, (4,5)=1, (0,2)=(1,2)=(3,4)=(3,5)=2/3, (2,3)=1/3, rest 0.
    labels = np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0], [1, 1, 1], [1, 2, 1], [1, 2, 1]])
    np.testing.assert_array_equal(eac(labels, 2), [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(eac(labels, 4), [0, 0, 1, 2, 3, 3])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coassociation_dendrogram_matches_dense_average_linkage(seed):
    rng = np.random.default_rng(seed)
    labels, _ = noisy_blocks(n_per_block=(15, 12, 20), n_columns=6, noise=0.3, seed=seed)
    # Generic weights make ties between merge heights (almost surely) absent,
    # so the dendrogram is unique and both implementations must agree exactly.
    weights = rng.dirichlet(np.ones(labels.shape[1]))
    tree = reference.similarity_linkage(reference.coassociation(labels, weights))
    heights = tree[:, 2]
    n = len(labels)
    # Identical objects still tie (distance 0, and equal distances to others);
    # compare every k whose cut falls between two clearly different heights.
    ks = [k for k in range(2, 25) if heights[n - k] - heights[n - k - 1] > 1e-9]
    assert len(ks) >= 15
    dendrogram = coassociation_dendrogram(Ensemble(labels), weights)
    for k in ks:
        expected = fcluster(tree, k, "maxclust")
        assert adjusted_rand_score(expected, dendrogram.cut(k)) == 1.0


def test_ncai_by_hand():
    labels, _ = noisy_blocks(n_columns=5, seed=4)
    m = labels.shape[1]
    agreement = np.array(
        [
            [normalized_mutual_info_score(labels[:, a], labels[:, b], average_method="max") if a != b else 0.0
             for b in range(m)]
            for a in range(m)
        ]
    )
    cai = agreement.sum(axis=1) / (m - 1)
    np.testing.assert_allclose(ncai(labels), cai / cai.max())
    np.testing.assert_allclose(ncai(relabelled_copies(np.array([0, 1, 1, 2]), 4)), np.ones(4))


def test_weac_with_beta_zero_is_eac_and_downweights_a_noise_column():
    labels, truth = noisy_blocks(noise=0.05, seed=5)
    ks = [2, 3, 4, 5]
    np.testing.assert_array_equal(weac(labels, ks, beta=0.0), eac(labels, ks))
    noise_column = np.random.default_rng(0).integers(0, 3, len(truth))
    with_noise = np.column_stack([labels, noise_column])
    weights = ncai(with_noise)
    assert weights.argmin() == with_noise.shape[1] - 1
    assert adjusted_rand_score(truth, weac(with_noise, 3)) == 1.0


def test_hbgf_is_lwgp_with_unit_weights():
    labels, _ = noisy_blocks(noise=0.2, seed=6)
    ks = [2, 3, 4]
    # θ → ∞ makes every ECI exp(−H/(θM)) → 1: LWGP's graph becomes HBGF's.
    expected = lwgp(labels, ks, theta=1e12, random_state=3)
    np.testing.assert_array_equal(hbgf(labels, ks, random_state=3), expected)


def test_mcla_may_return_fewer_clusters_but_never_more():
    labels = relabelled_copies(np.repeat([0, 1], [10, 10]), 3)
    labels = np.column_stack([labels, np.tile([0, 1, 2, 3], 5)])
    for k in (2, 3, 4, 5):
        assert len(np.unique(mcla(labels, k, random_state=0))) <= k


def test_sec_groups_objects_by_their_degree_weighted_indicator():
    # Two exact groups; SEC's points b_i / d_i coincide within each group.
    labels = np.array([[0, 0], [0, 0], [0, 0], [1, 1], [1, 1]])
    assert adjusted_rand_score(sec(labels, 2, random_state=0), [0, 0, 0, 1, 1]) == 1.0


def test_registry_names_and_errors():
    assert list(METHODS) == ["LWEA", "LWGP", "EAC", "WEAC", "HBGF", "CSPA", "MCLA", "SEC", "KCC"]
    assert [m.name for m in parse_methods("lwea, EAC,LWEA")] == ["LWEA", "EAC"]
    with pytest.raises(LwecInputError, match="unknown method.*'FOO'.*known methods: LWEA"):
        parse_methods("LWEA,FOO")
    with pytest.raises(LwecInputError, match="unknown method"):
        get_method("HGPA")
    labels, truth = noisy_blocks(seed=8)
    for name in METHODS:
        cuts = run_method(name, labels, [2, 3], theta=0.4, random_state=0)
        assert cuts.shape == (len(truth), 2)
        assert adjusted_rand_score(truth, cuts[:, 1]) > 0.9
