"""Exact LWEA on microclusters against the dense N × N reference, and its memory guard.

The reference is the literal method: the dense LWCA matrix, scipy's average
linkage on 1 − LWCA over all N objects, ``cut_tree``. Every cut k = 2..30 must
give the same partition (ties between equal distances aside: the pools and the
synthetic ensembles below have none that matter).
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import references as reference
from helpers.pools import draw_ensemble, load_pool
from lwec_tasks import Ensemble, LwecMemoryError, lwea
from lwec_tasks.core.counts_linkage import counts_memory_bytes
from lwec_tasks.core.synthetic import synthetic_ensemble

KS = list(range(2, 31))


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = np.unique(np.column_stack([a, b]), axis=0)
    return len(pairs) == len(np.unique(a)) == len(np.unique(b))


def _assert_every_cut_equal(labels: np.ndarray) -> None:
    ours = lwea(labels, KS)
    dense = reference.dense_lwea(labels, KS)
    different = [k for j, k in enumerate(KS) if not _same_partition(ours[:, j], dense[:, j])]
    assert not different, f"cuts differ for k in {different}"


@pytest.mark.pools
@pytest.mark.parametrize("pool", ["VS", "Semeion", "MF", "IS", "ODR"])
def test_pool_cuts_equal_the_dense_reference(pool):
    members, _ = load_pool(pool)
    for draw in (11, 12):
        _assert_every_cut_equal(draw_ensemble(members, 10, seed=draw))


@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_cuts_with_thousands_of_microclusters_equal_the_dense_reference(seed):
    labels, _ = synthetic_ensemble(3000, 10, n_classes=5, k_min=5, k_max=12, random_state=seed)
    assert Ensemble(labels).n_microclusters > 1000
    _assert_every_cut_equal(labels)


def test_memory_guard_bounds_the_cluster_counts_not_the_square_of_the_microclusters(monkeypatch):
    labels, _ = synthetic_ensemble(5000, 10, k_min=100, k_max=200, random_state=0)
    n_micro = Ensemble(labels).n_microclusters
    needed = counts_memory_bytes(n_micro, 10)
    # Linear in Ñ·M: far below the condensed matrix the dense path needed.
    assert needed < n_micro * (n_micro - 1) // 2 * 8 // 4
    monkeypatch.setenv("LWEC_MEMORY_LIMIT_BYTES", str(needed // 2))
    with pytest.raises(LwecMemoryError, match=rf"exact LWEA on {n_micro} microclusters.*'lwgp'"):
        lwea(labels, 5)
    monkeypatch.setenv("LWEC_MEMORY_LIMIT_BYTES", str(needed * 2))
    assert lwea(labels, 5).shape == (5000,)
