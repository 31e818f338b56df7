"""Feature and id values as read (lwec_tasks.io.features), against straightforward references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.features import id_values, numeric_column

ids_strategy = st.lists(st.integers(-(2**62), 2**62), max_size=60)


@settings(max_examples=200, deadline=None)
@given(ids=ids_strategy, sort=st.booleans())
def test_ids_are_refused_exactly_when_some_repeat(ids, sort):
    values = pd.Series(np.array(sorted(ids) if sort else ids, dtype=np.int64))
    if len(set(ids)) < len(ids):
        with pytest.raises(LwecInputError, match=r"^id column 'id' has \d+ rows sharing \d+ duplicate id value"):
            id_values(values, "id")
    else:
        np.testing.assert_array_equal(id_values(values, "id"), values.to_numpy())


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()), max_size=40),
       nullable=st.booleans())
def test_numeric_columns_become_float64_with_nan_for_missing(values, nullable):
    series = pd.Series(values, dtype="Float64" if nullable else np.float64)
    expected = np.array([np.nan if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in values],
                        dtype=np.float64)
    got = numeric_column(series, "f")
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


def test_integer_and_text_feature_columns():
    np.testing.assert_array_equal(numeric_column(pd.Series([3, -1], dtype=np.int64), "n"), [3.0, -1.0])
    with pytest.raises(LwecInputError, match=r"^feature column 't' is not numeric \(1 non-numeric values, e.g. 'x'\)"):
        numeric_column(pd.Series(["1.5", "x"]), "t")
