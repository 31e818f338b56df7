"""What the evidence stage runs on each partition: plain functions of numpy arrays, as the workers run them.

Each partition holds its rows' features (``PartitionRows``, or None once released), base cluster codes (M, n)
and labels (n,) (the written ids). The flow sums the small results (:func:`evidence_sums`), then asks each
partition for its rows' confidences (:func:`partition_confidence`).
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.confidence import ClusterSums, row_confidence


def evidence_sums(rows, codes_t: np.ndarray, labels: np.ndarray, k: int, offsets: np.ndarray) -> list:
    """[:class:`ClusterSums` of the partition's raw features by label (no columns without features), the
    (n_c, k) int64 counts of rows by (base cluster, label)]; ``labels`` in 0..k−1, ``offsets`` (M + 1,) the
    base clusterings' first global cluster code. Both sum over partitions."""
    labels = np.asarray(labels, dtype=np.int64)
    X = rows.X if rows is not None else np.zeros((len(labels), 0))
    sums = ClusterSums.of(X, labels, k)
    n_clusters_total = int(offsets[-1])
    overlap = np.zeros(n_clusters_total * k, dtype=np.int64)
    for m in range(codes_t.shape[0]):
        overlap += np.bincount((codes_t[m].astype(np.int64) + offsets[m]) * k + labels, minlength=overlap.size)
    return [sums, overlap.reshape(n_clusters_total, k)]


def partition_confidence(rows, codes_t: np.ndarray, labels: np.ndarray, offsets: np.ndarray, mean: np.ndarray,
                         scale: np.ndarray, centres: np.ndarray | None, present: np.ndarray,
                         shares: np.ndarray) -> np.ndarray:
    """(n,) float32 confidence of each row (:func:`lwec_tasks.core.confidence.row_confidence`): features
    standardised by ``mean``/``scale`` as they were clustered, ``centres`` (k, d) in that space (None: no
    features), ``present`` (k,) the ids some row has, ``shares`` (n_c, k) of the base clusters."""
    codes = codes_t.astype(np.int64) + np.asarray(offsets[:-1], dtype=np.int64)[:, None]
    Z = None
    if rows is not None and centres is not None and rows.X.shape[1] > 0:
        Z = rows.X - mean
        Z /= scale
    return row_confidence(Z, codes, labels, centres, shares, present)


def confidence_sums(labels: np.ndarray, confidence: np.ndarray, k: int) -> np.ndarray:
    """(k,) the sum of the rows' confidences per label."""
    return np.bincount(np.asarray(labels, dtype=np.int64), weights=confidence, minlength=k)
