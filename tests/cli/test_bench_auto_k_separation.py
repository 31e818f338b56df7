"""The separated-cut rule measured by ``python -m benchmarks.auto_k_separation``: the within share of a cut against
the dense LWCA matrix, and the rule's choice."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.auto_k_separation import chosen_k, family_score, within_shares
from helpers.lwca import dense_lwca
from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.ensemble import Ensemble


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(4, 30), st.integers(1, 5))
def test_the_within_share_is_the_lwca_mass_inside_the_clusters(seed, n, m):
    rng = np.random.default_rng(seed)
    ensemble = Ensemble(rng.integers(0, 4, (n, m)))
    cuts = rng.integers(0, 3, (n, 2))
    eci = ensemble_eci(ensemble, 0.4)
    lwca = dense_lwca(ensemble, eci)
    expected = [lwca[cut[:, None] == cut[None, :]].sum() / lwca.sum() for cut in cuts.T]
    np.testing.assert_allclose(within_shares(ensemble, cuts), expected, rtol=1e-12)


def row(shares, shipped=5, nmis=None, smallest=None):
    ks = list(range(2, 2 + len(shares)))
    return {"name": "t", "ks": ks, "share": list(shares), "shipped": shipped, "true_k": 2,
            "smallest": list(smallest if smallest is not None else [0.3] * len(ks)),
            "nmi": list(nmis if nmis is not None else np.linspace(1, 0, len(ks)))}


def test_the_rule_takes_the_separated_cut_with_the_largest_drop_else_the_shipped_k():
    separated = row([1.0, 1.0, 0.99, 0.95])  # k = 3 keeps all the mass, k = 4 loses 0.01
    assert chosen_k(separated, 0.001, 2.0) == 3
    assert chosen_k(separated, None, 0.0) == 5
    assert chosen_k(row([0.99, 0.98, 0.97]), 0.001, 0.0) == 5  # no cut within ε: the shipped k
    assert chosen_k(row([0.9995, 0.9990, 0.99]), 0.001, 20.0) == 5  # a drop too small for its residue
    # a separated cut that only sets a few objects apart is not taken
    few_apart = row([1.0, 0.9995, 0.99], smallest=[0.4, 0.01, 0.01])
    assert chosen_k(few_apart, 0.001, 2.0) == 3
    assert chosen_k(few_apart, 0.001, 2.0, 0.05) == 2


def test_a_family_scores_the_mean_over_data_sets_of_the_mean_over_seeds():
    rows = [row([1.0, 0.9], shipped=3, nmis=[1.0, 0.4]), row([1.0, 0.9], shipped=2, nmis=[1.0, 0.4])]
    rows[1]["name"] = "u"
    mean, worst, value = family_score(rows, None, 0.0)
    assert (mean, worst, value) == (pytest.approx(-0.3), "t", pytest.approx(-0.6))
    assert family_score(rows, 0.0, 0.0)[0] == pytest.approx(0.0)
