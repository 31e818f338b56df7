"""Choosing, checking and standardising the feature columns of a source table.

Pure pandas/numpy: no database, Prefect or MLflow here. The database layer
describes the table (:class:`ColumnPlan` is built from its column lists) and
hands over the rows; this module turns them into the (N, d) matrix the
clustering sees, or raises :class:`~lwec_tasks.core.errors.LwecInputError` with a
message naming the offending column. The column plan itself (:func:`plan_columns`)
lives in :mod:`lwec_tasks.io.columns` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.preprocessing import StandardScaler

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import Standardisation
from lwec_tasks.io.columns import (  # noqa: F401 - the column plan's public names, kept importable from here
    CONVENTIONAL_ID_NAMES,
    LABEL_LIKE_NAMES,
    ColumnPlan,
    looks_like_key,
    looks_like_label,
    plan_columns,
)


@dataclass(frozen=True)
class PreparedFeatures:
    """The matrix handed to the clustering, with what is needed to report on it.

    Attributes
    ----------
    X : ndarray (N, d), float64; standardised (mean 0, unit variance per column,
        constant columns left at 0) unless standardisation was turned off; None
        once the pipeline holds the matrix elsewhere (see ``tasks.load.FeatureMatrix``)
    ids : ndarray (N,), the id of each row (row positions when there is no id column)
    truth : ndarray (N,) of ground-truth labels, or None
    feature_columns : the d column names, in the order of X's columns
    n_rows_read : rows read from the table
    n_rows_dropped : rows dropped for non-finite features (only with ``drop_nonfinite``)
    mean, scale : ndarray (d,) float64, the standardisation applied to the raw
        values (``X = (raw − mean) / scale``; a constant column has scale 1), or
        None when standardisation was turned off
    """

    X: np.ndarray
    ids: np.ndarray
    truth: np.ndarray | None
    feature_columns: tuple[str, ...]
    n_rows_read: int
    n_rows_dropped: int
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None

    @property
    def standardisation(self) -> Standardisation | None:
        """The standardisation as a :class:`~lwec_tasks.core.placement.Standardisation`, or None."""
        if self.mean is None or self.scale is None:
            return None
        return Standardisation(self.mean, self.scale)


def prepare_features(
    frame: pd.DataFrame,
    plan: ColumnPlan,
    *,
    n_clusters: int,
    standardize: bool = True,
    drop_nonfinite: bool = False,
    table: str = "the table",
) -> PreparedFeatures:
    """Check the rows read from ``table`` and build the feature matrix.

    Raises :class:`LwecInputError` for an empty table, non-numeric feature
    values, a feature column without a single finite value (leave it out),
    NaN/inf in the features (unless ``drop_nonfinite``), missing or duplicate
    ids, and fewer than ``2 * n_clusters`` usable rows.
    """
    n_read = len(frame)
    if n_read == 0:
        raise LwecInputError(f"table {table!r} is empty")
    X = np.empty((n_read, len(plan.feature_columns)))
    for j, name in enumerate(plan.feature_columns):
        X[:, j] = _numeric_column(frame[name], name)

    finite = np.isfinite(X)
    useless = [name for j, name in enumerate(plan.feature_columns) if not finite[:, j].any()]
    if useless:
        raise LwecInputError(_useless_columns_message(table, plan.feature_columns, useless))
    nonfinite_rows = ~finite.all(axis=1)
    del finite
    if nonfinite_rows.any() and not drop_nonfinite:
        raise LwecInputError(_nonfinite_message(X, plan.feature_columns, int(nonfinite_rows.sum())))
    keep = ~nonfinite_rows

    if plan.id_column is None:
        ids = np.arange(n_read, dtype=np.int64)
    else:
        ids = _id_values(frame[plan.id_column], plan.id_column)
    truth = frame[plan.label_column].to_numpy() if plan.label_column is not None else None

    X, ids = X[keep], ids[keep]
    truth = truth[keep] if truth is not None else None
    n_dropped = int(n_read - keep.sum())
    if len(X) < 2 * n_clusters:
        dropped = f" after dropping {n_dropped} rows with non-finite features" if n_dropped else ""
        raise LwecInputError(
            f"table {table!r} has only {len(X)} usable rows{dropped}, but n_clusters={n_clusters} needs at least "
            f"2·k = {2 * n_clusters} rows"
        )
    mean = scale = None
    if standardize:
        scaler = StandardScaler(copy=False)
        X = scaler.fit_transform(X)  # in place: X is ours, and may be large
        mean, scale = scaler.mean_.astype(np.float64), scaler.scale_.astype(np.float64)
    return PreparedFeatures(
        X=np.ascontiguousarray(X, dtype=np.float64),
        ids=ids,
        truth=truth,
        feature_columns=plan.feature_columns,
        n_rows_read=n_read,
        n_rows_dropped=n_dropped,
        mean=mean,
        scale=scale,
    )


def _numeric_column(series: pd.Series, name: str) -> np.ndarray:
    """Column as float64; missing values become NaN, text raises naming the column."""
    if pd.api.types.is_bool_dtype(series):
        raise LwecInputError(f"feature column {name!r} is boolean, not numeric")
    if pd.api.types.is_numeric_dtype(series):
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


def _useless_columns_message(table: str, names: Sequence[str], useless: Sequence[str]) -> str:
    """Columns without one finite value: dropping rows would drop every row, so the advice is to leave them out."""
    rest = [name for name in names if name not in useless]
    these = f"column {useless[0]!r} has" if len(useless) == 1 else f"columns {list(useless)} have"
    advice = f"leave {'it' if len(useless) == 1 else 'them'} out: feature_columns={rest}" if rest \
        else "choose other feature_columns"
    return f"feature {these} no finite value in any row of table {table!r} (all NULL, NaN or infinite); {advice}"


def _nonfinite_message(X: np.ndarray, names: Sequence[str], n_rows: int) -> str:
    return _nonfinite_counts_message(names, np.isnan(X).sum(axis=0), np.isinf(X).sum(axis=0), n_rows)


def _nonfinite_counts_message(names: Sequence[str], nan_counts, inf_counts, n_rows: int) -> str:
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


def _id_values(series: pd.Series, name: str) -> np.ndarray:
    if series.isna().any():
        raise LwecInputError(f"id column {name!r} has {int(series.isna().sum())} missing values")
    values = series.to_numpy()
    if values.dtype == object:
        values = _uniform_ids(values, name)
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
        try:
            return values.astype(np.int64)
        except OverflowError:
            return values
    return values
