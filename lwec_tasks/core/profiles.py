"""Cluster profiles: what each cluster is, from per-cluster sums (no pass over the rows of its own).

For every cluster id that holds rows: ``size``, ``share`` of all rows, ``mean_confidence`` (the mean row
confidence, :mod:`lwec_tasks.core.confidence`), ``cohesion`` and ``cohesion_relative`` when given
(:mod:`lwec_tasks.core.cohesion`), and for each feature f its mean in the cluster (``f_mean``) and that mean as a
z-score against the whole table (``f_z`` = (cluster mean − table mean) / table standard deviation, population; 0
for a constant column, one whose standard deviation is below :data:`CONSTANT_RELATIVE_STD` × (|mean| + 1):
rounding alone). The most distinctive features of a cluster are those of largest |z|. Numpy and pandas only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lwec_tasks.core.cohesion import relative_cohesion
from lwec_tasks.core.confidence import ClusterSums

#: A column whose standard deviation is below this × (|mean| + 1) counts as constant (its z-scores are 0).
CONSTANT_RELATIVE_STD = 1e-9


def cluster_profiles(sums: ClusterSums, confidence_sums: np.ndarray, feature_columns, table_mean: np.ndarray,
                     table_std: np.ndarray, shares=None, cohesion=None) -> pd.DataFrame:
    """One row per non-empty cluster id, in id order: ``cluster``, ``size``, ``share``, ``mean_confidence``,
    ``cohesion`` and ``cohesion_relative`` (over the run's size-weighted mean; only when ``cohesion`` (k,) is
    given), then ``<feature>_mean`` and ``<feature>_z`` per feature (see the module's docstring). ``sums`` are
    the raw features' per-id sums, ``confidence_sums`` (k,) the per-id sums of the confidences, ``table_mean`` and
    ``table_std`` (d,) the whole table's column means and population standard deviations. ``shares`` (d,) bool
    marks the one-hot columns of text and boolean levels (``colour=red``): their cluster mean is the share of the
    cluster's rows at that level, ``<column>=<level>_share``."""
    present = np.flatnonzero(sums.counts > 0)
    counts = sums.counts[present].astype(np.float64)
    frame = pd.DataFrame({"cluster": present.astype(np.int64), "size": sums.counts[present].astype(np.int64),
                          "share": counts / max(counts.sum(), 1.0),
                          "mean_confidence": np.asarray(confidence_sums, dtype=np.float64)[present] / counts})
    if cohesion is not None:
        frame["cohesion"] = np.asarray(cohesion, dtype=np.float64)[present]
        frame["cohesion_relative"] = relative_cohesion(frame["cohesion"].to_numpy(), counts)
    means = sums.means[present]
    std = np.asarray(table_std, dtype=np.float64)
    table_mean = np.asarray(table_mean, dtype=np.float64)
    varying = std > CONSTANT_RELATIVE_STD * (np.abs(table_mean) + 1.0)
    z = np.where(varying, (means - table_mean) / np.where(varying, std, 1.0), 0.0)
    columns = {}
    shares = np.zeros(len(feature_columns), dtype=bool) if shares is None else np.asarray(shares, dtype=bool)
    for j, name in enumerate(feature_columns):
        columns[f"{name}_share" if shares[j] else f"{name}_mean"] = means[:, j]
        columns[f"{name}_z"] = z[:, j]
    return pd.concat([frame, pd.DataFrame(columns, index=frame.index)], axis=1)


def z_scores(profiles: pd.DataFrame, feature_columns) -> np.ndarray:
    """(clusters, d) the profiles' z-scores, in feature order."""
    return profiles[[f"{name}_z" for name in feature_columns]].to_numpy(dtype=np.float64) \
        if len(feature_columns) else np.zeros((len(profiles), 0))


def distinctive_features(profiles: pd.DataFrame, feature_columns, top: int = 3) -> list[list[tuple[str, float]]]:
    """For each profile row, its ``top`` features of largest |z| as (name, z), largest first."""
    z = z_scores(profiles, feature_columns)
    out = []
    for row in z:
        order = np.argsort(-np.abs(row), kind="stable")[:top]
        out.append([(str(feature_columns[j]), float(row[j])) for j in order])
    return out


def features_setting_clusters_apart(z: np.ndarray, top: int = 12) -> np.ndarray:
    """(≤ top,) indices of the features that set the clusters apart most, from z (clusters, d): in rounds, each
    cluster's feature of largest |z| not yet taken, the rounds' picks in descending |z| (ties: lower cluster,
    then lower feature first), until ``top`` are taken or every feature is. Every cluster's most distinctive
    feature is shown before any cluster's second, as far as ``top`` allows."""
    z = np.abs(np.asarray(z, dtype=np.float64))
    n_clusters, d = z.shape
    top = min(int(top), d)
    taken: list[int] = []
    chosen = np.zeros(d, dtype=bool)
    while len(taken) < top:
        picks = []
        for c in range(n_clusters):
            free = np.where(chosen, -np.inf, z[c])
            j = int(np.argmax(free))  # the lowest feature among equals
            picks.append((-free[j], c, j))
        picks.sort()
        added = False
        for _, _, j in picks:
            if not chosen[j] and len(taken) < top:
                chosen[j] = True
                taken.append(j)
                added = True
        if not added:  # no clusters: take features in order
            rest = np.flatnonzero(~chosen)[:top - len(taken)]
            chosen[rest] = True
            taken.extend(int(j) for j in rest)
    return np.asarray(taken, dtype=np.int64)
