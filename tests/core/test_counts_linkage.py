"""LWEA's linkage from cluster counts against the dense nearest-neighbour chain on the condensed matrix.

The dense reference (``benchmarks/dense_linkage.py``) is what the package used before: distances
1 − Σ_shared w / M between microclusters in a condensed matrix, updated by the Lance–Williams formula.
Both follow the same chain and tie rule, so away from exact ties they make the same merges in the same
order; the heights agree to round-off.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import cut_tree, is_valid_linkage
from scipy.spatial.distance import squareform

from benchmarks.dense_linkage import microcluster_distances, weighted_average_linkage
from helpers.pools import draw_ensemble, load_pool
from lwec_tasks import Ensemble
from lwec_tasks.core import counts_linkage
from lwec_tasks.core.counts_linkage import counts_average_linkage
from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.synthetic import synthetic_ensemble


@st.composite
def weighted_ensembles(draw):
    """A small label matrix and one positive weight per cluster from a seeded generator: continuous, so two
    equal weights or sums of weights have probability zero (equal distances still arise from the structure)."""
    n = draw(st.integers(2, 40))
    m = draw(st.integers(1, 5))
    n_labels = draw(st.integers(1, 5))
    labels = np.array(draw(st.lists(st.lists(st.integers(0, n_labels - 1), min_size=m, max_size=m),
                                    min_size=n, max_size=n)))
    ensemble = Ensemble(labels)
    weights = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).uniform(0.05, 1.0, ensemble.n_clusters_total)
    return ensemble, weights


def _average_distance(distances: np.ndarray, sizes: np.ndarray, a: list[int], b: list[int]) -> float:
    """Mean distance between the objects of two groups of microclusters (each microcluster counts its size)."""
    block = distances[np.ix_(a, b)] * np.outer(sizes[a], sizes[b])
    return block.sum() / (sizes[a].sum() * sizes[b].sum())


def _check_greedy_average_linkage(tree: np.ndarray, distances: np.ndarray, sizes: np.ndarray) -> bool:
    """Each row, in height order, joins two current groups at their mean object distance, and no two current
    groups are closer (to 1e-12): the definition of average linkage, ties broken either way.

    Returns whether the tree is the only one: at every row the closest pair of current groups is closer than
    every other pair by more than 1e-9 (two pairs tied at the minimum, even if they do not share the merge
    height, let either be joined first)."""
    members = {leaf: [leaf] for leaf in range(len(sizes))}
    unique = True
    for row, (left, right, height, count) in enumerate(tree):
        a, b = members.pop(int(left)), members.pop(int(right))
        assert height == pytest.approx(_average_distance(distances, sizes, a, b), abs=1e-12)
        groups = [a, b, *members.values()]
        pair_distances = sorted(_average_distance(distances, sizes, g, h)
                                for i, g in enumerate(groups) for h in groups[i + 1:])
        closest = pair_distances[0]
        assert height <= closest + 1e-12, f"row {row} merges at {height}, but two groups are at {closest}"
        if len(pair_distances) > 1 and pair_distances[1] - closest <= 1e-9:
            unique = False
        members[len(sizes) + row] = a + b
        assert count == len(a) + len(b)
    return unique


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return len(np.unique(a * (b.max() + 1) + b)) == len(np.unique(a)) == len(np.unique(b))


@settings(max_examples=300, deadline=None)
@given(weighted_ensembles())
def test_the_linkage_is_average_linkage_and_the_dense_paths_tree(case):
    ensemble, weights = case
    n_micro = ensemble.n_microclusters
    tree = counts_average_linkage(ensemble.microcluster_codes, weights, ensemble.n_columns,
                                  ensemble.microcluster_sizes)
    assert tree.shape == (max(n_micro - 1, 0), 4)
    if n_micro < 2:
        return
    assert is_valid_linkage(tree) and tree[-1, 3] == n_micro
    assert np.all(np.diff(tree[:, 2]) >= 0)
    distances = squareform(microcluster_distances(ensemble.microcluster_codes, weights, ensemble.n_columns))
    unique = _check_greedy_average_linkage(tree, distances, ensemble.microcluster_sizes)
    dense = weighted_average_linkage(
        microcluster_distances(ensemble.microcluster_codes, weights, ensemble.n_columns),
        ensemble.microcluster_sizes)
    # With a single closest pair at every step the average-linkage tree is unique: the same rows and heights.
    # (At a tie the dense path's Lance–Williams round-off may break it the other way.)
    if unique:
        np.testing.assert_allclose(tree[:, 2], dense[:, 2], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(tree[:, [0, 1, 3]], dense[:, [0, 1, 3]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_shortcut_after_a_merge_saves_queries_and_changes_no_merge(seed):
    """Falling back to a chain element whose nearest neighbour was just merged, the chain may push a group
    (or merge with the element below) without a query; every merge, distance and size must be what a query
    at every step gives."""
    labels, _ = synthetic_ensemble(4000, 10, n_classes=6, k_min=6, k_max=40, random_state=seed)
    ensemble = Ensemble(labels)
    arguments = (ensemble.microcluster_codes, ensemble_eci(ensemble, 0.4), 10, ensemble.microcluster_sizes)
    quick, quick_queries = counts_linkage.run_chain(*arguments)
    full, full_queries = counts_linkage.run_chain(*arguments, shortcut=False)
    np.testing.assert_array_equal(quick, full)
    assert quick_queries < 0.97 * full_queries


@st.composite
def tied_ensembles(draw):
    """A label matrix whose cluster weights come from a set of two or three values (zero among them at times):
    many pairs of groups then sit at exactly the same distance, and the tie rule decides."""
    n = draw(st.integers(2, 60))
    m = draw(st.integers(1, 6))
    n_labels = draw(st.integers(2, 6))
    labels = np.array(draw(st.lists(st.lists(st.integers(0, n_labels - 1), min_size=m, max_size=m),
                                    min_size=n, max_size=n)))
    ensemble = Ensemble(labels)
    values = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=3, unique=True))
    weights = np.asarray(draw(st.lists(st.sampled_from(values), min_size=ensemble.n_clusters_total,
                                       max_size=ensemble.n_clusters_total)))
    return ensemble, weights


@settings(max_examples=400, deadline=None)
@given(tied_ensembles())
def test_falling_back_without_a_query_makes_the_merges_a_query_at_every_push_makes(case):
    """The fall back decides from the runner-ups and the bound only when nothing else can tie; with ties
    everywhere the merges (slots, heights, sizes) must still be those of querying at every push."""
    ensemble, weights = case
    if ensemble.n_microclusters < 2:
        return
    arguments = (ensemble.microcluster_codes, weights, ensemble.n_columns, ensemble.microcluster_sizes)
    quick, _ = counts_linkage.run_chain(*arguments)
    full, _ = counts_linkage.run_chain(*arguments, shortcut=False)
    np.testing.assert_array_equal(quick, full)


def test_groups_sharing_no_cluster_merge_last_at_distance_one():
    # Two blocks of objects whose base clusters never overlap.
    block = np.array([[0, 0], [0, 1], [1, 1], [1, 0]])
    labels = np.vstack([block, block + 2])
    ensemble = Ensemble(labels)
    weights = ensemble_eci(ensemble, 0.4)
    tree = counts_average_linkage(ensemble.microcluster_codes, weights, 2, ensemble.microcluster_sizes)
    assert is_valid_linkage(tree)
    assert tree[-1, 2] == 1.0 and np.all(tree[:-1, 2] < 1.0)
    halves = cut_tree(tree, n_clusters=2).ravel()[ensemble.microcluster_of]
    assert _same_partition(halves, np.repeat([0, 1], 4))


def test_long_linkages_report_their_progress(monkeypatch):
    monkeypatch.setattr(counts_linkage, "_PROGRESS_EVERY_SECONDS", 0.0)
    labels = np.random.default_rng(0).integers(0, 6, size=(3000, 6))
    ensemble = Ensemble(labels)
    heard = []
    counts_average_linkage(ensemble.microcluster_codes, ensemble_eci(ensemble, 0.4), 6,
                           ensemble.microcluster_sizes, report=lambda *values: heard.append(values))
    total = ensemble.n_microclusters - 1
    assert heard, "no progress reported"
    done = [d for d, _, _ in heard]
    assert done == sorted(done) and done[-1] == total and all(t == total for _, t, _ in heard)
    assert all(seconds >= 0 for _, _, seconds in heard)


@pytest.mark.pools
@pytest.mark.parametrize("pool", ["VS", "Semeion", "MF", "IS", "ODR", "LS", "MNIST", "PD", "SPF"])
def test_every_cut_of_the_pools_equals_the_dense_paths_away_from_ties(pool):
    """Every k from 1 to Ñ: the same partition of the microclusters as the dense path, unless the cut falls
    between two merges at the same height (then either partition is average linkage's)."""
    members, _ = load_pool(pool)
    for draw in (0, 1):
        ensemble = Ensemble(draw_ensemble(members, 10, seed=draw))
        weights = ensemble_eci(ensemble, 0.4)
        n_micro = ensemble.n_microclusters
        ours = counts_average_linkage(ensemble.microcluster_codes, weights, 10, ensemble.microcluster_sizes)
        dense = weighted_average_linkage(microcluster_distances(ensemble.microcluster_codes, weights, 10),
                                         ensemble.microcluster_sizes)
        ours_cuts, dense_cuts = cut_tree(ours), cut_tree(dense)
        for j in range(1, n_micro):
            k = n_micro - j
            if _same_partition(ours_cuts[:, j], dense_cuts[:, j]):
                continue
            gaps = [abs(tree[j, 2] - tree[j - 1, 2]) for tree in (ours, dense)]
            assert min(gaps) < 1e-12, f"draw {draw}: the cut into {k} clusters differs without a tie"


def test_other_threads_run_while_the_linkage_runs():
    """The chain releases the GIL: a run's other threads (logging, a flow engine's heartbeat) are not held up
    for a batch of merges at a time. A thread that wakes every millisecond is never kept waiting for a
    quarter of the linkage (holding the GIL kept it waiting about half of it, one batch)."""
    labels, _ = synthetic_ensemble(20000, n_columns=10, k_min=100, k_max=300, noise=0.2, random_state=0)
    ensemble = Ensemble(labels)
    weights = ensemble_eci(ensemble, 0.4)
    counts_average_linkage(ensemble.microcluster_codes[:50], weights, ensemble.n_columns,
                           ensemble.microcluster_sizes[:50])
    finished = threading.Event()
    span = []

    def link():
        started = time.perf_counter()
        counts_average_linkage(ensemble.microcluster_codes, weights, ensemble.n_columns, ensemble.microcluster_sizes)
        span.append(time.perf_counter() - started)
        finished.set()

    worker = threading.Thread(target=link)
    wakes = [time.perf_counter()]
    worker.start()
    while not finished.is_set():
        time.sleep(0.001)
        wakes.append(time.perf_counter())
    worker.join()
    assert max(np.diff(wakes)) < 0.25 * span[0], (max(np.diff(wakes)), span[0])
