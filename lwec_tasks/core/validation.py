"""Validation of the scalar parameters shared by every consensus function, and of the text parameters the
requests and table names share.

numpy is imported by the checks that need it, so that light modules (:mod:`lwec_tasks.io.names`, used before
anything runs) can use the others."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lwec_tasks.core.errors import LwecInputError

if TYPE_CHECKING:
    import numpy as np


def check_non_empty_text(name: str, value) -> str:
    """Return ``value``; it must be a string with more than white space in it."""
    if not isinstance(value, str) or not value.strip():
        raise LwecInputError(f"{name} must be a non-empty string, got {value!r}")
    return value


def check_integer(name: str, value, minimum: int) -> int:
    """Return ``value`` as an int; it must be an integer (not a bool) and ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise LwecInputError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise LwecInputError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_theta(theta) -> float:
    """Return ``theta`` as a float; it must be finite and > 0 (paper Def. 5)."""
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real):
        raise LwecInputError(f"theta must be a positive number, got {theta!r}")
    theta = float(theta)
    if not math.isfinite(theta) or theta <= 0:
        raise LwecInputError(f"theta must be finite and > 0, got {theta!r}")
    return theta


def check_n_clusters(
    n_clusters, *, upper: int, upper_name: str, auto: bool = False
) -> tuple[np.ndarray, bool]:
    """Normalise ``n_clusters`` to an int array of ks and whether a scalar was given.

    Each k must satisfy ``2 <= k <= upper``; ``upper_name`` says what bounds it
    (e.g. "the number of microclusters") for the error message. ``auto`` only
    changes the message for a bad value: the caller also accepts "auto" (and
    handles it before calling this).
    """
    import numpy as np

    scalar = isinstance(n_clusters, numbers.Integral) and not isinstance(n_clusters, bool)
    if scalar:
        ks = [n_clusters]
    elif isinstance(n_clusters, (Sequence, np.ndarray)) and not isinstance(n_clusters, str):
        ks = list(n_clusters)
        if not ks:
            raise LwecInputError("n_clusters is an empty sequence; give at least one k")
    else:
        choices = 'an int or a sequence of ints, or "auto"' if auto else "an int or a sequence of ints"
        raise LwecInputError(f"n_clusters must be {choices}, got {n_clusters!r}")
    check_k_range(
        ks,
        upper,
        not_integer="n_clusters must contain integers, got {k!r}",
        below_two="n_clusters must be >= 2, got {k}",
        above_upper="n_clusters={k} is larger than {upper_name} ({upper})",
        upper_name=upper_name,
    )
    return np.asarray(ks, dtype=np.int64), scalar


def check_k_range(ks, upper: int, *, not_integer: str, below_two: str, above_upper: str, **fields) -> None:
    """Raise :class:`LwecInputError` at the first k of ``ks`` that is not an integer in ``2..upper``.

    ``ks`` is any iterable; bools (Python or numpy) are not integers here. The
    three messages are :meth:`str.format` templates, so each caller keeps its
    own wording: fields ``k`` (the offending value, as an int for ``below_two``
    and ``above_upper``), ``upper`` and any keyword given in ``fields``.
    """
    import numpy as np

    for k in ks:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
            raise LwecInputError(not_integer.format(k=k, upper=upper, **fields))
        if k < 2:
            raise LwecInputError(below_two.format(k=int(k), upper=upper, **fields))
        if k > upper:
            raise LwecInputError(above_upper.format(k=int(k), upper=upper, **fields))
