"""Placing rows by their nearest centre: exact distances decide, and the block of rows does not."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lwec_tasks.core import nearest_centre


def _nearest_by_exact_distances(X, centres):
    """Reference: Σ_f (x_f − c_f)² summed feature by feature in order, the first of the smallest."""
    distances = np.zeros((len(X), len(centres)))
    for f in range(X.shape[1]):
        distances += (X[:, None, f] - centres[None, :, f]) ** 2
    return np.argmin(distances, axis=1)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 300), p=st.integers(2, 40), d=st.integers(1, 70), split=st.integers(1, 299),
       seed=st.integers(0, 2**31))
def test_a_row_takes_the_same_prototype_in_any_block_of_rows(n, p, d, split, seed):
    """Rows placed all at once, one by one, or cut in two (as partitions cut a table) get the same prototype,
    also when prototypes are repeated rows (exact ties: the first) or nearly tied: the nearest by exact
    distances."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, d)).astype(float) * 0.1  # few distinct values: many exact distance ties
    centres = np.concatenate([X[rng.choice(n, size=min(p, n))], X[:1] + 1e-17])
    whole = nearest_centre.nearest(X, centres)
    np.testing.assert_array_equal(whole, _nearest_by_exact_distances(X, centres))
    split = min(split, n - 1)
    halves = [nearest_centre.nearest(X[:split], centres), nearest_centre.nearest(X[split:], centres)]
    np.testing.assert_array_equal(np.concatenate(halves), whole)
    np.testing.assert_array_equal([nearest_centre.nearest(X[i:i + 1], centres)[0] for i in range(n)], whole)


def test_placing_many_rows_agrees_with_exact_distances_across_blocks(monkeypatch):
    """Blocks of a few rows each (the buffer made small), continuous data: every row's exact nearest centre."""
    rng = np.random.default_rng(7)
    X, centres = rng.normal(size=(3000, 6)), rng.normal(size=(50, 6))
    centres[7] = centres[3]  # a duplicated prototype: rows nearest to it take the first, 3
    monkeypatch.setattr(nearest_centre, "PREDICT_BUFFER", 50 * 7)
    placed = nearest_centre.nearest(X, centres)
    np.testing.assert_array_equal(placed, _nearest_by_exact_distances(X, centres))
    assert (placed == 3).any() and not (placed == 7).any()


def test_many_centres_in_few_dimensions_go_through_a_tree_to_the_exact_nearest():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(nearest_centre.TREE_MIN_CENTRES + 200, 4))
    X = rng.normal(size=(2000, 4))
    np.testing.assert_array_equal(nearest_centre.nearest(X, centres), _nearest_by_exact_distances(X, centres))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), p=st.integers(1, 30), d=st.integers(1, 40), levels=st.integers(1, 4),
       seed=st.integers(0, 2**31))
def test_the_numpy_rule_for_a_few_rows_is_the_kernels(n, p, d, levels, seed):
    """:func:`_nearest_few` (numpy) and the numba kernel give every row the same centre, from the same products:
    exact ties (repeated rows, few distinct values), near ties (a centre moved by 1e-17) and ordinary rows."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(n, d)).astype(float) * 0.1 + rng.normal(scale=1e-3 if seed % 2 else 0.0,
                                                                             size=(n, d))
    centres = np.concatenate([X[rng.choice(n, size=min(p, n))], X[:1] + 1e-17, rng.normal(size=(p, d))])
    half_squared = 0.5 * (centres * centres).sum(axis=1)
    products = X @ centres.T
    by_numpy, by_kernel = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    nearest_centre._nearest_few(X, centres, products, half_squared, nearest_centre.NEAR_TIE, by_numpy)
    nearest_centre._nearest_in_block(X, centres, products, half_squared, nearest_centre.NEAR_TIE, by_kernel)
    np.testing.assert_array_equal(by_numpy, by_kernel)
    np.testing.assert_array_equal(by_numpy, _nearest_by_exact_distances(X, centres))


def test_a_few_rows_are_placed_without_loading_the_kernel():
    """In a fresh process, placing a few rows leaves numba's kernel unloaded; placing more loads it."""
    script = (
        "import numpy as np\n"
        "from lwec_tasks.core import nearest_centre as nc\n"
        "rng = np.random.default_rng(0)\n"
        "centres = rng.normal(size=(30, 5))\n"
        "nc.nearest(rng.normal(size=(nc.FEW_ROWS, 5)), centres)\n"
        "print(len(nc._nearest_in_block.signatures))\n"
        "nc.nearest(rng.normal(size=(nc.FEW_ROWS + 1, 5)), centres)\n"
        "print(len(nc._nearest_in_block.signatures))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == ["0", "1"]
