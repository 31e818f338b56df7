"""Run-to-run stability: each cluster's Jaccard overlap with its matched cluster of the earlier run.

Counted over the objects both runs labelled (the overlap table that stable ids are chosen from,
:mod:`lwec_tasks.core.renumber`): for a new cluster A that kept the id of earlier cluster B,

    J(A, B) = |A ∩ B| / (|A| + |B| − |A ∩ B|),   A and B restricted to the shared objects.

1 means the cluster holds exactly the same shared objects as before; a cluster with a fresh id (no earlier
cluster matched) has no value. Numpy only.
"""

from __future__ import annotations

import numpy as np


def matched_jaccard(overlap: np.ndarray, ids: np.ndarray, previous_ids: np.ndarray) -> dict[int, float]:
    """Stable id → Jaccard overlap with the earlier cluster of the same id, for the new clusters that kept one.

    ``overlap`` (n_new, n_previous) counts objects by (new cluster, earlier cluster); ``ids`` (n_new,) the id each
    new cluster (row) is written with; ``previous_ids`` (n_previous,) the earlier ids of the columns, ascending.
    """
    overlap = np.asarray(overlap, dtype=np.int64)
    previous_ids = np.asarray(previous_ids, dtype=np.int64)
    row_totals, column_totals = overlap.sum(axis=1), overlap.sum(axis=0)
    out: dict[int, float] = {}
    for row, cluster_id in enumerate(np.asarray(ids, dtype=np.int64)):
        column = int(np.searchsorted(previous_ids, cluster_id))
        if column >= len(previous_ids) or previous_ids[column] != cluster_id:
            continue
        both = int(overlap[row, column])
        union = int(row_totals[row] + column_totals[column] - both)
        out[int(cluster_id)] = both / union if union else 0.0
    return out
