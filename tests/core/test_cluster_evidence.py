"""Per-cluster evidence: cohesion against a straightforward reference written here, the cluster × label table
against a pandas crosstab, and the choice of features the profile figure shows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lwec_tasks.core.cohesion import MIXED_BELOW, cluster_cohesion, mixed_clusters, relative_cohesion
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.label_table import cluster_label_table
from lwec_tasks.core.profiles import features_setting_clusters_apart
from lwec_tasks.stages.evidence_parts import evidence_sums
from lwec_tasks.stages.partitions import PartitionKeys, add_counts, truth_counts


@st.composite
def ensembles(draw):
    """(base (n, M) labels 0..3 per column, consensus labels (n,) in 0..k−1, k)."""
    n = draw(st.integers(1, 60))
    M = draw(st.integers(1, 5))
    k = draw(st.integers(1, 5))
    base = draw(arrays(np.int64, (n, M), elements=st.integers(0, 3)))
    labels = draw(arrays(np.int64, n, elements=st.integers(0, k - 1)))
    return base, labels, k


def run_cohesion(base: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Cohesion as a run computes it: the evidence stage's (base cluster, label) counts of one partition."""
    offsets = np.concatenate([[0], np.cumsum(np.full(base.shape[1], 4))]).astype(np.int64)
    _, overlap = evidence_sums(None, np.ascontiguousarray(base.T), labels, k, offsets)
    return cluster_cohesion(overlap, np.repeat(np.arange(base.shape[1]), 4), base.shape[1])


def reference_cohesion(base: np.ndarray, labels: np.ndarray, cluster: int) -> float:
    """Per base clustering, the chance that two members drawn with replacement share a base cluster, counted pair
    by pair; averaged over base clusterings."""
    members = base[labels == cluster]
    chances = []
    for column in members.T:
        same = sum(a == b for a in column for b in column)
        chances.append(same / len(column) ** 2)
    return float(np.mean(chances))


@given(ensembles())
def test_cohesion_equals_the_pairwise_reference(case):
    base, labels, k = case
    cohesion = run_cohesion(base, labels, k)
    assert cohesion.shape == (k,)
    for cluster in range(k):
        if (labels == cluster).any():
            assert cohesion[cluster] == pytest.approx(reference_cohesion(base, labels, cluster))
            assert 0 < cohesion[cluster] <= 1 + 1e-12
        else:
            assert np.isnan(cohesion[cluster])
            assert not mixed_clusters(cohesion, np.bincount(labels, minlength=k))[cluster]


@given(ensembles(), st.permutations(range(4)), st.data())
def test_cohesion_ignores_how_labels_are_numbered_and_columns_ordered(case, base_renaming, data):
    base, labels, k = case
    cohesion = run_cohesion(base, labels, k)
    order = data.draw(st.permutations(range(base.shape[1])))
    renaming = np.asarray(data.draw(st.permutations(range(k))))
    again = run_cohesion(np.asarray(base_renaming)[base][:, order], renaming[labels], k)
    np.testing.assert_allclose(again[renaming], cohesion, equal_nan=True)


@given(ensembles())
def test_a_cluster_every_base_clustering_keeps_whole_has_cohesion_one(case):
    base, labels, k = case
    base = base.copy()
    base[labels == 0] = 3  # cluster 0 lies in one base cluster of each column (others may share it)
    if (labels == 0).any():
        assert run_cohesion(base, labels, k)[0] == pytest.approx(1.0)


def test_a_cluster_split_in_two_halves_by_every_base_clustering_has_cohesion_one_half():
    base = np.array([[0, 1], [0, 1], [1, 0], [1, 0], [2, 2], [2, 2]])
    labels = np.array([0, 0, 0, 0, 1, 1])
    cohesion = run_cohesion(base, labels, 2)
    np.testing.assert_allclose(cohesion, [0.5, 1.0])
    # against the run's mean cohesion weighted by size, (4 · 0.5 + 2 · 1) / 6 = 2/3
    np.testing.assert_allclose(relative_cohesion(cohesion, [4, 2]), [0.75, 1.5])
    assert mixed_clusters(cohesion, [4, 2], 0.8).tolist() == [True, False]
    assert 0 < MIXED_BELOW < 1


def test_cohesion_names_counts_that_do_not_fit():
    with pytest.raises(LwecInputError, match="does not match 3 base cluster columns"):
        cluster_cohesion(np.ones((4, 2)), np.zeros(3, dtype=np.int64), 1)
    with pytest.raises(LwecInputError, match=r"0\.\.1"):
        cluster_cohesion(np.ones((2, 2)), np.array([0, 2]), 2)


@st.composite
def labelled_partitions(draw):
    """Label values (ints or texts, some missing) and cluster ids of the rows of two partitions."""
    n = draw(st.integers(1, 80))
    texts = draw(st.booleans())
    values = st.sampled_from(["three", "nine", "seven", None]) if texts else st.sampled_from([3, 9, 7, 12, None])
    truth = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=object)
    labels = draw(arrays(np.int64, n, elements=st.integers(0, 6)))
    cut = draw(st.integers(0, n))
    return truth, labels, cut


@given(labelled_partitions())
def test_the_cluster_label_table_equals_a_pandas_crosstab(case):
    truth, labels, cut = case
    parts = [truth_counts(PartitionKeys(np.arange(len(t)), t), l)
             for t, l in ((truth[:cut], labels[:cut]), (truth[cut:], labels[cut:]))]
    table = cluster_label_table(add_counts(*parts), "target")
    known = np.array([t is not None for t in truth])
    if not known.any():
        assert len(table) == 0 and list(table.columns) == ["cluster", "size", "majority_label", "majority_share"]
        return
    expected = pd.crosstab(labels[known], pd.Series(list(truth[known]), dtype=object))
    assert table["cluster"].tolist() == expected.index.tolist()
    assert list(table.columns[4:]) == [f"target={v}" for v in expected.columns]
    np.testing.assert_array_equal(table.iloc[:, 4:].to_numpy(dtype=np.int64), expected.to_numpy())
    np.testing.assert_array_equal(table["size"], expected.sum(axis=1))
    assert table["majority_label"].tolist() == expected.idxmax(axis=1).tolist()
    np.testing.assert_allclose(table["majority_share"], expected.max(axis=1) / expected.sum(axis=1))


def test_the_cluster_label_table_refuses_counts_without_their_pairs():
    with pytest.raises(LwecInputError, match="indexed by \\(label value, cluster id\\)"):
        cluster_label_table(pd.Series([1, 2]), "target")


def test_the_profile_shows_each_clusters_most_distinctive_feature_first():
    z = np.array([[3.0, 0.0, 0.5, 0.0, 0.1],
                  [0.0, -2.0, 0.0, 1.0, 0.2]])
    # round 1: cluster 0's feature 0 (3), cluster 1's feature 1 (2); round 2: feature 3 (1) before feature 2 (0.5)
    np.testing.assert_array_equal(features_setting_clusters_apart(z, 3), [0, 1, 3])
    np.testing.assert_array_equal(features_setting_clusters_apart(z, 10), [0, 1, 3, 2, 4])
    np.testing.assert_array_equal(features_setting_clusters_apart(np.zeros((0, 3)), 2), [0, 1])


@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 30)), elements=st.floats(-9, 9)),
       st.integers(1, 12))
def test_the_profile_features_include_every_clusters_top_feature_when_there_is_room(z, top):
    chosen = features_setting_clusters_apart(z, top)
    assert len(chosen) == min(top, z.shape[1]) and len(set(chosen.tolist())) == len(chosen)
    if top >= z.shape[0]:
        for row in np.abs(z):
            assert row[chosen].max() == row.max()
