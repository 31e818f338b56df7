"""Checking the values of feature and id columns as read.

Pure pandas/numpy: no database, Prefect or MLflow here. The read stage
(:mod:`lwec_tasks.stages.read`) hands over each partition's columns; these
functions turn them into float64 features and exact ids, or raise
:class:`~lwec_tasks.core.errors.LwecInputError` with a message naming the
offending column. The column plan itself
(:func:`~lwec_tasks.io.columns.plan_columns`) lives in :mod:`lwec_tasks.io.columns`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.columns import unusable_features_message


def numeric_column(series: pd.Series, name: str) -> np.ndarray:
    """Column as float64; missing values become NaN, text raises naming the column."""
    if pd.api.types.is_bool_dtype(series):
        raise LwecInputError(f"feature column {name!r} is boolean, not numeric")
    if pd.api.types.is_numeric_dtype(series):
        if isinstance(series.dtype, np.dtype):  # NumPy-backed: a missing value is NaN already (no masked copy)
            return series.to_numpy(dtype=np.float64)
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    converted = pd.to_numeric(series, errors="coerce")
    bad = series.notna() & converted.isna()
    if bad.any() or isinstance(series.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(series):
        example = series[bad].iloc[0] if bad.any() else series.dropna().iloc[0]
        raise LwecInputError(
            f"feature column {name!r} is not numeric ({int(bad.sum()) or len(series)} non-numeric "
            f"values, e.g. {example!r}); choose numeric feature_columns"
        )
    return converted.to_numpy(dtype=np.float64, na_value=np.nan)


#: Bytes of the feature matrix filled at a time from the columns (rows of every column at once), small enough for
#: the block to stay in the processor's cache while each column writes its values into it.
FEATURE_BLOCK_BYTES = 1 << 20


def feature_matrix(frame: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    """The ``names`` columns of ``frame`` as a row-major (n, d) float64 matrix, each as :func:`numeric_column`
    gives it (the same values; text raises naming the column).

    float64 columns (what the fast path and most tables give) are copied in blocks of rows, every column's part
    of a block at a time, so the block stays in cache (copying column after column writes every cache line of
    the matrix d times, each time with one value). Other columns are converted one at a time, so no more than
    one converted copy is held at once.
    """
    X = np.empty((len(frame), len(names)))
    float_columns = {}
    for j, name in enumerate(names):
        series = frame[name]
        if series.dtype == np.float64:
            float_columns[j] = series.to_numpy()
        else:
            X[:, j] = numeric_column(series, name)
    block_rows = max(1, FEATURE_BLOCK_BYTES // max(1, X.itemsize * X.shape[1]))
    for start in range(0, len(X), block_rows):
        stop = start + block_rows
        for j, values in float_columns.items():
            X[start:stop, j] = values[start:stop]
    return X


def useless_columns_message(table: str, names: Sequence[str], useless: Sequence[str]) -> str:
    """Columns without one finite value: dropping rows would drop every row, so the advice is to leave them out."""
    return unusable_features_message(names, useless, ("has", "have"),
                                     f"no finite value in any row of table {table!r} (all NULL, NaN or infinite)")


def nonfinite_counts_message(names: Sequence[str], nan_counts, inf_counts, n_rows: int) -> str:
    """The error for ``n_rows`` rows with non-finite features, from the NaN and inf counts per column."""
    parts = []
    for name, n_nan, n_inf in zip(names, nan_counts, inf_counts):
        if n_nan or n_inf:
            counts = [f"{n_nan} missing/NaN" if n_nan else "", f"{n_inf} infinite" if n_inf else ""]
            parts.append(f"column {name!r}: " + ", ".join(c for c in counts if c))
    return (
        f"features contain non-finite values in {n_rows} row(s) ({'; '.join(parts)}); "
        "clean the table or pass drop_nonfinite=True (CLI: --drop-nonfinite) to drop those rows"
    )


def id_values(series: pd.Series, name: str) -> np.ndarray:
    if series.isna().any():
        raise LwecInputError(f"id column {name!r} has {int(series.isna().sum())} missing values")
    values = series.to_numpy()
    if values.dtype == object:
        values = _uniform_ids(values, name)
    if values.dtype.kind in "iu" and bool(np.all(values[1:] > values[:-1])):
        return values  # strictly increasing, as partitions are read in id order: no duplicates
    converted = pd.Series(values)
    duplicated = converted[converted.duplicated(keep=False)]
    if len(duplicated):
        examples = sorted(set(duplicated.tolist()), key=str)[:5]
        raise LwecInputError(
            f"id column {name!r} has {len(duplicated)} rows sharing {duplicated.nunique()} "
            f"duplicate id value(s), e.g. {examples}; ids must be unique"
        )
    return values


def _uniform_ids(values: np.ndarray, name: str) -> np.ndarray:
    """Object-dtype id values as one kind: int64 when every value is an integer, else unchanged.

    Every value is checked; a column mixing integers with text (or other kinds)
    is refused, since its ids could not be stored in one key column.
    """
    def kind(value) -> str:
        if isinstance(value, (bool, np.bool_)):
            return "boolean"
        if isinstance(value, (int, np.integer)):
            return "integer"
        if isinstance(value, str):
            return "text"
        if isinstance(value, (bytes, bytearray, memoryview)):
            return "binary"
        return type(value).__name__

    kinds = pd.Series([kind(v) for v in values])
    found = kinds.unique().tolist()
    if len(found) > 1:
        examples = [f"{values[int(kinds[kinds == k].index[0])]!r} ({k})" for k in found[:4]]
        raise LwecInputError(
            f"id column {name!r} mixes value kinds {found}, e.g. {', '.join(examples)}; "
            "ids must all be integers or all text"
        )
    if found == ["integer"]:
        with contextlib.suppress(OverflowError):
            return values.astype(np.int64)
    return values
