"""Small labelled runs for the storage tests: one ``LabelRows`` with fixed run parameters."""

from __future__ import annotations

import numpy as np

from lwec_tasks.io import LabelRows


def rows_for(key, ids, labels, source="features"):
    """A run of key ``key`` labelling ``ids`` with ``labels`` (k = 3, LWEA, θ 0.4, M 10, seed 7) from ``source``."""
    return LabelRows(run_key=key, ids=np.asarray(ids), labels=np.asarray(labels), k=3, method="lwea", theta=0.4,
                     ensemble_size=10, seed=7, source_table=source)
