"""Row confidence, the co-association's distribution (CDF, PAC), cluster profiles and run-to-run stability,
each against a straightforward reference written here."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lwec_tasks.core.coassociation_cdf import coassociation_distribution
from lwec_tasks.core.confidence import (
    CALIBRATION,
    LOGIT_FLOOR,
    SHARE_CALIBRATION,
    ClusterSums,
    base_shares,
    centre_margin,
    ensemble_share,
    row_confidence,
)
from lwec_tasks.core.profiles import cluster_profiles, distinctive_features
from lwec_tasks.core.stability import matched_jaccard


@st.composite
def labelled_rows(draw):
    n = draw(st.integers(2, 60))
    d = draw(st.integers(1, 4))
    k = draw(st.integers(1, 5))
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-50, 50, allow_nan=False)))
    labels = draw(arrays(np.int64, n, elements=st.integers(0, k - 1)))
    M = draw(st.integers(1, 4))
    codes = draw(arrays(np.int64, (M, n), elements=st.integers(0, 3)))
    return X, labels, k, codes


def reference_map(margin, share):
    """The calibrated map, one row at a time: σ(a·logit(margin) + b·logit(share) + c) (share's own map without a
    margin), each term clipped to [LOGIT_FLOOR, 1 − LOGIT_FLOOR] first."""
    def logit(p):
        p = min(max(p, LOGIT_FLOOR), 1 - LOGIT_FLOOR)
        return math.log(p / (1 - p))

    if margin is None:
        z = SHARE_CALIBRATION["share"] * logit(share) + SHARE_CALIBRATION["intercept"]
    else:
        z = CALIBRATION["margin"] * logit(margin) + CALIBRATION["share"] * logit(share) + CALIBRATION["intercept"]
    return 1 / (1 + math.exp(-z))


def reference_confidence(X, labels, k, codes):
    """Per row, straight from the definition: centres as group means, Euclidean distances one by one, the share
    as the mean over columns of |b ∩ C| / |b|, then the calibrated map."""
    out, conditioned = [], []
    present = [c for c in range(k) if (labels == c).any()]
    centres = {c: X[labels == c].mean(axis=0) for c in present}
    for i, (x, j) in enumerate(zip(X, labels)):
        own = np.linalg.norm(x - centres[j])
        others = [np.linalg.norm(x - centres[c]) for c in present if c != j]
        if not others:
            margin, well = 1.0, True
        else:
            other = min(others)
            margin = 0.5 if own + other == 0 else other / (own + other)
            well = own + other > 1e-6  # centres (nearly) on the row: rounding decides the margin
        shares = []
        for column in codes:
            members = column == column[i]
            shares.append(np.sum(members & (labels == j)) / np.sum(members))
        out.append(reference_map(margin, np.mean(shares)))
        conditioned.append(well)
    return np.array(out), np.array(conditioned)


def global_codes(codes):
    """Column-local codes 0..3 → distinct global codes per column (4 per column)."""
    return codes + 4 * np.arange(len(codes))[:, None]


@given(labelled_rows())
def test_confidence_is_in_unit_interval_and_matches_the_definition(case):
    X, labels, k, codes = case
    sums = ClusterSums.of(X, labels, k)
    g = global_codes(codes)
    overlap = np.zeros((4 * len(codes), k), dtype=np.int64)
    for column in g:
        np.add.at(overlap, (column, labels), 1)
    shares = base_shares(overlap, overlap.sum(axis=1))
    confidence = row_confidence(X, g, labels, sums.means, shares, sums.counts > 0)
    assert confidence.dtype == np.float32
    assert np.all((confidence >= 0) & (confidence <= 1))
    expected, conditioned = reference_confidence(X, labels, k, codes)
    np.testing.assert_allclose(confidence[conditioned], expected[conditioned], rtol=1e-4, atol=1e-4)


def test_margin_orders_rows_by_their_place_between_two_centres():
    centres = np.array([[0.0, 0.0], [10.0, 0.0]])
    X = np.array([[0.0, 0.0], [2.5, 0.0], [5.0, 0.0], [7.5, 0.0]])
    margin = centre_margin(X, np.zeros(4, dtype=np.int64), centres)
    np.testing.assert_allclose(margin, [1.0, 0.75, 0.5, 0.25])


def test_share_alone_without_features():
    labels = np.array([0, 0, 1, 1])
    codes = np.array([[0, 0, 0, 1]])
    shares = base_shares(np.array([[2, 1], [0, 1]]), np.array([3, 1]))
    np.testing.assert_allclose(ensemble_share(codes, labels, shares), [2 / 3, 2 / 3, 1 / 3, 1.0])
    np.testing.assert_allclose(row_confidence(None, codes, labels, None, shares),
                               [reference_map(None, s) for s in (2 / 3, 2 / 3, 1 / 3, 1.0)], rtol=1e-6)


def dense_coassociation_counts(rows, counts):
    """The N × N co-association of the objects (each microcluster row repeated by its count): pairs i < j per
    agreement level."""
    objects = np.repeat(np.asarray(rows), np.asarray(counts), axis=0)
    agree = (objects[:, None, :] == objects[None, :, :]).sum(axis=2)
    upper = np.triu_indices(len(objects), 1)
    return np.bincount(agree[upper], minlength=objects.shape[1] + 1)


@given(st.integers(1, 6).flatmap(lambda M: st.tuples(
    arrays(np.int64, st.tuples(st.integers(1, 25), st.just(M)), elements=st.integers(0, 3)),
    st.integers(0, 10_000))))
def test_coassociation_distribution_equals_the_dense_matrix(case):
    rows, seed = case
    counts = np.random.default_rng(seed).integers(1, 5, size=len(rows))
    distribution = coassociation_distribution(rows, counts)
    dense = dense_coassociation_counts(rows, counts)
    assert list(distribution.pairs) == dense.tolist()
    values = np.arange(rows.shape[1] + 1) / rows.shape[1]
    total = dense.sum()
    if total:
        np.testing.assert_allclose(distribution.cdf, np.cumsum(dense) / total)
        assert distribution.pac() == pytest.approx(dense[(values > 0.1) & (values < 0.9)].sum() / total)


def test_coassociation_distribution_of_distinct_rows_merged_by_microcluster():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, size=(200, 8))
    rows, counts = np.unique(labels, axis=0, return_counts=True)
    assert list(coassociation_distribution(rows, counts).pairs) == \
        dense_coassociation_counts(labels, np.ones(len(labels), dtype=np.int64)).tolist()


@given(labelled_rows())
def test_profiles_equal_a_pandas_groupby(case):
    X, labels, k, _ = case
    names = [f"x{j}" for j in range(X.shape[1])]
    confidence = np.linspace(0, 1, len(labels))
    sums = ClusterSums.of(X, labels, k)
    profiles = cluster_profiles(sums, np.bincount(labels, weights=confidence, minlength=k), names, X.mean(axis=0),
                                X.std(axis=0))
    frame = pd.DataFrame(X, columns=names).assign(label=labels, confidence=confidence)
    grouped = frame.groupby("label")
    assert profiles["cluster"].tolist() == sorted(grouped.groups)
    np.testing.assert_array_equal(profiles["size"], grouped.size())
    np.testing.assert_allclose(profiles["mean_confidence"], grouped["confidence"].mean())
    for name in names:
        means = grouped[name].mean().to_numpy()
        np.testing.assert_allclose(profiles[f"{name}_mean"], means, rtol=1e-9, atol=1e-9)
        std = frame[name].std(ddof=0)
        constant = std <= 1e-9 * (abs(frame[name].mean()) + 1)  # rounding alone
        expected = np.zeros(len(means)) if constant else (means - frame[name].mean()) / std
        np.testing.assert_allclose(profiles[f"{name}_z"], expected, rtol=1e-6, atol=1e-6)


def test_distinctive_features_are_the_largest_absolute_z():
    profiles = pd.DataFrame({"cluster": [0], "size": [1], "share": [1.0], "mean_confidence": [1.0],
                             "a_mean": [0.0], "a_z": [0.5], "b_mean": [0.0], "b_z": [-2.0], "c_mean": [0.0],
                             "c_z": [1.0]})
    assert distinctive_features(profiles, ["a", "b", "c"], top=2) == [[("b", -2.0), ("c", 1.0)]]


@given(arrays(np.int64, st.integers(1, 80), elements=st.integers(0, 4)),
       arrays(np.int64, st.integers(1, 80), elements=st.integers(0, 4)), st.permutations(range(5)))
def test_matched_jaccard_equals_the_direct_set_computation(before, after, renaming):
    n = min(len(before), len(after))
    before, after = before[:n], np.asarray(renaming)[after[:n]]  # ids of both runs over the same objects
    new_ids, new_rows = np.unique(after, return_inverse=True)
    previous_ids, previous_columns = np.unique(before, return_inverse=True)
    overlap = np.zeros((len(new_ids), len(previous_ids)), dtype=np.int64)
    np.add.at(overlap, (new_rows, previous_columns), 1)
    jaccard = matched_jaccard(overlap, new_ids, previous_ids)
    for cluster_id in new_ids:
        if cluster_id not in previous_ids:
            assert int(cluster_id) not in jaccard
            continue
        a, b = set(np.flatnonzero(after == cluster_id)), set(np.flatnonzero(before == cluster_id))
        assert jaccard[int(cluster_id)] == pytest.approx(len(a & b) / len(a | b))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60_000), st.integers(0, 2**31 - 1), st.integers(1, 6_000))
def test_the_k_curve_rows_are_a_seeded_subset_of_the_selection_sample(n, seed, size):
    from lwec_tasks.core.k_criterion import selection_sample
    from lwec_tasks.core.k_curve import curve_sample

    rows = curve_sample(n, seed, size)
    if n <= size:
        assert rows is None
        return
    base = selection_sample(n, seed)
    base = np.arange(n) if base is None else base
    assert len(rows) == size and np.all(np.diff(rows) > 0)
    assert np.isin(rows, base).all()
    np.testing.assert_array_equal(rows, curve_sample(n, seed, size))
