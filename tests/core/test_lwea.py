"""LWEA on microclusters against average linkage on the dense N × N matrix 1 − LWCA."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.cluster.hierarchy import cut_tree, fcluster, is_valid_linkage
from scipy.spatial.distance import squareform

from benchmarks import references as reference
from benchmarks.dense_linkage import weighted_average_linkage
from helpers.pools import draw_ensemble, load_pool
from lwec_tasks import LWEA, Ensemble, LwecMemoryError, ari, eci, lwea, lwea_linkage
from lwec_tasks.core.dendrogram_cut import MicroclusterDendrogram

KS = list(range(2, 31))


def _assert_same_partitions(ours: np.ndarray, dense: np.ndarray) -> None:
    for j in range(ours.shape[1]):
        assert ari(ours[:, j], dense[:, j]) == 1.0, f"column {j}"


def _canonical(partition: np.ndarray, group_of: np.ndarray) -> list:
    """A partition described by the multiset of groups in each cluster.

    Objects of one group are interchangeable, so this is blind to which of them
    a tie-break put where.
    """
    clusters = {}
    for obj, label in enumerate(partition.tolist()):
        clusters.setdefault(label, []).append(int(group_of[obj]))
    return sorted(sorted(members) for members in clusters.values())


@st.composite
def weighted_points(draw):
    """Random tie-free microcluster distances, sizes and intra heights below them."""
    n = draw(st.integers(2, 12))
    condensed = np.array(draw(st.lists(st.floats(0.3, 1.0), min_size=n * (n - 1) // 2,
                                       max_size=n * (n - 1) // 2, unique=True)))
    square = squareform(condensed)
    np.fill_diagonal(square, np.inf)
    sizes = np.array(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    fractions = np.array(draw(st.lists(st.floats(0.05, 0.95), min_size=n, max_size=n)))
    intra = square.min(axis=1) * fractions
    heights = np.concatenate([condensed, intra])
    assume(np.min(np.diff(np.sort(heights))) > 1e-9)  # ties make the cut ambiguous
    return condensed, sizes, intra


@given(weighted_points())
def test_weighted_linkage_and_cuts_equal_average_linkage_on_expanded_objects(points):
    condensed, sizes, intra = points
    dense_tree, group_of = reference.expanded_average_linkage(condensed, sizes, intra)
    tree = weighted_average_linkage(condensed.copy(), sizes)
    dendrogram = MicroclusterDendrogram(tree, intra, group_of, sizes)
    assert np.sort(np.concatenate([tree[:, 2], np.repeat(intra, sizes - 1)])) == pytest.approx(
        dense_tree[:, 2], abs=1e-12
    )
    for k in range(2, len(group_of) + 1):
        dense = cut_tree(dense_tree, n_clusters=k).ravel()
        assert _canonical(dendrogram.cut(k), group_of) == _canonical(dense, group_of), f"k={k}"


def test_late_microcluster_merges_split_identical_objects_like_the_dense_method():
    # Objects 0 and 1 are identical, but their clusters are split by the other
    # clusterings, so their mutual LWCA is low: the dense method merges other
    # pairs first and, cut into 6 clusters, still keeps 0 and 1 apart.
    labels = np.array(
        [[3, 3, 1], [3, 3, 1], [0, 0, 1], [0, 0, 1], [2, 2, 1], [3, 2, 2], [3, 3, 0], [0, 3, 1]]
    )
    ensemble = Ensemble(labels)
    ks = list(range(2, ensemble.n_microclusters + 1))
    dense = reference.dense_lwea(labels, ks, 0.4)
    ours = lwea(labels, ks, 0.4)
    _assert_same_partitions(ours, dense)
    at_six = ours[:, ks.index(6)]
    assert len(np.unique(at_six)) == 6 and at_six[0] != at_six[1]


@pytest.mark.pools
@pytest.mark.parametrize("pool", ["MF", "VS", "Semeion"])
@pytest.mark.parametrize("draw", [0, 1])
def test_pool_cuts_equal_the_dense_reference(pool, draw):
    members, _ = load_pool(pool)
    labels = draw_ensemble(members, 10, seed=0, run=draw)
    _assert_same_partitions(lwea(labels, KS), reference.dense_lwea(labels, KS, 0.4))


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return ari(a, b) == 1.0


def _ensemble_with_repeated_rows(seed: int) -> np.ndarray:
    """40 distinct random label rows, each repeated 1–6 times, in shuffled order."""
    rng = np.random.default_rng(seed)
    rows = np.unique(rng.integers(0, 4, size=(60, 5)), axis=0)[:40]
    repeated = np.repeat(rows, rng.integers(1, 7, size=len(rows)), axis=0)
    return repeated[rng.permutation(len(repeated))]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lwea_linkage_is_a_scipy_linkage_whose_cuts_are_the_lwea_cuts(seed):
    labels = _ensemble_with_repeated_rows(seed)
    ensemble = Ensemble(labels)
    n_micro = ensemble.n_microclusters
    microcluster_of, tree = lwea_linkage(labels, theta=0.4)
    assert tree.shape == (n_micro - 1, 4) and tree.dtype == np.float64
    assert is_valid_linkage(tree, throw=True)
    assert np.all(np.diff(tree[:, 2]) >= 0)
    assert tree[-1, 3] == n_micro
    assert np.array_equal(microcluster_of, ensemble.microcluster_of)

    ks = list(range(2, n_micro + 1))
    cuts = lwea(labels, ks, theta=0.4)
    heights = tree[:, 2]
    compared = fcluster_compared = 0
    for j, k in enumerate(ks):
        whole = len(np.unique(np.column_stack([microcluster_of, cuts[:, j]]), axis=0)) == n_micro
        if not whole:  # lwea split a microcluster: Z, whose leaves are microclusters, cannot
            continue
        compared += 1
        assert _same_partition(cut_tree(tree, n_clusters=k).ravel()[microcluster_of], cuts[:, j]), k
        # No tie at the cut; and k < Ñ − 1, as scipy 1.11's fcluster(maxclust) returns Ñ − 2 clusters for
        # k = Ñ − 1 even on scipy's own linkages (cut_tree above covers that k).
        if heights[n_micro - k] - heights[n_micro - k - 1] > 1e-12 and k < n_micro - 1:
            fcluster_compared += 1
            by_fcluster = fcluster(tree, k, criterion="maxclust")
            assert _same_partition(by_fcluster[microcluster_of], cuts[:, j]), k
    assert compared >= 10 and fcluster_compared >= 10


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lwea_linkage_distances_are_size_weighted_average_linkage_of_the_microclusters(seed):
    """scipy's average linkage on the microclusters expanded into their objects at distance 0."""
    labels = _ensemble_with_repeated_rows(seed)
    microcluster_of, tree = lwea_linkage(labels, theta=0.4)
    representatives = np.unique(microcluster_of, return_index=True)[1]
    distance = 1.0 - reference.lwca(labels, 0.4)[np.ix_(representatives, representatives)]
    sizes = np.bincount(microcluster_of)
    expanded_tree, _ = reference.expanded_average_linkage(squareform(distance, checks=False), sizes)
    # Objects of one microcluster merge first, at 0; then the microclusters.
    n_intra = int(np.sum(sizes - 1))
    assert np.all(expanded_tree[:n_intra, 2] == 0) and np.all(expanded_tree[n_intra:, 2] > 0)
    np.testing.assert_allclose(tree[:, 2], expanded_tree[n_intra:, 2], rtol=0, atol=1e-12)
    for k in range(2, len(sizes) + 1):
        expected = cut_tree(expanded_tree, n_clusters=k).ravel()
        ours = cut_tree(tree, n_clusters=k).ravel()[np.repeat(np.arange(len(sizes)), sizes)]
        assert _same_partition(ours, expected), k


def test_scalar_and_sequence_forms_agree_and_labels_are_compact():
    labels = np.array([[0, 0], [0, 0], [1, 1], [1, 2], [2, 2], [2, 2]])
    both = lwea(labels, [2, 3])
    assert both.shape == (6, 2)
    assert np.array_equal(lwea(labels, 3), both[:, 1])
    for j, k in enumerate([2, 3]):
        assert sorted(set(both[:, j].tolist())) == list(range(k))


def test_identical_base_clusterings_give_that_clustering():
    truth = np.repeat(np.arange(4), 5)
    labels = np.column_stack([truth, (truth + 1) % 4, truth * 7])
    assert ari(lwea(labels, 4), truth) == 1.0


def test_estimator_matches_function():
    labels = np.random.default_rng(3).integers(0, 4, size=(50, 6))
    model = LWEA(n_clusters=[2, 5], theta=0.7).fit(labels)
    assert np.array_equal(model.labels_, lwea(labels, [2, 5], theta=0.7))
    assert np.array_equal(model.eci_, eci(labels, 0.7))


def test_memory_guard_suggests_lwgp(monkeypatch):
    monkeypatch.setenv("LWEC_MEMORY_LIMIT_BYTES", str(1_000))
    labels = np.random.default_rng(0).integers(0, 8, size=(200, 4))
    with pytest.raises(LwecMemoryError, match="microclusters.*lwgp"):
        lwea(labels, 3)
