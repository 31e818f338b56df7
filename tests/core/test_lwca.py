"""The dense LWCA matrix against the literal definition, and its guard."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from benchmarks import references as reference
from lwec_tasks import LwecMemoryError, lwca

label_matrices = st.integers(2, 25).flatmap(
    lambda n: st.integers(1, 4).flatmap(lambda m: arrays(np.int64, (n, m), elements=st.integers(0, 4)))
)


@given(label_matrices, st.floats(0.05, 4))
def test_lwca_matches_definition_and_is_a_symmetric_similarity(labels, theta):
    matrix = lwca(labels, theta)
    assert matrix == pytest.approx(reference.lwca(labels, theta), abs=1e-12)
    assert np.array_equal(matrix, matrix.T)
    assert matrix.min() >= 0 and matrix.max() <= 1
    assert np.all(np.diag(matrix) == 1)


def test_plain_co_association_when_no_cluster_is_split():
    # Identical columns: every ECI is 1, so LWCA is the co-association matrix.
    column = np.array([0, 0, 1, 1, 2])
    matrix = lwca(np.column_stack([column, column]))
    assert np.array_equal(matrix, (column[:, None] == column[None, :]).astype(float))


def test_memory_guard_refuses_huge_matrices(monkeypatch):
    monkeypatch.setenv("LWEC_MEMORY_LIMIT_BYTES", str(10_000))
    with pytest.raises(LwecMemoryError, match="dense LWCA matrix for N=100 objects.*lwea"):
        lwca(np.arange(200).reshape(100, 2) % 7)


def test_the_refusal_states_sizes_in_units_a_person_reads(monkeypatch):
    # Two 100 × 100 float64 matrices (0.15 MiB) against 0.8 × 10,000 bytes usable: both far below a GiB.
    monkeypatch.setenv("LWEC_MEMORY_LIMIT_BYTES", str(10_000))
    with pytest.raises(LwecMemoryError, match=r"needs 0\.2 MiB but only 0\.0 MiB"):
        lwca(np.arange(200).reshape(100, 2) % 7)
    monkeypatch.setenv("LWEC_MEMORY_LIMIT_BYTES", str(3 * 2**30))
    with pytest.raises(LwecMemoryError, match=r"needs [\d.]+ GiB but only 2\.40 GiB"):
        lwca(np.zeros((40_000, 1), dtype=np.int64))
