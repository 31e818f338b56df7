"""The ceiling study of ``python -m benchmarks.auto_k_ceiling``: a cut's modularity terms against the dense LWCA
matrix, the joint criterion recomputed from them against ``select_k`` at any (γ, λ), and the oracles' choices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.auto_k_ceiling import (
    best_switch,
    curves_row,
    cut_terms,
    joint_k,
    per_set_oracle,
    plateau_k,
    self_consistent_k,
    set_means,
    setting_means,
)
from helpers.lwca import dense_lwca
from lwec_tasks.core.auto_k import FEATURE_AGREEMENT, FEATURE_RESOLUTION, SILHOUETTE_WEIGHT, select_k
from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.ensemble import Ensemble


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(4, 30), st.integers(1, 5))
def test_the_terms_are_the_inside_mass_and_the_squared_degree_shares(seed, n, m):
    rng = np.random.default_rng(seed)
    ensemble = Ensemble(rng.integers(0, 4, (n, m)))
    cuts = rng.integers(0, 3, (n, 2))
    eci = ensemble_eci(ensemble, 0.4)
    lwca = dense_lwca(ensemble, eci)
    degrees, total = lwca.sum(axis=1), lwca.sum()
    expected = [(lwca[cut[:, None] == cut[None, :]].sum() / total,
                 sum((degrees[cut == c].sum() / total) ** 2 for c in np.unique(cut))) for cut in cuts.T]
    np.testing.assert_allclose(cut_terms(ensemble, eci, cuts), expected, rtol=1e-10, atol=1e-12)


def blob_labels(seed: int, n_blobs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(90, 6) base labels of points around ``n_blobs`` centres (each column a noisy nearest-centre labelling
    into 2..7 clusters), the (90,) classes and the (90, 2) points."""
    rng = np.random.default_rng(seed)
    classes = np.repeat(np.arange(n_blobs), 90 // n_blobs + 1)[:90]
    points = rng.normal(size=(n_blobs, 2))[classes] * 4 + rng.normal(size=(90, 2))
    columns = []
    for _ in range(6):
        centres = points[rng.choice(90, rng.integers(2, 8), replace=False)]
        columns.append(((points[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1))
    return np.column_stack(columns), classes, points


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 5), st.sampled_from([0.05, 0.3, 0.6, 2.0]),
       st.sampled_from([0.0, 0.15, 0.5]))
def test_the_recomputed_joint_criterion_is_select_ks_choice(seed, n_blobs, gamma, agreement):
    labels, classes, _ = blob_labels(seed, n_blobs)
    row = curves_row("blobs", labels, classes, 0, seed % 7)
    expected = select_k(labels, "lwea", random_state=seed % 7, resolution=gamma, agreement=agreement).k
    assert joint_k(row, gamma, agreement) == expected


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 5))
def test_with_the_features_the_recomputed_score_is_the_runs_choice(seed, n_blobs):
    labels, classes, points = blob_labels(seed, n_blobs)
    row = curves_row("blobs", labels, classes, 0, seed % 7, features=points)
    expected = select_k(labels, "lwea", random_state=seed % 7, features=points).k
    assert joint_k(row, FEATURE_RESOLUTION, FEATURE_AGREEMENT, SILHOUETTE_WEIGHT) == expected


def toy_row(name: str, lwea_terms, nmis, true_k: int = 2) -> dict:
    ks = list(range(2, 2 + len(nmis)))
    return {"name": name, "seed": 0, "true_k": true_k, "ks": ks, "lwea": [list(t) for t in lwea_terms],
            "lwgp": [], "agreement": [], "nmi": list(nmis)}


# Q_γ(k) = S − γ·D: the separated pair prefers k = 2 only below γ ≈ 0.045; the compact one prefers k = 4 above γ = 0.9
SEPARATED = toy_row("separated", [(1.0, 0.5), (0.99, 0.28), (0.98, 0.25)], [1.0, 0.6, 0.5])
COMPACT = toy_row("compact", [(1.0, 0.5), (0.95, 0.4), (0.86, 0.3)], [0.4, 0.6, 1.0], true_k=4)


def test_the_joint_criterion_moves_with_the_resolution():
    assert [joint_k(SEPARATED, g, 0.0) for g in (0.02, 0.1)] == [2, 3]
    assert [joint_k(COMPACT, g, 0.0) for g in (0.3, 2.0)] == [2, 4]
    assert set_means([SEPARATED, COMPACT], lambda row: 3) == {"separated": pytest.approx(-0.4),
                                                             "compact": pytest.approx(-0.4)}


def test_no_one_resolution_serves_both_but_a_switch_and_a_per_set_choice_do():
    table = setting_means([SEPARATED, COMPACT])
    assert max(min(means.values()) for means in table.values()) < 0  # every single setting loses on one
    switched, (small, large, _) = best_switch(table)
    assert switched == {"separated": 0.0, "compact": 0.0} and small < 0.05 and large > 0.9
    means, chosen = per_set_oracle(table)
    assert means == {"separated": 0.0, "compact": 0.0}
    assert chosen["separated"][0] < 0.05 < 0.9 < chosen["compact"][0]


def test_the_plateau_and_the_self_consistent_resolution():
    # over [0.01, 0.04] the separated pair's k = 2 holds throughout; over [0.03, 0.19] k = 3 (from 0.045) the longest
    assert plateau_k(SEPARATED, 0.01, 0.04, 0.0) == 2
    assert plateau_k(SEPARATED, 0.03, 0.19, 0.0) == 3
    assert self_consistent_k(SEPARATED, 0.01, 0.0, 0.0) == 2  # the first γ ≥ 0.01 chooses k = 2
    assert self_consistent_k(COMPACT, 1.5, 0.0, 0.0) == 4  # the first γ ≥ 1.5 chooses k = 4
