"""The k curve of a run whose k was given: the automatic choice's criterion over k on a small seeded sample.

A run with ``n_clusters="auto"`` logs the criterion over k that chose its k (on
:func:`~lwec_tasks.core.k_criterion.selection_sample`'s rows, at most 20,000). A run with a given k logs the same
criterion so the reader sees where the given k stands, on fewer rows to bound its cost: a seeded sample of
:data:`K_CURVE_SAMPLE` rows drawn from the selection sample (all rows up to that many). The criterion's cost
hardly grows with the rows beyond a few thousand (one cut of each method per candidate k dominates): about
1.2 CPU-s on 5,000 rows against 2-2.5 CPU-s on 20,000 (M = 10, k = 2..50, blob ensembles). The features'
geodesic silhouette is taken on :data:`K_CURVE_SILHOUETTE_SAMPLE` of those rows (the choice takes 1,500): its
all-pairs shortest paths grow as the square of the rows (0.31 s on 1,500, 0.04 s on 500), and a run given k
should not pay for a figure what the choice pays for k.
"""

from __future__ import annotations

import numpy as np

from lwec_tasks.core.k_criterion import selection_sample

#: Rows the criterion of a run with a given k is computed on (a seeded sample of the selection sample).
K_CURVE_SAMPLE = 5_000
#: Rows of those the features' geodesic silhouette is taken on.
K_CURVE_SILHOUETTE_SAMPLE = 500


def curve_sample(n_objects: int, random_state: int | None = None, size: int = K_CURVE_SAMPLE) -> np.ndarray | None:
    """Sorted positions (size,) int64 of the rows the k curve is computed on, or None (all rows) up to ``size``.

    ``size`` of :func:`~lwec_tasks.core.k_criterion.selection_sample`'s positions (or of all rows, when it takes
    all), drawn with ``random_state`` (an int; None means 0): the same seed gives the same rows.
    """
    if n_objects <= size:
        return None
    base = selection_sample(n_objects, random_state)
    base = np.arange(n_objects, dtype=np.int64) if base is None else base
    rng = np.random.default_rng([int(random_state or 0), len(base), size])
    return base[np.sort(rng.choice(len(base), size, replace=False))]
