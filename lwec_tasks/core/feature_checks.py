"""Checks of numeric feature matrices, shared by fitting base clusterings and placing new rows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lwec_tasks.core.errors import LwecInputError


def as_float_features(X: np.ndarray) -> np.ndarray:
    """``X`` (any shape) as float64, without a copy when it already is; its dtype must be integer or float."""
    if X.dtype.kind not in "iuf":
        raise LwecInputError(f"features must be numeric, got dtype {X.dtype}")
    return X.astype(np.float64, copy=False)


def check_finite_features(X: np.ndarray, column_names: Sequence[str], consequence: str = "") -> None:
    """Raise :class:`LwecInputError` if the (N, d) float ``X`` holds a NaN or ±inf.

    The message names the first such column (``column_names[j]``, d names), its
    number of bad values, the first bad row and the total over all columns;
    ``consequence`` (default none) is appended to it, e.g. "; such rows cannot
    be labelled".
    """
    bad = ~np.isfinite(X)
    if bad.any():
        column = int(np.argmax(bad.any(axis=0)))
        raise LwecInputError(
            f"feature column {column_names[column]!r} has {int(bad[:, column].sum())} NaN/inf value(s), "
            f"the first at row {int(np.argmax(bad[:, column]))} ({int(bad.sum())} in all){consequence}"
        )
