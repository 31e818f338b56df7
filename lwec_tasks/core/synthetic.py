"""Synthetic clustering ensembles of any size, for scale tests and benchmarks.

A latent partition of N objects into ``n_classes`` classes; base clustering m
has k_m clusters, each belonging to one class (cluster j to class j mod
n_classes). An object takes a uniformly random cluster of its own class, or —
with probability ``noise`` — a uniformly random cluster of the whole column.
With k_m in the hundreds almost every label row is distinct (Ñ ≈ N), the hard
case for methods that rely on microclusters.

Objects are generated in fixed chunks, each from its own seed, so memory stays
at the int32 output and the result depends only on the arguments.
"""

from __future__ import annotations

import numpy as np

_CHUNK = 1 << 20


def synthetic_ensemble(
    n_objects: int,
    n_columns: int = 10,
    n_classes: int = 10,
    k_min: int = 100,
    k_max: int = 1000,
    noise: float = 0.1,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw a synthetic ensemble.

    Parameters
    ----------
    n_objects : N
    n_columns : M, default 10
    n_classes : number of latent classes, default 10
    k_min, k_max : each column's number of clusters is drawn from
        [max(k_min, n_classes), k_max], default [100, 1000]
    noise : probability that an object's label ignores its class, default 0.1
    random_state : int seed

    Returns
    -------
    labels : (N, M) int32, labels 0..k_m−1 in column m
    truth : (N,) int32 latent class 0..n_classes−1
    """
    root = np.random.SeedSequence(random_state)
    column_seed, *chunk_seeds = root.spawn(1 + (n_objects + _CHUNK - 1) // _CHUNK)
    ks = np.random.default_rng(column_seed).integers(
        max(k_min, n_classes), k_max + 1, size=n_columns
    )
    labels = np.empty((n_objects, n_columns), dtype=np.int32)
    truth = np.empty(n_objects, dtype=np.int32)
    for index, seed in enumerate(chunk_seeds):
        rng = np.random.default_rng(seed)
        start = index * _CHUNK
        stop = min(n_objects, start + _CHUNK)
        size = stop - start
        classes = rng.integers(0, n_classes, size=size)
        truth[start:stop] = classes
        for m, k in enumerate(ks):
            # Clusters of class y are y, y + n_classes, ...: count them per class.
            per_class = (k - classes + n_classes - 1) // n_classes
            own = classes + n_classes * (rng.random(size) * per_class).astype(np.int64)
            anywhere = rng.integers(0, k, size=size)
            labels[start:stop, m] = np.where(rng.random(size) < noise, anywhere, own)
    return labels, truth
