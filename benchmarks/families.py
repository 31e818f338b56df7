"""Seeded synthetic tables of several shapes, at any row count, for choosing a run's defaults on large tables.

``table(shape, n_rows)`` returns ``(X, y)``: X (n_rows, d) float64 raw features (a run standardises them), y
(n_rows,) int64 the true cluster 0..k−1. Each shape's rows are drawn from its own fixed seed, so a table is
the same in every process; the rows come in a fixed order, and the row position is the table's id.

Shapes (:data:`SHAPES`; d features, k clusters):

- ``blobs`` — 16 features, 20 isotropic Gaussian blobs of equal size, ``cluster_std=6``: overlapping. The
  table of ``python -m benchmarks pipeline`` and of the acceptance runs (``make_blobs(random_state=1)``) row
  for row.
- ``elongated`` — 8 features, 10 clusters, each a Gaussian with its own random orientation and axis scales
  from 5 down to 0.5 (one long axis, the rest thin), centres uniform in [−15, 15]⁸: anisotropic, elongated.
- ``noise60`` — 60 features: 30 carry 15 blobs (``cluster_std=8``), 30 are pure Gaussian noise of the same
  overall spread.
- ``unequal`` — 10 features, 11 blobs (``cluster_std=2.5``) of very unequal sizes: 60 %, 15 %, 10 %, 6 %, 4 %,
  2 %, 1 % and four of 0.5 %.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Shares of the ``unequal`` shape's clusters (they sum to 1).
UNEQUAL_SHARES = (0.60, 0.15, 0.10, 0.06, 0.04, 0.02, 0.01, 0.005, 0.005, 0.005, 0.005)


def _blobs(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_blobs

    return make_blobs(n_samples=n_rows, n_features=16, centers=20, cluster_std=6.0, random_state=1)


def _elongated(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    d, k = 8, 10
    rng = np.random.default_rng(21)
    centres = rng.uniform(-15.0, 15.0, size=(k, d))
    axes = np.geomspace(5.0, 0.5, d)
    y = rng.integers(0, k, size=n_rows)
    X = rng.normal(size=(n_rows, d))
    for c in range(k):
        rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
        rows = y == c
        X[rows] = (X[rows] * axes) @ rotation.T + centres[c]
    return X, y


def _noise60(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=n_rows, n_features=30, centers=15, cluster_std=8.0, random_state=22)
    noise = np.random.default_rng(22).normal(scale=float(X.std()), size=(n_rows, 30))
    return np.hstack([X, noise]), y


def _unequal(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_blobs

    sizes = np.floor(np.array(UNEQUAL_SHARES) * n_rows).astype(int)
    sizes[0] += n_rows - sizes.sum()
    X, y = make_blobs(n_samples=sizes.tolist(), n_features=10, cluster_std=2.5, random_state=23)
    return X, y


#: Shape name → generator of (X, y) for a row count.
SHAPES: dict[str, Callable[[int], tuple[np.ndarray, np.ndarray]]] = {
    "blobs": _blobs, "elongated": _elongated, "noise60": _noise60, "unequal": _unequal}


def table(shape: str, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(X (n_rows, d) float64, y (n_rows,) int64) of ``shape`` (:data:`SHAPES`) at ``n_rows`` rows."""
    X, y = SHAPES[shape](int(n_rows))
    return np.ascontiguousarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)
