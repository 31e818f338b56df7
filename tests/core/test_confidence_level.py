"""The confidence's level (lwec_tasks.core.confidence_level) against straightforward references: the mixture's
posterior computed densely with scipy, and the level map against an exact sort-based quantile matching."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

from lwec_tasks.core.confidence import ClusterSums
from lwec_tasks.core.confidence_level import (
    GAUSSIAN_FIT_FLOOR,
    LEVEL_BINS,
    VARIANCE_FLOOR,
    ClusterGaussians,
    LevelCounts,
    gaussian_posterior,
    levelled,
)


def reference_densities(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """(n, k) each cluster's weighted density at each row, axis-aligned Gaussians fitted to the clusters' rows
    (share, means, population variances floored at VARIANCE_FLOOR of the table's), by scipy."""
    floor = VARIANCE_FLOOR * X.var(axis=0)
    densities = np.zeros((len(X), k))
    for c in range(k):
        rows = X[labels == c]
        if len(rows) == 0:
            continue
        variance = np.maximum(rows.var(axis=0), np.maximum(floor, 1e-12))
        densities[:, c] = len(rows) / len(X) * multivariate_normal(rows.mean(axis=0), np.diag(variance)).pdf(X)
    return densities


def test_the_posterior_is_the_mixtures_probability_of_the_rows_own_cluster():
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0.0, 0.0], [2.5, 0.0, 1.0], [0.0, 3.0, -1.0]])
    truth = rng.integers(0, 3, 600)
    X = centres[truth] + rng.normal(scale=[1.0, 0.7, 1.3], size=(600, 3))
    labels = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
    gaussians = ClusterGaussians.of(ClusterSums.of(X, labels, 4))  # cluster 3 is empty
    posterior, own_likeliest = gaussian_posterior(X, labels, gaussians)
    densities = reference_densities(X, labels, 4)
    np.testing.assert_allclose(posterior, densities[np.arange(600), labels] / densities.sum(axis=1), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_array_equal(own_likeliest, densities.argmax(axis=1) == labels)
    assert 0.5 < own_likeliest.mean() < 1.0


def test_scaling_a_feature_leaves_the_posterior_as_it_is():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    labels = (X[:, 0] > 0).astype(np.int64) + 2 * (X[:, 1] > 0.5)
    scaled = X * np.array([10.0, 0.01, 3.0, 1.0]) + 7.0
    first = gaussian_posterior(X, labels, ClusterGaussians.of(ClusterSums.of(X, labels, 4)))[0]
    second = gaussian_posterior(scaled, labels, ClusterGaussians.of(ClusterSums.of(scaled, labels, 4)))[0]
    np.testing.assert_allclose(first, second, rtol=1e-6, atol=1e-9)


def plain_posterior(X: np.ndarray, labels: np.ndarray, gaussians: ClusterGaussians) -> tuple[np.ndarray, np.ndarray]:
    """The posterior of each row's own cluster and whether it is the likeliest, with numpy over the whole (n, k)
    log-density table at once."""
    with np.errstate(invalid="ignore"):
        squares = (((X[:, None, :] - gaussians.means[None]) ** 2) * gaussians.inverse_variances[None]).sum(axis=2)
    scores = np.where(np.isfinite(gaussians.log_norms)[None], gaussians.log_norms[None] - 0.5 * squares, -np.inf)
    best = scores.max(axis=1)
    own = scores[np.arange(len(X)), labels]
    return np.exp(own - best) / np.exp(scores - best[:, None]).sum(axis=1), scores.argmax(axis=1) == labels


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 1_600), st.integers(1, 5), st.integers(1, 6))
def test_the_posterior_over_blocks_of_rows_is_the_plain_posterior_of_every_row(seed, n, d, k):
    """Any number of rows (the kernel works in blocks of 512), features and clusters, one cluster left empty."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10.0, d) + rng.normal(size=d) * 5
    labels = rng.integers(0, k, n)
    gaussians = ClusterGaussians.of(ClusterSums.of(X, labels, k + 1))  # cluster k has no rows
    posterior, own_likeliest = gaussian_posterior(X, labels, gaussians)
    expected, expected_likeliest = plain_posterior(X, labels, gaussians)
    np.testing.assert_allclose(posterior, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(own_likeliest, expected_likeliest)


def sort_matched(score: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The exact quantile matching: the row with the r-th smallest score gets the r-th smallest target."""
    out = np.empty(len(score))
    out[np.argsort(score, kind="stable")] = np.sort(target)
    return out


def empirical_cdf(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The share of ``values`` at or below each of ``at``."""
    return np.searchsorted(np.sort(values), at, side="right") / len(values)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.3, 20.0), st.floats(0.3, 20.0))
def test_the_level_map_matches_the_posteriors_distribution_and_keeps_the_order(seed, a, b):
    rng = np.random.default_rng(seed)
    n = 20_000
    score = rng.beta(2.0, 2.0, n)
    posterior = rng.beta(a, b, n)
    counts = LevelCounts.of(score, posterior, np.ones(n, bool))
    confidence = levelled(score, counts.level_map())
    # order kept: a higher score never gets a lower confidence
    order = np.argsort(score)
    assert np.all(np.diff(confidence[order]) >= -1e-6)
    # each row's confidence is the exact sort-based matching's (the row of the r-th smallest score gets the r-th
    # smallest posterior) to the histograms' resolution: within two bins of its value where the posteriors are
    # spread, or at the same quantile where many fall into one bin
    near_value = np.abs(confidence - sort_matched(score, posterior)) <= 2.0 / LEVEL_BINS
    near_quantile = np.abs(empirical_cdf(posterior, confidence) - empirical_cdf(score, score)) <= 3.0 / LEVEL_BINS
    assert np.all(near_value | near_quantile)


def test_partition_counts_add_up_to_the_whole_tables():
    rng = np.random.default_rng(1)
    score, posterior = rng.random(5000), rng.random(5000) ** 0.3
    likeliest = rng.random(5000) < 0.95
    whole = LevelCounts.of(score, posterior, likeliest)
    parts = [LevelCounts.of(score[s], posterior[s], likeliest[s]) for s in np.array_split(np.arange(5000), 3)]
    total = parts[0] + parts[1] + parts[2]
    np.testing.assert_array_equal(total.level_map(), whole.level_map())
    assert total.gaussian_fit == whole.gaussian_fit == np.count_nonzero(likeliest) / 5000


def test_the_map_is_kept_when_the_gaussians_do_not_fit():
    rng = np.random.default_rng(2)
    score, posterior = rng.random(1000), rng.random(1000)
    fitting = int(np.ceil(GAUSSIAN_FIT_FLOOR * 1000))
    assert LevelCounts.of(score, posterior, np.arange(1000) < fitting).level_map() is not None
    kept = LevelCounts.of(score, posterior, np.arange(1000) < fitting - 1)
    assert kept.level_map() is None
    np.testing.assert_array_equal(levelled(score, kept.level_map()), score.astype(np.float32))


def test_posteriors_all_in_one_bin_give_that_value_to_every_row():
    rng = np.random.default_rng(4)
    score = rng.random(2000)
    counts = LevelCounts.of(score, np.full(2000, 0.9905), np.ones(2000, bool))
    confidence = levelled(score, counts.level_map())
    assert np.all(np.abs(confidence - 0.9905) <= 1.0 / LEVEL_BINS)
