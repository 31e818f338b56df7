"""The tests' reference renumbering of a whole clustering by object ids: :func:`align_to_previous`.

The pipeline renumbers from overlap tables summed over partitions
(:func:`lwec_tasks.core.renumber.match_clusters`); this is the in-memory form the
tests compare it with, matching objects by id (sort + ``searchsorted``, O(N log N)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.renumber import match_clusters


@dataclass(frozen=True)
class Renumbering:
    """A new run's labels renamed to agree with an earlier run.

    Attributes
    ----------
    mapping : new run's cluster id -> stable id, for every cluster id of the new run (Python ints)
    labels : (N,) int64 renumbered labels of the new run, in the order of its ``ids``
    agreement : fraction of shared objects whose renumbered label equals their earlier label
        (nan when no object is shared)
    n_shared : objects present in both runs
    n_matched : new clusters given an earlier cluster's id (matched with overlap > 0)
    """

    mapping: dict[int, int]
    labels: np.ndarray
    agreement: float
    n_shared: int
    n_matched: int


def align_to_previous(labels, ids, previous_ids, previous_labels) -> Renumbering:
    """Rename the new run's clusters to maximise agreement with the earlier run.

    Parameters
    ----------
    labels : (N,) integer cluster ids of the new run
    ids : (N,) distinct object ids of the new run (integers, floats or strings)
    previous_ids : (M,) distinct object ids of the earlier run (same kind as ``ids``)
    previous_labels : (M,) integer cluster ids of the earlier run

    Returns
    -------
    Renumbering
        The renaming maximises the number of shared objects (ids in both runs)
        whose new label equals their earlier label: a maximum-weight matching
        of new to earlier clusters on their overlap counts; pairs with no
        overlap are not matches. Each unmatched new cluster gets a fresh id:
        the smallest non-negative integers not used by the earlier run (by any
        of its objects, shared or not), handed out in increasing order of the
        new cluster id. The renaming is injective, so the partition is
        unchanged, and deterministic (independent of the row order).

        With no shared objects (including an empty earlier run) nothing can be
        compared: every cluster keeps its own id (identity mapping), with
        ``agreement`` nan and ``n_matched`` 0.

    Raises
    ------
    LwecInputError
        Shapes differ, labels are not integers, ids repeat within a run, or
        the two runs' ids are of different kinds (numbers vs strings).
    """
    labels = _integer_labels(labels, "labels")
    previous_labels = _integer_labels(previous_labels, "previous_labels")
    keys = _id_keys(ids, "ids", len(labels), "labels")
    previous_keys = _id_keys(previous_ids, "previous_ids", len(previous_labels), "previous_labels")
    _check_comparable(keys, previous_keys)

    new_ids, new_codes = np.unique(labels, return_inverse=True)
    new_rows, previous_rows = shared_positions(keys, previous_keys)
    previous_ids_used, previous_codes = np.unique(previous_labels, return_inverse=True)
    overlap = _contingency(new_codes[new_rows], previous_codes[previous_rows], len(new_ids),
                           len(previous_ids_used))
    matching = match_clusters(overlap, new_ids, previous_ids_used)
    return Renumbering(
        mapping={int(c): int(s) for c, s in zip(new_ids, matching.ids)},
        labels=matching.ids[new_codes],
        agreement=matching.agreement,
        n_shared=matching.n_shared,
        n_matched=matching.n_matched,
    )


def shared_positions(keys: np.ndarray, previous_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(i, j)`` with ``keys[i] == previous_keys[j]``, ascending in ``i``; both (S,) int64.

    Both arrays must hold distinct, mutually comparable values. O((N + M) log M).
    """
    if not len(keys) or not len(previous_keys):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    order = np.argsort(previous_keys, kind="stable")
    ordered = previous_keys[order]
    where = np.searchsorted(ordered, keys)
    where[where == len(ordered)] = 0
    found = ordered[where] == keys
    return np.flatnonzero(found).astype(np.int64), order[where[found]].astype(np.int64)



def _contingency(new_codes: np.ndarray, previous_codes: np.ndarray, n_new: int, n_previous: int) -> np.ndarray:
    """(n_new, n_previous) int64 overlap counts of the code pairs.

    Dense: n_new × n_previous × 8 bytes, which is small for consensus clusterings
    (k up to a few thousand).
    """
    flat = new_codes.astype(np.int64) * n_previous + previous_codes
    return np.bincount(flat, minlength=n_new * n_previous).reshape(n_new, n_previous)


def _integer_labels(values, name: str) -> np.ndarray:
    """``values`` as a (N,) int64 vector, or :class:`LwecInputError` naming ``name``."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise LwecInputError(f"{name} must be a vector, got shape {array.shape}")
    if array.dtype.kind in "iub":
        return array.astype(np.int64)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        return array.astype(np.int64)
    if array.dtype == object and all(isinstance(v, (int, np.integer)) for v in array.tolist()):
        return array.astype(np.int64)
    if not len(array):
        return array.astype(np.int64)
    raise LwecInputError(f"{name} must hold integer cluster ids, got dtype {array.dtype} (e.g. {array[:3].tolist()!r})")


def _id_keys(values, name: str, expected: int, labels_name: str) -> np.ndarray:
    """Object ids as a sortable array: numbers as they are, strings as a numpy unicode array.

    Raises :class:`LwecInputError` when the length differs from ``labels_name``'s,
    the ids mix kinds, or an id repeats.
    """
    array = np.asarray(values)
    if array.ndim != 1 or len(array) != expected:
        raise LwecInputError(f"{name} has shape {array.shape}; {labels_name} has ({expected},): one id per label")
    if array.dtype == object:
        kinds = {type(v) for v in array.tolist()}
        if kinds and all(issubclass(kind, str) for kind in kinds):
            array = array.astype(str)
        elif kinds and all(issubclass(kind, bytes) for kind in kinds):
            array = array.astype(bytes)
        elif kinds and all(issubclass(kind, (int, np.integer)) and not issubclass(kind, bool) for kind in kinds):
            array = np.asarray(array.tolist())
        elif kinds and all(issubclass(kind, (int, float, np.number)) for kind in kinds):
            array = array.astype(np.float64)
        elif kinds:
            raise LwecInputError(f"{name} mixes id kinds {sorted(kind.__name__ for kind in kinds)}; "
                                 "ids must all be numbers or all be strings")
        else:
            array = array.astype(np.int64)
    if array.dtype.kind not in "iufUS":
        raise LwecInputError(f"{name} of dtype {array.dtype} cannot be matched; use integer or string ids")
    ordered = np.sort(array)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if len(repeated):
        raise LwecInputError(f"{name} must be distinct; {repeated[:3].tolist()!r} occur more than once")
    return array


def _check_comparable(keys: np.ndarray, previous_keys: np.ndarray) -> None:
    """Raise :class:`LwecInputError` unless both id arrays are numbers or both strings (or bytes)."""
    def kind(array: np.ndarray) -> str:
        return "number" if array.dtype.kind in "iuf" else array.dtype.kind

    if len(keys) and len(previous_keys) and kind(keys) != kind(previous_keys):
        raise LwecInputError(
            f"ids ({keys.dtype}) and previous_ids ({previous_keys.dtype}) are of different kinds; "
            "both runs must identify objects the same way (numbers or strings)"
        )
