"""The calibrated row confidence: a number in [0, 1] that rises with the margin and the share, and whose value
reads as a rate on a generated blob table (rows given about p agree with their cluster's majority truth about
a share p of the time)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lwec_tasks.core.confidence import calibrated, row_confidence

unit = st.floats(0.0, 1.0, allow_nan=False)


@given(unit, unit, unit, unit)
def test_calibrated_is_in_unit_interval_and_rises_with_margin_and_share(m1, m2, s1, s2):
    low_m, high_m = sorted((m1, m2))
    low_s, high_s = sorted((s1, s2))
    low = calibrated(np.array([low_m]), np.array([low_s]))[0]
    high = calibrated(np.array([high_m]), np.array([high_s]))[0]
    assert 0.0 <= low <= high <= 1.0
    alone_low, alone_high = calibrated(None, np.array([low_s, high_s]))
    assert 0.0 <= alone_low <= alone_high <= 1.0


def ece(confidence, good, bins=10):
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    return sum(abs(confidence[which == b].sum() - good[which == b].sum()) for b in range(bins)) / len(good)


def test_confidence_reads_as_the_agreement_rate_on_overlapping_blobs():
    from sklearn.datasets import make_blobs

    from lwec_tasks.core.base_clusterings import fit_base_clusterings
    from lwec_tasks.core.confidence import ClusterSums, base_shares
    from lwec_tasks.core.ensemble import Ensemble
    from lwec_tasks.core.lwgp import lwgp

    X, truth = make_blobs(n_samples=1500, n_features=4, centers=6, cluster_std=2.5, random_state=7)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    base = fit_base_clusterings(Z, 10, random_state=0, generators="kmeans", n_jobs=1).labels
    labels = lwgp(Ensemble(base), [6], random_state=0)[:, 0].astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(base.max(axis=0) + 1)])
    codes = (base + offsets[:-1]).T
    overlap = np.zeros((offsets[-1], 6), np.int64)
    for column in codes:
        np.add.at(overlap, (column, labels), 1)
    sums = ClusterSums.of(Z, labels, 6)
    confidence = row_confidence(Z, codes, labels, sums.means, base_shares(overlap, overlap.sum(axis=1)),
                                sums.counts > 0).astype(np.float64)
    joint = np.zeros((6, truth.max() + 1), np.int64)
    np.add.at(joint, (labels, truth), 1)
    good = joint.argmax(axis=1)[labels] == truth  # the label agrees with its cluster's majority truth
    assert 0.7 < good.mean() < 1.0  # overlapping: some rows disagree
    assert ece(confidence, good) <= 0.05
