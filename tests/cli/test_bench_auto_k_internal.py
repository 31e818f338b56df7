"""``python -m benchmarks.auto_k_internal``: k-means with standard internal criteria, the competent choice of k."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans

from benchmarks.auto_k_internal import chosen_ks, kmeans_cuts, markdown, study_rows
from lwec_tasks.core.metrics import nmi


def separated_blobs(n_blobs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(40·n_blobs, 3) points around ``n_blobs`` centres 20 standard deviations apart, and their classes."""
    rng = np.random.default_rng(seed)
    classes = np.repeat(np.arange(n_blobs), 40)
    return 20.0 * np.eye(n_blobs, 3)[classes] + rng.normal(size=(len(classes), 3)), classes


@pytest.mark.parametrize("n_blobs", [2, 3])
def test_every_criterion_finds_blobs_far_apart(n_blobs):
    features, _ = separated_blobs(n_blobs, seed=n_blobs)
    ks = np.arange(2, 7)
    chosen = chosen_ks(features, kmeans_cuts(features, ks, seed=0), ks, seed=0)
    assert chosen == {"Calinski–Harabasz": n_blobs, "Davies–Bouldin": n_blobs, "silhouette": n_blobs,
                      "Gaussian mixture BIC": n_blobs}


def test_the_rows_difference_is_the_nmi_at_the_chosen_k_against_the_true_k():
    features, classes = separated_blobs(3, seed=7)
    # Two groups of the three merged: the criteria choose 3, the true k is 2 for these classes.
    merged = np.minimum(classes, 1)
    rows = study_rows({"merged": (features, merged)}, seeds=1, k_max=4)
    assert {row["k"] for row in rows} == {3}
    standardised = (features - features.mean(axis=0)) / features.std(axis=0)
    at_two, at_three = (nmi(KMeans(k, n_init=10, random_state=0).fit_predict(standardised), merged) for k in (2, 3))
    for row in rows:
        assert row["nmi"] == pytest.approx(at_three)
        assert row["difference"] == pytest.approx(at_three - at_two)


def test_the_summary_averages_seeds_then_data_sets():
    rows = [{"data set": name, "true k": 2, "seed": seed, "criterion": "c", "k": k, "nmi": level,
             "difference": difference}
            for name, seed, k, level, difference in [("a", 0, 2, 0.9, 0.0), ("a", 1, 3, 0.7, -0.2),
                                                      ("b", 0, 4, 0.5, -0.4), ("b", 1, 4, 0.5, -0.4)]]
    table = markdown(rows)
    assert "| a | 2 | 2, 3 |" in table and "| b | 2 | 4, 4 |" in table
    # a: −0.1, b: −0.4 → mean −0.25, worst b; NMI a 0.8, b 0.5 → 0.65.
    assert "-0.250 (worst b -0.400)" in table
    assert table.rstrip().endswith("| 0.650 |")
