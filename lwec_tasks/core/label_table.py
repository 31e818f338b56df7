"""The cluster × label table of a run given a label column: rows per (cluster id, label value), each cluster's
majority label and the share of its rows that carry it. Numpy and pandas only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lwec_tasks.core.errors import LwecInputError

#: A cluster whose majority label holds less than this share of its rows is listed in the run summary.
MAJORITY_BELOW = 0.7


def ordered_values(values) -> list:
    """The distinct label ``values`` sorted: numbers by value, anything else (or a mix) by its text."""
    values = list(dict.fromkeys(values))
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def cluster_label_table(counts: pd.Series, label_column: str) -> pd.DataFrame:
    """One row per cluster id holding labelled rows, in id order: ``cluster``, ``size`` (its rows with a label
    value; NULLs are not counted), ``majority_label`` (the most frequent value; a tie goes to the first in
    :func:`ordered_values` order), ``majority_share`` (that value's share of ``size``), then one column
    ``<label_column>=<value>`` of row counts per label value, in :func:`ordered_values` order.

    ``counts`` is a Series of row counts indexed by (label value, cluster id) pairs, as
    :func:`lwec_tasks.stages.partitions.truth_counts` sums them; an empty Series gives an empty table with the
    four leading columns."""
    head = ["cluster", "size", "majority_label", "majority_share"]
    if not isinstance(counts, pd.Series) or (len(counts) and counts.index.nlevels != 2):
        raise LwecInputError("label counts must be a Series indexed by (label value, cluster id) pairs, "
                             f"not {type(counts).__name__}")
    if not len(counts):
        return pd.DataFrame({name: [] for name in head})
    values = ordered_values(counts.index.get_level_values(0))
    clusters = np.sort(np.unique(np.asarray(counts.index.get_level_values(1), dtype=np.int64)))
    matrix = np.zeros((len(clusters), len(values)), dtype=np.int64)
    value_at = {value: j for j, value in enumerate(values)}
    rows = np.searchsorted(clusters, np.asarray(counts.index.get_level_values(1), dtype=np.int64))
    for row, value, count in zip(rows, counts.index.get_level_values(0), counts.to_numpy()):
        matrix[row, value_at[value]] += int(count)
    sizes = matrix.sum(axis=1)
    majority = matrix.argmax(axis=1)
    frame = pd.DataFrame({"cluster": clusters, "size": sizes,
                          "majority_label": [values[j] for j in majority],
                          "majority_share": matrix[np.arange(len(clusters)), majority] / np.maximum(sizes, 1)})
    columns = pd.DataFrame(matrix, columns=[f"{label_column}={value}" for value in values], index=frame.index)
    return pd.concat([frame, columns], axis=1)


def label_counts(table: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """((clusters, values) int64 counts, the values' column names) of a :func:`cluster_label_table`."""
    names = [str(name) for name in table.columns[4:]]
    return table[names].to_numpy(dtype=np.int64), names
