"""The prefetch hint compiles into kernels and never changes what they compute."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwec_tasks.core.cache_hints import prefetch


@numba.njit
def _gather_sum(values, positions, ahead):
    total = 0.0
    for t in range(len(positions)):
        if t + ahead < len(positions):
            prefetch(values, positions[t + ahead])
        total += values[positions[t]]
    return total


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 2000), st.integers(0, 2**32 - 1), st.integers(0, 8))
def test_a_gather_with_prefetches_sums_what_a_plain_gather_sums(n, seed, ahead):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=n)
    positions = rng.integers(0, n, size=3 * n)
    assert _gather_sum(values, positions, ahead) == pytest.approx(values[positions].sum(), rel=1e-12, abs=1e-12)


def test_prefetch_works_on_every_element_type_the_linkage_uses():
    @numba.njit
    def touch(a, b, c):
        prefetch(a, 0)
        prefetch(b, len(b) - 1)
        prefetch(c, np.int32(1))
        return a[0] + b[-1] + c[1]

    assert touch(np.arange(3, dtype=np.int32), np.arange(4, dtype=np.int64), np.ones(2)) == 0 + 3 + 1.0


def test_prefetch_refuses_a_two_dimensional_array():
    @numba.njit
    def touch(a):
        prefetch(a, 0)

    with pytest.raises(numba.TypingError):
        touch(np.zeros((2, 2)))
