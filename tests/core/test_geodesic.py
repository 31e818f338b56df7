"""Geodesic distances and silhouettes against a reference written from the definitions, and what they change in
the automatic choice of k."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_circles, make_moons

from lwec_tasks.core.auto_k import select_k
from lwec_tasks.core.base_clusterings import generate_base_clusterings, paper_k_max
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.geodesic import geodesic_distances, geodesic_silhouettes, silhouette_sample
from lwec_tasks.core.mixes import run_default_mix


def reference_distances(X: np.ndarray, n_neighbors: int) -> np.ndarray:
    """Each row joined to its n_neighbors nearest other rows, both ways; Floyd–Warshall; unjoined: 2 × longest."""
    n = len(X)
    euclid = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    paths = np.full((n, n), np.inf)
    np.fill_diagonal(paths, 0.0)
    for i in range(n):
        others = [j for j in np.argsort(euclid[i], kind="stable") if j != i][:n_neighbors]
        for j in others:
            paths[i, j] = paths[j, i] = euclid[i, j]
    for via in range(n):
        paths = np.minimum(paths, paths[:, via:via + 1] + paths[via:via + 1, :])
    finite = np.isfinite(paths)
    paths[~finite] = 2 * paths[finite].max()
    return paths


def reference_silhouette(distances: np.ndarray, labels: np.ndarray) -> float:
    """Mean over rows of (b − a) / max(a, b); a row alone in its cluster scores 0."""
    scores = []
    for i in range(len(labels)):
        own = (labels == labels[i]) & (np.arange(len(labels)) != i)
        if not own.any():
            scores.append(0.0)
            continue
        a = distances[i, own].mean()
        b = min(distances[i, labels == c].mean() for c in np.unique(labels) if c != labels[i])
        scores.append((b - a) / max(a, b) if max(a, b) > 0 else 0.0)
    return float(np.mean(scores))


points = st.integers(0, 2**31 - 1).map(lambda seed: np.random.default_rng(seed))


@settings(max_examples=40, deadline=None)
@given(points, st.integers(3, 25), st.integers(1, 3), st.integers(1, 6))
def test_geodesic_distances_are_shortest_paths_in_the_neighbour_graph(rng, n, d, neighbours):
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10, size=d)
    np.testing.assert_allclose(geodesic_distances(X, neighbours), reference_distances(X, min(neighbours, n - 1)),
                               rtol=1e-10, atol=1e-12)


def test_equal_rows_are_joined_at_length_zero():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [5.0, 5.0]])
    distances = geodesic_distances(X, 1)
    assert distances[0, 1] < 1e-300 and distances[3, 4] < 1e-300
    np.testing.assert_allclose(distances, reference_distances(X, 1), atol=1e-300)


@settings(max_examples=30, deadline=None)
@given(points, st.integers(6, 30), st.integers(1, 4))
def test_the_silhouettes_are_the_reference_silhouettes_of_each_cut(rng, n, k):
    X = rng.normal(size=(n, 2))
    cuts = np.column_stack([rng.integers(0, k, n), np.zeros(n, dtype=int), np.arange(n)])
    expected = [reference_silhouette(reference_distances(X, 5), cuts[:, 0]) if len(np.unique(cuts[:, 0])) > 1
                else -1.0, -1.0, -1.0]  # one cluster, and as many clusters as rows: −1
    np.testing.assert_allclose(geodesic_silhouettes(X, cuts, n_neighbors=5), expected, rtol=1e-9, atol=1e-12)


def test_the_silhouettes_are_taken_on_a_seeded_sample_of_the_rows():
    rng = np.random.default_rng(3)
    X, cuts = rng.normal(size=(60, 2)), rng.integers(0, 3, (60, 2))
    rows = silhouette_sample(60, 7, size=25)
    assert len(rows) == 25 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, silhouette_sample(60, 7, size=25))
    sampled = geodesic_silhouettes(X, cuts, random_state=7, size=25)
    np.testing.assert_allclose(sampled, geodesic_silhouettes(X[rows], cuts[rows], size=25))


def test_rings_split_into_arcs_score_below_the_rings_whole():
    t = np.linspace(0, 2 * np.pi, 150, endpoint=False)
    ring = np.column_stack([np.cos(t), np.sin(t)]) * 5
    X = np.vstack([ring, ring + [20.0, 0.0]])
    whole = np.repeat([0, 1], 150)
    arcs = np.repeat(np.arange(6), 50)
    scores = geodesic_silhouettes(X, np.column_stack([whole, arcs]))
    assert scores[0] > scores[1] + 0.2


@pytest.mark.parametrize("shapes", [make_moons(1200, noise=0.05, random_state=0),
                                    make_circles(1200, factor=0.5, noise=0.05, random_state=0)])
def test_with_the_features_two_separated_shapes_are_two_clusters(shapes):
    X = (shapes[0] - shapes[0].mean(axis=0)) / shapes[0].std(axis=0)
    labels = generate_base_clusterings(X, n_clusterings=10, k_min=2, k_max=paper_k_max(len(X)), random_state=0,
                                       generators=run_default_mix(len(X)))
    for method in ("lwea", "lwgp"):
        assert select_k(labels, method, random_state=0, features=X).k == 2
    assert select_k(labels, "lwea", random_state=0).k > 2  # the ensemble alone splits the shapes


def test_features_must_match_the_objects_and_be_finite():
    labels = np.random.default_rng(0).integers(0, 4, (50, 4))
    with pytest.raises(LwecInputError, match="one row per object"):
        select_k(labels, "lwea", features=np.zeros((49, 2)))
    X = np.random.default_rng(1).normal(size=(50, 2))
    X[3, 1] = np.nan
    with pytest.raises(LwecInputError, match="finite"):
        select_k(labels, "lwea", features=X)
