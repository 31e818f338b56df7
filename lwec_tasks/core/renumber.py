"""Stable cluster ids across runs: renumber a new clustering to agree with an earlier one.

Cluster ids of a consensus clustering are arbitrary: rerunning on slightly
different data can return the "same" clusters under permuted ids. Before the
labels are stored, the new run's clusters are renamed so that as many objects
as possible keep the label they had in the earlier run.

The overlap counts of (new cluster, earlier cluster) pairs over the objects
both runs labelled form a contingency table (summed over partitions, so no
process holds all ids), and a maximum-weight matching on it
(:func:`scipy.optimize.linear_sum_assignment`) picks the renaming
(:func:`match_clusters`). Only the partition's names change, never its structure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.errors import LwecInputError


@dataclass(frozen=True)
class ClusterMatching:
    """Stable ids for a new run's clusters, from their overlap with an earlier run's clusters.

    Attributes
    ----------
    ids : (n_new,) int64 stable id of each new cluster (each row of the overlap table)
    agreement : fraction of shared objects that keep their earlier id (nan when no object is shared)
    n_shared : objects in both runs (the overlap table's total)
    n_matched : new clusters given an earlier cluster's id
    """

    ids: np.ndarray
    agreement: float
    n_shared: int
    n_matched: int


def match_clusters(overlap, new_ids, previous_ids) -> ClusterMatching:
    """Stable ids for the new clusters that keep the most shared objects' earlier ids, from the overlap table.

    Parameters
    ----------
    overlap : (n_new, n_previous) non-negative integer counts of the objects in both runs, by (new cluster,
        earlier cluster); summed over any split of the objects (e.g. partitions), it is the same table
    new_ids : (n_new,) distinct ids of the new clusters (the rows), ascending
    previous_ids : (n_previous,) every distinct id the earlier run uses (the columns), ascending — ids of
        earlier clusters sharing no object with the new run included, since fresh ids must avoid them

    Returns
    -------
    ClusterMatching
        A maximum-weight matching of rows to columns (pairs with no overlap are not matches) gives a
        matched row its column's id; unmatched rows get the smallest non-negative integers not in
        ``previous_ids``, in row order. With no shared objects (an all-zero table), every cluster keeps
        its own id, ``agreement`` nan and ``n_matched`` 0.
    """
    overlap = np.asarray(overlap, dtype=np.int64)
    new_ids = np.asarray(new_ids, dtype=np.int64)
    previous_ids = np.asarray(previous_ids, dtype=np.int64)
    if overlap.shape != (len(new_ids), len(previous_ids)):
        raise LwecInputError(f"overlap has shape {overlap.shape}; expected ({len(new_ids)}, {len(previous_ids)}): "
                             "one row per new cluster, one column per earlier cluster")
    n_shared = int(overlap.sum())
    if n_shared == 0:
        return ClusterMatching(ids=new_ids.copy(), agreement=float("nan"), n_shared=0, n_matched=0)
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(overlap, maximize=True)
    keep = overlap[rows, cols] > 0
    stable = np.full(len(new_ids), -1, dtype=np.int64)
    stable[rows[keep]] = previous_ids[cols[keep]]
    unmatched = np.flatnonzero(~np.isin(np.arange(len(new_ids)), rows[keep]))
    stable[unmatched] = fresh_ids(previous_ids, len(unmatched))
    agreeing = int(overlap[rows[keep], cols[keep]].sum())
    return ClusterMatching(ids=stable, agreement=agreeing / n_shared, n_shared=n_shared,
                           n_matched=int(keep.sum()))


def fresh_ids(used: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` smallest non-negative integers not in ``used``, ascending; (count,) int64."""
    candidates = np.arange(count + len(used), dtype=np.int64)
    return candidates[~np.isin(candidates, used)][:count]


def ids_per_cluster(mapping: dict[int, int], k: int) -> np.ndarray:
    """(k,) the id of each consensus cluster 0..k−1 under ``mapping`` (new id → stable id).

    A cluster without objects (absent from ``mapping``) gets an id no other cluster has.
    """
    ids = np.array([mapping.get(c, -1) for c in range(k)], dtype=np.int64)
    missing = np.flatnonzero(ids < 0)
    if len(missing):
        start = int(ids.max()) + 1 if len(missing) < k else 0
        ids[missing] = np.arange(start, start + len(missing))
    return ids
