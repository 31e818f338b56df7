"""A partition as read and summarised holds the values of the plain numpy arithmetic, bit for bit.

The feature matrix is filled in blocks of rows, the finite check starts from the column sums and the
moments are summed by compiled loops; each is compared with the straightforward numpy version written
out here (column after column, ``np.isfinite(X).all(axis=1)``, ``X.mean(axis=0)`` and
``((X - mean) ** 2).sum(axis=0)``), on NaN, ±inf, −0.0 and values whose sums overflow too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lwec_tasks.io import features
from lwec_tasks.io.features import feature_matrix, numeric_column
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.sums import Moments, squared_deviation_sums

SPECIAL_VALUES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e308, -1e308, 5e-324]


def bits(values: np.ndarray) -> np.ndarray:
    """The float64 values' bit patterns, so equality tells −0.0 from 0.0 and compares NaNs."""
    return np.ascontiguousarray(values, dtype=np.float64).view(np.int64)


def reference_matrix(frame: pd.DataFrame, names) -> np.ndarray:
    X = np.empty((len(frame), len(names)))
    for j, name in enumerate(names):
        X[:, j] = numeric_column(frame[name], name)
    return X


def reference_moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(axis=0)
    return mean, ((X - mean) ** 2).sum(axis=0)


def reference_partition(frame: pd.DataFrame, names, drop_nonfinite: bool) -> dict:
    """What the partition read made of ``frame`` before the rows were checked by their column sums."""
    X = reference_matrix(frame, names)
    ids, truth = frame["id"].to_numpy(), frame["target"].to_numpy()
    finite = np.isfinite(X).all(axis=1)
    if finite.all():
        nan_counts = inf_counts = np.zeros(X.shape[1], dtype=np.int64)
    else:
        nan_counts, inf_counts = np.isnan(X).sum(axis=0), np.isinf(X).sum(axis=0)
    n_nonfinite = int(len(X) - finite.sum())
    if drop_nonfinite and not finite.all():
        X, ids, truth = X[finite], ids[finite], truth[finite]
    finite_X = X[np.isfinite(X).all(axis=1)]
    mean, m2 = reference_moments(finite_X) if len(finite_X) else (None, None)
    return dict(X=X, ids=ids, truth=truth, n_nonfinite=n_nonfinite, nan_counts=nan_counts, inf_counts=inf_counts,
                mean=mean, m2=m2)


@st.composite
def feature_frames(draw) -> tuple[pd.DataFrame, list[str]]:
    """Frames of an id column, a label column and 1–5 feature columns: float64 ones with special values
    among normal ones (or only finite ones), integer ones (converted, not copied in blocks)."""
    n_rows = draw(st.integers(0, 60))
    n_features = draw(st.integers(1, 5))
    finite_only = draw(st.booleans())
    normal = st.floats(-1e6, 1e6, allow_nan=False)
    values = normal if finite_only else st.one_of(normal, st.sampled_from(SPECIAL_VALUES))
    data = {"id": np.arange(n_rows, dtype=np.int64) * 3, "target": np.arange(n_rows, dtype=np.int64) % 4}
    names = []
    for j in range(n_features):
        name = f"f{j}"
        if draw(st.integers(0, 4)) == 0:
            data[name] = draw(hnp.arrays(np.int64, n_rows, elements=st.integers(-(2**53), 2**53)))
        else:
            data[name] = draw(hnp.arrays(np.float64, n_rows, elements=values))
        names.append(name)
    return pd.DataFrame(data), names


def read_from(frame: pd.DataFrame, names, drop_nonfinite: bool, monkeypatch) -> part.PartitionRows:
    """:func:`read_partition` of a partition whose read returns ``frame``."""
    monkeypatch.setattr(part, "read_rows", lambda *args, **kwargs: frame.copy())
    source = type("Source", (), {"table": sa.table("t", sa.column("id"))})()
    spec = part.PartitionSpec(0, "sqlite://", parse_table_name("t"), "id", "target", tuple(names), None, None, 1000,
                              drop_nonfinite,
                              source=source)
    return part.read_partition(spec)


@settings(max_examples=150, deadline=None)
@given(case=feature_frames(), drop_nonfinite=st.booleans(), block_bytes=st.sampled_from([8, 24, 1000, 1 << 20]))
def test_a_read_partition_and_its_summary_equal_the_plain_numpy_ones(case, drop_nonfinite, block_bytes):
    frame, names = case
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(features, "FEATURE_BLOCK_BYTES", block_bytes)  # blocks of one row to all rows
        rows = read_from(frame, names, drop_nonfinite, monkeypatch)
    expected = reference_partition(frame, names, drop_nonfinite)
    assert rows.X.flags.c_contiguous and rows.X.dtype == np.float64
    np.testing.assert_array_equal(bits(rows.X), bits(expected["X"]))
    np.testing.assert_array_equal(rows.ids, expected["ids"])
    np.testing.assert_array_equal(rows.truth, expected["truth"])
    assert (rows.n_read, rows.n_nonfinite) == (len(frame), expected["n_nonfinite"])
    assert rows.n_dropped == len(frame) - len(expected["X"])
    np.testing.assert_array_equal(rows.nan_counts, expected["nan_counts"])
    np.testing.assert_array_equal(rows.inf_counts, expected["inf_counts"])
    summary = part.summarise(rows)
    if expected["mean"] is None:
        assert summary.moments.n == 0
    else:
        np.testing.assert_array_equal(bits(summary.moments.mean), bits(expected["mean"]))
        np.testing.assert_array_equal(bits(summary.moments.m2), bits(expected["m2"]))


@settings(max_examples=100, deadline=None)
@given(X=hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=40),
                    elements=st.one_of(st.floats(-1e6, 1e6), st.sampled_from(SPECIAL_VALUES))))
def test_finite_rows_are_the_rows_finite_throughout(X):
    finite = part.finite_rows(X)
    expected = np.isfinite(X).all(axis=1)
    if expected.all():
        assert finite is None
    else:
        np.testing.assert_array_equal(finite, expected)


def test_finite_values_whose_column_sum_overflows_are_finite_rows():
    X = np.array([[1e308, 1.0], [1e308, 2.0], [-1e308, 3.0]])
    assert not np.isfinite(X.sum(axis=0)).all()
    assert part.finite_rows(X) is None


@pytest.mark.parametrize("shape", [(1, 2), (7, 3), (1000, 2), (100_000, 16), (20_000, 40), (5000, 1)])
def test_moments_equal_numpys_bit_for_bit(shape):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    X = rng.standard_normal(shape) * rng.uniform(1e-3, 1e4, shape[1]) + rng.uniform(-1e5, 1e5, shape[1])
    moments, (mean, m2) = Moments.of(X), reference_moments(X)
    np.testing.assert_array_equal(bits(moments.mean), bits(mean))
    np.testing.assert_array_equal(bits(moments.m2), bits(m2))
    column_major = Moments.of(np.asfortranarray(X))  # numpy's own (pairwise) sums
    np.testing.assert_array_equal(bits(column_major.m2), bits(reference_moments(np.asfortranarray(X))[1]))


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(1, 60), d=st.integers(2, 5))
def test_squared_deviations_summed_block_by_block_are_numpys_bit_for_bit(data, n, d):
    X = data.draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-1e150, 1e150, allow_subnormal=True)))
    block_rows = data.draw(st.integers(1, n + 2))
    mean = X.mean(axis=0)
    expected = ((X - mean) ** 2).sum(axis=0)
    np.testing.assert_array_equal(bits(squared_deviation_sums(X, mean, block_rows)), bits(expected))


@settings(max_examples=50, deadline=None)
@given(frame_and_names=feature_frames())
def test_the_feature_matrix_is_the_columns_side_by_side(frame_and_names):
    frame, names = frame_and_names
    np.testing.assert_array_equal(bits(feature_matrix(frame, names)), bits(reference_matrix(frame, names)))


@settings(max_examples=60, deadline=None)
@given(values=hnp.arrays(np.float64, (12, 2), elements=st.one_of(st.floats(-1e3, 1e3),
                                                                  st.sampled_from([np.nan, np.inf, -np.inf]))),
       impute=st.booleans())
def test_a_typed_partition_keeps_which_numeric_values_it_filled(values, impute):
    """Read to be labelled (``impute``), a typed partition fills each numeric gap with its column's fill value and
    keeps where the gaps were (the naive-Bayes placement skips them); read by a run, the gaps stay NaN/inf until
    the table's means are known (:func:`impute_partition`), which keeps them too."""
    from lwec_tasks.core.encoding import TableEncoding, category_code, numeric_code

    frame = pd.DataFrame({"id": np.arange(12), "a": values[:, 0], "colour": ["red", None, "blue"] * 4,
                          "b": values[:, 1]})
    encoding = TableEncoding((numeric_code("a"), category_code("colour", "text", [("red", 4), ("blue", 4), (None, 4)]),
                              numeric_code("b"))).with_fill({"a": 1.5, "b": -2.0})
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(part, "read_rows", lambda *args, **kwargs: frame.copy())
        source = type("Source", (), {"table": sa.table("t", sa.column("id"))})()
        spec = part.PartitionSpec(0, "sqlite://", parse_table_name("t"), "id", None, ("a", "colour", "b"), None, None,
                                  1000, False, source=source, encoding=encoding, impute=impute)
        rows = part.read_partition(spec)
    gaps = ~np.isfinite(values)
    numeric = encoding.numeric_positions
    if not impute:
        rows = part.impute_partition(rows, numeric, np.array([1.5, -2.0]))
    if gaps.any():
        np.testing.assert_array_equal(rows.gaps, gaps)
    else:
        assert rows.gaps is None
    np.testing.assert_array_equal(rows.X[:, numeric], np.where(gaps, [1.5, -2.0], values))
    # a NULL text value is read as its level, not imputed: whether it counts as imputed (NULLs missing at random)
    # is known once the whole table's relevance is (load_table)
    np.testing.assert_array_equal(rows.imputed if rows.imputed is not None else np.zeros(12), gaps.sum(axis=1))
