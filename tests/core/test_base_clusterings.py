"""Base clusterings: k-means with k drawn from [k_min, k_max], seeded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_blobs

from lwec_tasks import LwecInputError, generate_base_clusterings


def test_shape_k_range_and_reproducibility():
    X, _ = make_blobs(n_samples=400, centers=5, random_state=0)
    labels = generate_base_clusterings(X, n_clusterings=12, random_state=4)
    assert labels.shape == (400, 12)
    ks = [len(np.unique(labels[:, m])) for m in range(12)]
    assert min(ks) >= 2 and max(ks) <= 20  # ⌊√400⌋ = 20
    assert len(set(ks)) > 1
    assert np.array_equal(labels, generate_base_clusterings(X, n_clusterings=12, random_state=4))
    assert not np.array_equal(labels, generate_base_clusterings(X, n_clusterings=12, random_state=5))


def test_each_column_is_a_kmeans_partition():
    X, _ = make_blobs(n_samples=300, centers=3, random_state=1)
    labels = generate_base_clusterings(X, n_clusterings=3, k_min=3, k_max=3, random_state=0)
    for m in range(3):
        centres = np.array([X[labels[:, m] == c].mean(axis=0) for c in range(3)])
        nearest = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
        assert np.array_equal(nearest, labels[:, m])


def test_dataframe_input():
    X, _ = make_blobs(n_samples=50, random_state=2)
    frame = pd.DataFrame(X, columns=["a", "b"])
    assert np.array_equal(
        generate_base_clusterings(frame, 3, random_state=1),
        generate_base_clusterings(X, 3, random_state=1),
    )


@pytest.mark.parametrize(
    "X, kwargs, message",
    [
        (np.zeros(10), {}, "2-D"),
        (np.zeros((1, 3)), {}, "at least 2 rows"),
        (np.array([[0.0, 1.0], [np.nan, 2.0], [1.0, 1.0]]), {}, "column 'column 0' has 1 NaN/inf"),
        (pd.DataFrame({"x": [1.0, 2.0], "name": ["a", "b"]}), {}, "non-numeric column\\(s\\): name"),
        (np.zeros((10, 2)), {"n_clusterings": 0}, "n_clusterings must be >= 1"),
        (np.zeros((10, 2)), {"k_min": 1}, "k_min must be >= 2"),
        (np.zeros((10, 2)), {"k_min": 5, "k_max": 3}, "k_min \\(5\\) is larger than k_max \\(3\\)"),
        (np.zeros((10, 2)), {"k_max": 11}, "larger than the number of objects"),
    ],
)
def test_bad_input(X, kwargs, message):
    with pytest.raises(LwecInputError, match=message):
        generate_base_clusterings(X, **kwargs)


def test_labels_do_not_depend_on_the_number_of_workers():
    X, _ = make_blobs(n_samples=600, n_features=3, centers=4, random_state=0)
    one = generate_base_clusterings(X, n_clusterings=6, random_state=11, n_jobs=1)
    assert np.array_equal(one, generate_base_clusterings(X, n_clusterings=6, random_state=11, n_jobs=2))
    assert np.array_equal(one, generate_base_clusterings(X, n_clusterings=6, random_state=11, n_jobs=6))


def test_progress_reports_every_clustering_once_with_its_k():
    X, _ = make_blobs(n_samples=300, n_features=2, centers=3, random_state=1)
    seen = []
    labels = generate_base_clusterings(X, n_clusterings=5, random_state=2, n_jobs=2,
                                       progress=lambda m, k: seen.append((m, k)))
    assert sorted(m for m, _ in seen) == list(range(5))
    assert all(labels[:, m].max() + 1 <= k for m, k in seen)


def test_large_n_fits_a_sample_caps_k_and_assigns_every_row_to_its_nearest_centre(monkeypatch):
    from lwec_tasks.core import base_clusterings as module

    monkeypatch.setattr(module, "LARGE_N", 2_000)
    monkeypatch.setattr(module, "SAMPLE_SIZE", 500)
    monkeypatch.setattr(module, "LARGE_N_K_MAX", 7)
    monkeypatch.setattr(module, "ASSIGN_CHUNK", 333)
    X, _ = make_blobs(n_samples=5_000, n_features=4, centers=6, random_state=3)
    labels = module.generate_base_clusterings(X, n_clusterings=4, random_state=5, n_jobs=2)
    assert labels.shape == (5_000, 4)
    for m in range(4):
        k = labels[:, m].max() + 1
        assert 2 <= k <= 7
        # Every row sits with the nearest centroid of its own cluster's rows: a nearest-centre assignment.
        centres = np.stack([X[labels[:, m] == c].mean(axis=0) for c in range(k)])
        nearest = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
        assert (nearest == labels[:, m]).mean() > 0.97
    assert np.array_equal(labels, module.generate_base_clusterings(X, n_clusterings=4, random_state=5, n_jobs=1))
