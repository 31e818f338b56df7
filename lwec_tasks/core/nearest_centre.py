"""Each row's nearest centre by Euclidean distance, the same whichever block of rows it is placed in.

Places every row in the base clusterings of generators other than k-means (their prototypes) and in the
labelling model (:mod:`lwec_tasks.core.placement`), so a model gives the rows it was fitted on the codes they
were given.
"""

from __future__ import annotations

import numba
import numpy as np

#: Distances held at once when rows are placed by squared distances.
PREDICT_BUFFER = 262_144
#: Scores closer than this (relative to |x|² + |c|²) are compared again by exact distances.
NEAR_TIE = 1e-9
#: Above this many centres (in at most TREE_MAX_DIMENSIONS features) rows are placed through a k-d tree.
TREE_MIN_CENTRES = 1_000
TREE_MAX_DIMENSIONS = 16
#: Up to this many rows are placed by numpy alone (:func:`_nearest_few`, the kernel's rule step for step): a
#: served request or MLflow's check of a model's input example then does not load numba's compiled kernel, whose
#: first load in a process costs about 60 MiB.
FEW_ROWS = 64


def nearest(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(n,) int64 index of each row's nearest centre by Euclidean distance: a k-d tree for many centres in few
    dimensions (above :data:`TREE_MIN_CENTRES`, at most :data:`TREE_MAX_DIMENSIONS`), else block by block of
    rows (:func:`_nearest_in_block`; ties: the first centre). A row gets the same centre in any block of rows."""
    X = np.asarray(X, dtype=np.float64)
    if len(centres) > TREE_MIN_CENTRES and centres.shape[1] <= TREE_MAX_DIMENSIONS:
        from sklearn.neighbors import KDTree

        return KDTree(centres).query(X, k=1, return_distance=False)[:, 0].astype(np.int64)
    centres = np.ascontiguousarray(centres, dtype=np.float64)
    half_squared = 0.5 * (centres * centres).sum(axis=1)
    out = np.empty(len(X), dtype=np.int64)
    # one reused buffer of about PREDICT_BUFFER floats: fresh large temporaries cost more in page faults
    # than the arithmetic
    step = max(1, min(len(X), PREDICT_BUFFER // max(len(centres), 1)))
    buffer = np.empty((step, len(centres)))
    transposed = np.ascontiguousarray(centres.T)
    place = _nearest_few if len(X) <= FEW_ROWS else _nearest_in_block
    for start in range(0, len(X), step):
        block = X[start:start + step]
        products = buffer[:len(block)]
        np.matmul(block, transposed, out=products)
        place(block, centres, products, half_squared, NEAR_TIE, out[start:start + len(block)])
    return out


def _nearest_few(block, centres, products, half_squared, near_tie, nearest_out) -> None:
    """:func:`_nearest_in_block` in numpy, every sum in the kernel's order (so every comparison alike): for a few
    rows, where loading the kernel would cost more than the arithmetic."""
    scores = half_squared[None, :] - products
    best = np.argmin(scores, axis=1)  # the first of the lowest, as the kernel's strict comparison keeps
    low = scores[np.arange(len(block)), best]
    norm = np.zeros(len(block))
    for f in range(block.shape[1]):
        norm += block[:, f] * block[:, f]
    limit = low + near_tie * (0.5 * norm + half_squared.max())
    close = (scores <= limit[:, None]).sum(axis=1) > 1
    if close.any():
        rows = block[close]
        distance = np.zeros((len(rows), len(centres)))
        for f in range(block.shape[1]):
            difference = rows[:, f, None] - centres[None, :, f]
            distance += difference * difference
        best[close] = np.argmin(distance, axis=1)
    nearest_out[:] = best


@numba.njit(cache=True, nogil=True)
def _nearest_in_block(block, centres, products, half_squared, near_tie, nearest_out):
    """Each row's nearest centre into ``nearest_out`` (n,): the lowest score ½|c|² − x·c (it ranks centres as
    |x − c|² does), from the (n, P) ``products`` x·c; a row with another score within ``near_tie`` · (½|x|² +
    max ½|c|²) of its lowest takes the nearest centre by exact squared distances (ties: the first).

    A matrix product's last bits depend on how many rows it is given at once, so without the second rule a row
    almost as near to two centres (or exactly, as a duplicated point is) could go either way depending on the
    block it was placed in. Branch-free minimum: scores are in no order a branch predictor could learn.
    """
    n, n_centres = products.shape
    top = half_squared.max()
    for i in range(n):
        low = half_squared[0] - products[i, 0]
        best = 0
        for j in range(1, n_centres):
            score = half_squared[j] - products[i, j]
            best = j if score < low else best
            low = score if score < low else low
        norm = 0.0
        for f in range(block.shape[1]):
            norm += block[i, f] * block[i, f]
        limit = low + near_tie * (0.5 * norm + top)
        close = 0
        for j in range(n_centres):
            close += 1 if half_squared[j] - products[i, j] <= limit else 0
        if close > 1:
            best = 0
            closest = np.inf
            for j in range(n_centres):
                distance = 0.0
                for f in range(block.shape[1]):
                    difference = block[i, f] - centres[j, f]
                    distance += difference * difference
                if distance < closest:
                    closest = distance
                    best = j
        nearest_out[i] = best
