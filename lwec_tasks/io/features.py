"""Choosing, checking and standardising the feature columns of a source table.

Pure pandas/numpy: no database, Prefect or MLflow here. The database layer
describes the table (:class:`ColumnPlan` is built from its column lists) and
hands over the rows; this module turns them into the (N, d) matrix the
clustering sees, or raises :class:`~lwec_tasks.core.errors.LwecInputError` with a
message naming the offending column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.preprocessing import StandardScaler

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import Standardisation
from lwec_tasks.io.identifiers import name_list

#: Column names taken as the object id when no id column is given and the
#: table has no single-column primary key.
CONVENTIONAL_ID_NAMES = ("id",)

#: Column names (lower case, ignoring ``_``/``-``/spaces) that usually hold a
#: ground truth or target rather than a feature.
LABEL_LIKE_NAMES = frozenset({
    "label", "labels", "target", "targets", "class", "classes", "y", "truth", "groundtruth", "gt",
    "category", "cluster", "clusters", "outcome", "response",
})


@dataclass(frozen=True)
class ColumnPlan:
    """Which columns of the source table play which role.

    ``id_column`` is None when rows are identified by their position in the
    read order (0..N−1).
    """

    feature_columns: tuple[str, ...]
    id_column: str | None
    label_column: str | None

    @property
    def label_like_features(self) -> list[str]:
        """Feature columns named like a ground truth or target (e.g. ``label``, ``target``, ``class``)."""
        return [name for name in self.feature_columns if looks_like_label(name)]

    @property
    def columns_to_read(self) -> list[str]:
        extra = [c for c in (self.id_column, self.label_column) if c is not None]
        return [*extra, *self.feature_columns]


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


def looks_like_label(name: str) -> bool:
    """Whether a column name reads like a ground truth / target column (``Target``, ``class_label``, ``y``)."""
    normalised = re.sub(r"[\s_\-]+", "", str(name)).lower()
    words = [w for w in re.split(r"[\s_\-]+", str(name).lower()) if w]
    return normalised in LABEL_LIKE_NAMES or (len(words) > 1 and words[-1] in {"label", "labels", "target", "class"})


def plan_columns(
    columns: Sequence[str],
    numeric_columns: Sequence[str],
    primary_key: Sequence[str],
    *,
    feature_columns: Sequence[str] | None = None,
    id_column: str | None = None,
    label_column: str | None = None,
    table: str = "the table",
) -> ColumnPlan:
    """Resolve the column roles of a table.

    Parameters
    ----------
    columns : all column names of the table
    numeric_columns : those whose declared type is numeric
    primary_key : primary-key column names
    feature_columns : explicit features; default all numeric columns except id and label
    id_column : default the single-column primary key, else a column named ``id``, else none
    label_column : ground truth column (optional)
    """
    columns = list(columns)

    def require(names, parameter):
        missing = [name for name in names if name not in columns]
        if missing:
            raise LwecInputError(
                f"{parameter}: column(s) {missing} not found in table {table!r}; its columns are {name_list(columns)}"
            )

    if id_column is not None:
        require([id_column], "id_column")
    elif len(primary_key) == 1:
        id_column = primary_key[0]
    else:
        id_column = next((name for name in CONVENTIONAL_ID_NAMES if name in columns), None)
    if label_column is not None:
        require([label_column], "label_column")
        if label_column == id_column:
            raise LwecInputError(f"label_column and id_column are both {label_column!r}")
    roles = {id_column, label_column} - {None}

    if feature_columns is None:
        chosen = [name for name in numeric_columns if name not in roles]
        if not chosen:
            raise LwecInputError(
                f"table {table!r} has no numeric columns besides id/label to use as features; "
                f"its columns are {name_list(columns)} (numeric: {name_list(numeric_columns)})"
            )
    else:
        chosen = list(feature_columns)
        if not chosen:
            raise LwecInputError("feature_columns is empty; name at least one column or leave it unset")
        require(chosen, "feature_columns")
        duplicated = sorted({name for name in chosen if chosen.count(name) > 1})
        if duplicated:
            raise LwecInputError(f"feature_columns lists {duplicated} more than once")
        clashing = [name for name in chosen if name in roles]
        if clashing:
            raise LwecInputError(f"feature_columns {clashing} are also the id or label column")
        # Explicit columns are checked value by value in prepare_features: SQLite
        # columns may be untyped, and text holding numbers is accepted.
    return ColumnPlan(tuple(chosen), id_column, label_column)


def prepare_features(
    frame: pd.DataFrame,
    plan: ColumnPlan,
    *,
    n_clusters: int,
    standardize: bool = True,
    drop_nonfinite: bool = False,
) -> PreparedFeatures:
    """Check the rows read from the table and build the feature matrix.

    Raises :class:`LwecInputError` for non-numeric feature values, NaN/inf in the
    features (unless ``drop_nonfinite``), missing or duplicate ids, and fewer than
    ``2 * n_clusters`` usable rows.
    """
    n_read = len(frame)
    X = np.empty((n_read, len(plan.feature_columns)))
    for j, name in enumerate(plan.feature_columns):
        X[:, j] = _numeric_column(frame[name], name)

    nonfinite_rows = ~np.isfinite(X).all(axis=1)
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
            f"{len(X)} usable rows{dropped}, but n_clusters={n_clusters} needs at least "
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


def _nonfinite_message(X: np.ndarray, names: Sequence[str], n_rows: int) -> str:
    parts = []
    for j, name in enumerate(names):
        n_nan = int(np.isnan(X[:, j]).sum())
        n_inf = int(np.isinf(X[:, j]).sum())
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
