"""``core/column_runs.as_slice``: the same columns, a view when they run consecutively."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lwec_tasks.core.column_runs import as_slice


@given(st.lists(st.integers(0, 9), max_size=8), st.booleans())
def test_the_columns_taken_are_those_given_and_a_run_is_a_view(columns, consecutive):
    if consecutive and columns:
        columns = list(range(columns[0], columns[0] + len(columns)))
        columns = [c for c in columns if c < 10]
    X = np.arange(30.0).reshape(3, 10)
    index = np.array(columns, dtype=np.int64)
    taken = X[:, as_slice(index)]
    np.testing.assert_array_equal(taken, X[:, index])
    runs = len(columns) > 0 and all(b == a + 1 for a, b in zip(columns, columns[1:]))
    assert np.shares_memory(taken, X) is runs
