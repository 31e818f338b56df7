"""NMI and ARI against the formulas of the paper, and the best-k / true-k helper."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from benchmarks import references as reference
from lwec_tasks import LwecInputError, ari, nmi, score_cuts

pairs = st.integers(2, 60).flatmap(
    lambda n: st.tuples(
        arrays(np.int64, n, elements=st.integers(0, 5)), arrays(np.int64, n, elements=st.integers(0, 5))
    )
)


@given(pairs, st.sampled_from(["max", "geometric", "arithmetic"]))
def test_nmi_matches_definition(pair, normalization):
    a, b = pair
    assume(len(set(a.tolist())) >= 2 and len(set(b.tolist())) >= 2)  # zero entropy: covered below
    assert nmi(a, b, normalization) == pytest.approx(reference.nmi(a, b, normalization), abs=1e-9)


@given(pairs)
def test_ari_matches_pair_counting_formula(pair):
    a, b = pair
    expected = reference.ari(a, b)
    assume(not np.isnan(expected))  # both partitions trivial (one cluster or all singletons)
    assert ari(a, b) == pytest.approx(expected, abs=1e-9)


def test_max_normalisation_is_the_smallest():
    a = np.array([0, 0, 1, 1, 2, 2, 2, 0])
    b = np.array([0, 0, 1, 1, 1, 1, 1, 1])
    assert nmi(a, b, "max") < nmi(a, b, "geometric") < nmi(a, b, "min")
    assert nmi(a, a) == 1.0
    assert nmi(np.zeros(5), np.zeros(5)) == 1.0


def test_bad_metric_input():
    with pytest.raises(LwecInputError, match="normalization must be one of"):
        nmi([0, 1], [0, 1], "median")
    with pytest.raises(LwecInputError, match="differ in length: 2 vs 3"):
        ari([0, 1], [0, 1, 1])


def test_score_cuts_best_and_true_k():
    truth = np.repeat([0, 1, 2], 4)
    cuts = np.column_stack([np.repeat([0, 1], 6), truth, np.arange(12) % 4])
    scores = score_cuts(cuts, [2, 3, 4], truth)
    assert scores.best_k == 3 and scores.best == 1.0
    assert scores.true_k == 3 and scores.true == 1.0
    assert scores.scores[0] == pytest.approx(reference.nmi(cuts[:, 0], truth, "max"))
    ari_scores = score_cuts(cuts[:, [0, 2]], [2, 4], truth, metric="ari")
    assert ari_scores.true is None
    assert ari_scores.best == max(ari(cuts[:, 0], truth), ari(cuts[:, 2], truth))
