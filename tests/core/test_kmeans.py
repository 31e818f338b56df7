"""The compiled weighted k-means used by LWGP: exact Lloyd fixed points, seeding, weights."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs

from lwec_tasks.core import kmeans as kmeans_module
from lwec_tasks.core.kmeans import weighted_kmeans
from lwec_tasks.core.metrics import ari


def _plain_lloyd(x, weights, centres, n_iter):
    """Textbook weighted Lloyd: full distance matrix, argmin, weighted means."""
    centres = centres.copy()
    for _ in range(n_iter):
        distances = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        labels = distances.argmin(axis=1)
        for c in range(len(centres)):
            members = labels == c
            if members.any():
                centres[c] = np.average(x[members], axis=0, weights=weights[members])
    return labels


@pytest.fixture(scope="module")
def blobs():
    x, y = make_blobs(3000, n_features=5, centers=7, cluster_std=2.5, random_state=0)
    return x, y


def test_hamerly_iterations_reach_the_same_labels_as_plain_lloyd(blobs):
    x, _ = blobs
    weights = np.random.default_rng(1).integers(1, 4, len(x)).astype(float)
    centres = x[np.random.default_rng(2).choice(len(x), 7, replace=False)].copy()
    labels, _ = kmeans_module._lloyd(x, weights, centres.copy(), 300, 0.0)
    assert np.array_equal(labels, _plain_lloyd(x, weights, centres, 300))


def test_same_seed_same_labels_and_weights_act_as_duplicates(blobs):
    x, _ = blobs
    first = weighted_kmeans(x, 7, seed=4)
    assert np.array_equal(first, weighted_kmeans(x, 7, seed=4))
    # a row of weight 2 behaves like the row twice: same partition as duplicating
    weights = np.where(np.arange(len(x)) % 3 == 0, 2.0, 1.0)
    weighted = weighted_kmeans(x, 7, seed=4, sample_weight=weights)
    duplicated = np.concatenate([x, x[weights == 2]])
    labels_dup = weighted_kmeans(duplicated, 7, seed=4)
    assert ari(weighted, labels_dup[: len(x)]) > 0.99


def test_quality_matches_scikit_learn(blobs):
    x, y = blobs
    ours = weighted_kmeans(x, 7, seed=0)
    theirs = KMeans(7, n_init=3, random_state=0).fit(x)

    def inertia(labels):
        return sum(((x[labels == c] - x[labels == c].mean(axis=0)) ** 2).sum() for c in np.unique(labels))

    assert inertia(ours) <= 1.01 * theirs.inertia_
    assert ari(ours, y) > 0.9


def test_sampled_seeding_for_large_inputs(blobs, monkeypatch):
    x, y = blobs
    monkeypatch.setattr(kmeans_module, "SAMPLE_THRESHOLD", 1000)
    monkeypatch.setattr(kmeans_module, "SAMPLE_SIZE", 500)
    sampled = weighted_kmeans(x, 7, seed=3)
    assert np.array_equal(sampled, weighted_kmeans(x, 7, seed=3))
    assert ari(sampled, y) > 0.9


def test_parallel_chunks_give_the_serial_result():
    x, _ = make_blobs(5000, n_features=3, centers=4, random_state=5)
    serial = weighted_kmeans(x, 4, seed=1)  # one chunk: serial pass
    big = np.concatenate([x] * 8)  # 40,000 rows: two chunks, parallel pass
    labels = weighted_kmeans(big, 4, seed=1)
    assert np.array_equal(labels[:5000], labels[5000:10000])
    assert ari(labels[:5000], serial) == 1.0


def test_a_centre_left_without_rows_is_moved_to_the_farthest_row():
    # Two tight groups and a third start centre far from every row: plain Lloyd
    # would end with an empty cluster; ours keeps all k clusters populated.
    x = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [5.0, 5.0], [5.1, 5.0], [9.0, 5.0]])
    start = np.array([[0.0, 0.0], [5.0, 5.0], [100.0, 100.0]])
    assert len(set(_plain_lloyd(x, np.ones(len(x)), start, 100).tolist())) == 2
    labels, _ = kmeans_module._lloyd(x, np.ones(len(x)), start.copy(), 100, 0.0)
    assert sorted(set(labels.tolist())) == [0, 1, 2]
    # the row farthest from its first centre, (9, 5), becomes the new cluster
    assert np.sum(labels == labels[5]) == 1
