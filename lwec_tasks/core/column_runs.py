"""Column indices as a slice when they are one run of consecutive columns: numpy then takes a view, not a copy."""

from __future__ import annotations

import numpy as np


def as_slice(columns: np.ndarray) -> slice | np.ndarray:
    """``slice(first, last + 1)`` when the (C,) int ``columns`` are first, first + 1, …, last (C ≥ 1); else the
    columns as they are (fancy indexing, a copy)."""
    if len(columns) and columns[-1] - columns[0] + 1 == len(columns) and (np.diff(columns) == 1).all():
        return slice(int(columns[0]), int(columns[-1]) + 1)
    return columns
