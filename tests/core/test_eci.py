"""Cluster uncertainty H^Π and ECI against hand computations and the literal definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from benchmarks import references as reference
from lwec_tasks import Ensemble, LwecInputError, cluster_uncertainty, eci


def h(*probabilities: float) -> float:
    """Entropy in bits of a split with the given proportions."""
    return -sum(p * math.log2(p) for p in probabilities)


# 8 objects, 3 base clusterings; column 3 uses labels 5 and 7 on purpose.
SMALL = np.array(
    [
        [0, 0, 5],
        [0, 0, 5],
        [0, 1, 5],
        [0, 1, 7],
        [1, 1, 7],
        [1, 1, 7],
        [1, 2, 7],
        [1, 2, 7],
    ]
)
# Worked by hand, cluster by cluster (column, label): how its objects split elsewhere.
SMALL_UNCERTAINTY = [
    h(1 / 2, 1 / 2) + h(3 / 4, 1 / 4),  # π1 label 0 = {0,1,2,3}: π2 2|2, π3 3|1
    h(1 / 2, 1 / 2) + 0.0,  # π1 label 1 = {4,5,6,7}: π2 2|2, π3 all 7
    0.0,  # π2 label 0 = {0,1}: never split
    h(1 / 2, 1 / 2) + h(1 / 4, 3 / 4),  # π2 label 1 = {2,3,4,5}: π1 2|2, π3 1|3
    0.0,  # π2 label 2 = {6,7}
    0.0 + h(2 / 3, 1 / 3),  # π3 label 5 = {0,1,2}: π1 all 0, π2 2|1
    h(1 / 5, 4 / 5) + h(3 / 5, 2 / 5),  # π3 label 7 = {3..7}: π1 1|4, π2 3|2
]


def test_small_ensemble_matches_hand_computation():
    assert cluster_uncertainty(SMALL) == pytest.approx(SMALL_UNCERTAINTY, abs=1e-12)
    expected_eci = [math.exp(-value / (0.5 * 3)) for value in SMALL_UNCERTAINTY]
    assert eci(SMALL, theta=0.5) == pytest.approx(expected_eci, abs=1e-12)


def test_paper_worked_example_for_cluster_c11():
    """§IV-A: C_1^1 (8 objects) splits 2/3/3 in π2 and 4/4 in π3: H^Π = 2.56, ECI(θ=0.5) = 0.18."""
    pi1 = [0] * 8 + [1] * 3 + [2] * 5
    pi2 = [0, 0, 1, 1, 1, 2, 2, 2] + [0] * 3 + [1] * 5
    pi3 = [0, 0, 0, 0, 1, 1, 1, 1] + [2] * 3 + [2] * 5
    labels = np.column_stack([pi1, pi2, pi3])
    assert round(cluster_uncertainty(labels)[0], 2) == 2.56
    assert round(eci(labels, theta=0.5)[0], 2) == 0.18


def test_eci_default_theta_is_0_4():
    assert eci(SMALL) == pytest.approx(np.exp(-np.array(SMALL_UNCERTAINTY) / (0.4 * 3)))


@pytest.mark.parametrize("theta", [0, -1, float("nan"), float("inf"), "0.4", None, True])
def test_bad_theta_is_rejected(theta):
    with pytest.raises(LwecInputError, match="theta"):
        eci(SMALL, theta=theta)


def test_single_column_gives_unit_eci():
    labels = np.array([[3], [1], [3], [2]])
    assert np.array_equal(eci(labels), np.ones(3))


label_matrices = st.integers(2, 30).flatmap(
    lambda n: st.integers(1, 5).flatmap(
        lambda m: arrays(np.int64, (n, m), elements=st.integers(-3, 4))
    )
)


def _by_cluster(labels: np.ndarray, values: np.ndarray) -> dict:
    """Map (column id, frozenset of members) → value, independent of cluster numbering."""
    return {
        (column, frozenset(np.flatnonzero(members).tolist())): value
        for (column, members), value in zip(reference.clusters_in_order(labels), values)
    }


@given(label_matrices, st.floats(0.05, 5))
def test_eci_matches_literal_definition(labels, theta):
    assert cluster_uncertainty(labels) == pytest.approx(reference.uncertainty(labels), abs=1e-9)
    assert eci(labels, theta) == pytest.approx(reference.eci(labels, theta), abs=1e-12)


@given(label_matrices, st.floats(0.05, 5))
def test_eci_in_unit_interval_and_one_exactly_for_unsplit_clusters(labels, theta):
    values = eci(labels, theta)
    assert np.all(values > 0) and np.all(values <= 1)
    for (_, members), value in zip(reference.clusters_in_order(labels), values):
        unsplit = all(len(set(labels[members, m].tolist())) == 1 for m in range(labels.shape[1]))
        assert (value == 1.0) == unsplit


@given(label_matrices, st.randoms(use_true_random=False))
def test_invariant_to_relabelling_within_columns_and_to_column_order(labels, random):
    relabelled = labels.copy()
    for m in range(labels.shape[1]):
        values = sorted(set(labels[:, m].tolist()))
        targets = random.sample(range(-50, 50), len(values))
        mapping = dict(zip(values, targets))
        relabelled[:, m] = [mapping[v] for v in labels[:, m].tolist()]
    order = list(range(labels.shape[1]))
    random.shuffle(order)
    permuted = relabelled[:, order]
    original = _by_cluster(labels, cluster_uncertainty(labels))
    moved = _by_cluster(permuted, cluster_uncertainty(permuted))
    moved = {(order[column], members): value for (column, members), value in moved.items()}
    assert original.keys() == moved.keys()
    for key, value in original.items():
        assert moved[key] == pytest.approx(value, abs=1e-9)


def test_cluster_order_is_column_then_ascending_label():
    ensemble = Ensemble(SMALL)
    assert ensemble.cluster_column.tolist() == [0, 0, 1, 1, 1, 2, 2]
    assert ensemble.cluster_label.tolist() == [0, 1, 0, 1, 2, 5, 7]
    assert ensemble.cluster_sizes.tolist() == [4, 4, 2, 4, 2, 3, 5]
