"""Seeded weighted k-means for spectral embeddings (compiled with numba).

Greedy k-means++ seeding (as in scikit-learn: 2 + ⌊ln k⌋ candidates per
centre, keep the one that lowers the potential most) followed by Lloyd
iterations, the best of ``n_init`` runs by weighted inertia. All random draws
come from a numpy ``Generator`` seeded by the caller, so the same seed gives the
same labels on any machine and thread count.

Large inputs (more than ``SAMPLE_THRESHOLD`` rows, e.g. 10⁷ objects without
duplicate rows) are seeded on a uniform sample of ``SAMPLE_SIZE`` rows — the
``n_init`` runs happen there — and the best centres are then refined by Lloyd
iterations on all rows (parallel over fixed chunks). At that size the sample
carries enough points per cluster for the centres to be stable, and a Lloyd
pass over all rows costs one read of the embedding.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# Rows above which k-means is seeded on a sample and then refined on all rows.
SAMPLE_THRESHOLD = 500_000
SAMPLE_SIZE = 200_000
# Lloyd stops when the squared centre shift is below TOLERANCE × mean feature
# variance (scikit-learn's criterion) or no label changes.
TOLERANCE = 1e-4
_CHUNK = 1 << 15


@numba.njit(cache=True)
def _squared_distances_to(x, centre):
    n, d = x.shape
    out = np.empty(n)
    for i in range(n):
        s = 0.0
        for t in range(d):
            diff = x[i, t] - centre[t]
            s += diff * diff
        out[i] = s
    return out


@numba.njit(cache=True)
def _draw(cumulative, u):
    """Index drawn with probability ∝ increments of ``cumulative`` for uniform u."""
    total = cumulative[-1]
    if total <= 0.0:
        return 0
    index = np.searchsorted(cumulative, u * total, side="right")
    return min(index, cumulative.shape[0] - 1)


@numba.njit(cache=True)
def _kmeans_plus_plus(x, weights, k, uniforms, n_trials):
    """Greedy k-means++ centres, (k, d); ``uniforms`` holds 1 + (k−1)·n_trials draws."""
    n, d = x.shape
    centres = np.empty((k, d))
    first = _draw(np.cumsum(weights), uniforms[0])
    centres[0] = x[first]
    closest = _squared_distances_to(x, centres[0])
    used = 1
    for c in range(1, k):
        cumulative = np.cumsum(weights * closest)
        best_potential = np.inf
        best = 0
        best_distances = closest
        for trial in range(n_trials):
            candidate = _draw(cumulative, uniforms[used])
            used += 1
            distances = _squared_distances_to(x, x[candidate])
            potential = 0.0
            for i in range(n):
                distances[i] = min(distances[i], closest[i])
                potential += weights[i] * distances[i]
            if potential < best_potential:
                best_potential = potential
                best = candidate
                best_distances = distances
        centres[c] = x[best]
        closest = best_distances
    return centres


@numba.njit(cache=True)
def _scan(x, i, centres):
    """(best centre, distance to it, distance to the second best) for row i."""
    k, d = centres.shape
    best, first, second = 0, np.inf, np.inf
    for c in range(k):
        s = 0.0
        for t in range(d):
            diff = x[i, t] - centres[c, t]
            s += diff * diff
        if s < first:
            second = first
            first = s
            best = c
        elif s < second:
            second = s
    return best, np.sqrt(first), np.sqrt(second)


@numba.njit(cache=True)
def _distance(x, i, centres, c):
    s = 0.0
    for t in range(x.shape[1]):
        diff = x[i, t] - centres[c, t]
        s += diff * diff
    return np.sqrt(s)


@numba.njit(cache=True)
def _hamerly_chunk(x, weights, centres, half_gap, labels, upper, lower, sums, counts, first, chunk):
    """Assign the rows of one chunk using Hamerly's bounds; fill its weighted sums.

    ``upper`` bounds the distance to the own centre, ``lower`` the distance to
    any other centre; a row is rescanned only when the bounds cannot rule out a
    closer centre (``first`` forces a full scan). Returns the number of changes.
    """
    n, d = x.shape
    changed = 0
    sums[chunk] = 0.0
    counts[chunk] = 0.0
    for i in range(chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK)):
        own = labels[i]
        if first:
            own, upper[i], lower[i] = _scan(x, i, centres)
            labels[i] = own
        else:
            bound = max(half_gap[own], lower[i])
            if upper[i] > bound:
                upper[i] = _distance(x, i, centres, own)
                if upper[i] > bound:
                    best, upper[i], lower[i] = _scan(x, i, centres)
                    if best != own:
                        changed += 1
                        labels[i] = best
                        own = best
        w = weights[i]
        counts[chunk, own] += w
        for t in range(d):
            sums[chunk, own, t] += w * x[i, t]
    return changed


@numba.njit(parallel=True, cache=True)
def _hamerly_pass_parallel(x, weights, centres, half_gap, labels, upper, lower, sums, counts, first):
    n_chunks = sums.shape[0]
    changed = np.zeros(n_chunks, dtype=np.int64)
    for chunk in numba.prange(n_chunks):
        changed[chunk] = _hamerly_chunk(
            x, weights, centres, half_gap, labels, upper, lower, sums, counts, first, chunk
        )
    return changed.sum()


@numba.njit(cache=True)
def _hamerly_pass_serial(x, weights, centres, half_gap, labels, upper, lower, sums, counts, first):
    changed = 0
    for chunk in range(sums.shape[0]):
        changed += _hamerly_chunk(
            x, weights, centres, half_gap, labels, upper, lower, sums, counts, first, chunk
        )
    return changed


def _hamerly_pass(*arrays_and_flag) -> int:
    """One assignment pass over all chunks (in parallel when there are several).

    Dispatched from Python: numba's cache cannot safely reload a compiled
    function that calls a parallel one.
    """
    sums = arrays_and_flag[7]
    kernel = _hamerly_pass_parallel if sums.shape[0] > 1 else _hamerly_pass_serial
    return int(kernel(*arrays_and_flag))


@numba.njit(cache=True)
def _half_gaps(centres):
    """Half the distance from each centre to its nearest other centre."""
    k = centres.shape[0]
    out = np.full(k, np.inf)
    for a in range(k):
        for b in range(a + 1, k):
            s = 0.0
            for t in range(centres.shape[1]):
                diff = centres[a, t] - centres[b, t]
                s += diff * diff
            gap = 0.5 * np.sqrt(s)
            out[a] = min(out[a], gap)
            out[b] = min(out[b], gap)
    return out


@numba.njit(cache=True)
def _move_centres(sums, counts, centres, labels, upper, lower):
    """Centres to the weighted means; loosen the bounds by the moves. Returns Σ shift².

    A cluster that empties keeps its centre here; the caller relocates it.
    """
    total = sums.sum(axis=0)
    count = counts.sum(axis=0)
    k, d = centres.shape
    shift_sq = 0.0
    largest = 0.0
    moves = np.zeros(k)
    for c in range(k):
        if count[c] > 0.0:
            s = 0.0
            for t in range(d):
                value = total[c, t] / count[c]
                s += (value - centres[c, t]) ** 2
                centres[c, t] = value
            moves[c] = np.sqrt(s)
            shift_sq += s
            largest = max(largest, moves[c])
    for i in range(labels.shape[0]):
        upper[i] += moves[labels[i]]
        lower[i] -= largest
    return shift_sq


@numba.njit(cache=True)
def _distances_to_own_centre(x, centres, labels):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = _distance(x, i, centres, labels[i])
    return out


def _relocate(x, centres, labels, empty):
    """Move the centres of empty clusters onto the rows farthest from their own centre.

    Keeps k clusters non-empty (as scikit-learn and MATLAB's 'singleton' do)
    instead of returning fewer clusters than asked for.
    """
    farthest = np.argsort(-_distances_to_own_centre(x, centres, labels), kind="stable")
    centres[empty] = x[farthest[: len(empty)]]


@numba.njit(cache=True)
def _inertia(x, weights, centres, labels):
    total = 0.0
    for i in range(x.shape[0]):
        dist = _distance(x, i, centres, labels[i])
        total += weights[i] * dist * dist
    return total


def _lloyd(x, weights, centres, max_iter, tolerance):
    """Lloyd iterations from ``centres`` (Hamerly-accelerated, same fixed points).

    Stops when no label changes, after ``max_iter`` updates, or when the total
    squared centre shift is <= ``tolerance`` (labels are then those of the
    final centres). Returns (labels, inertia); ``centres`` is updated in place.
    """
    n, d = x.shape
    k = centres.shape[0]
    n_chunks = (n + _CHUNK - 1) // _CHUNK
    labels = np.zeros(n, dtype=np.int64)
    upper = np.empty(n)
    lower = np.empty(n)
    sums = np.empty((n_chunks, k, d))
    counts = np.empty((n_chunks, k))
    state = (labels, upper, lower, sums, counts)
    _hamerly_pass(x, weights, centres, _half_gaps(centres), *state, True)
    for _ in range(max_iter):
        shift_sq = _move_centres(sums, counts, centres, labels, upper, lower)
        empty = np.flatnonzero(counts.sum(axis=0) == 0.0)
        if len(empty):
            _relocate(x, centres, labels, empty)
            _hamerly_pass(x, weights, centres, _half_gaps(centres), *state, True)
            continue
        changed = _hamerly_pass(x, weights, centres, _half_gaps(centres), *state, False)
        if changed == 0 or shift_sq <= tolerance:
            break
    return labels, _inertia(x, weights, centres, labels)


def _tolerance(x: np.ndarray, weights: np.ndarray) -> float:
    mean = np.average(x, axis=0, weights=weights)
    variance = np.average((x - mean) ** 2, axis=0, weights=weights)
    return TOLERANCE * float(variance.mean())


def _best_of_runs(x, weights, k, rng, n_init, max_iter):
    """(centres, labels) of the lowest-inertia run among ``n_init`` seeded runs."""
    n_trials = 2 + int(math.log(k))
    tolerance = _tolerance(x, weights)
    best = None
    for _ in range(n_init):
        uniforms = rng.random(1 + (k - 1) * n_trials)
        centres = _kmeans_plus_plus(x, weights, k, uniforms, n_trials)
        labels, inertia = _lloyd(x, weights, centres, max_iter, tolerance)
        if best is None or inertia < best[0]:
            best = (inertia, centres, labels)
    return best[1], best[2]


def weighted_kmeans(
    x: np.ndarray,
    k: int,
    seed: int,
    sample_weight: np.ndarray | None = None,
    n_init: int = 3,
    max_iter: int = 100,
) -> np.ndarray:
    """Cluster the rows of ``x`` into ``k`` groups.

    Parameters
    ----------
    x : (n, d) float array
    k : number of clusters, 1 <= k <= n
    seed : int, seeds every random draw
    sample_weight : (n,) positive weights, default all 1 (a row of weight w
        counts as w identical rows)
    n_init : runs from different k-means++ seeds; the lowest inertia wins
    max_iter : Lloyd iterations per run

    Returns
    -------
    (n,) int64 labels in 0..k−1.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    n = x.shape[0]
    weights = (
        np.ones(n) if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
    )
    rng = np.random.default_rng(seed)
    if n <= SAMPLE_THRESHOLD:
        return _best_of_runs(x, weights, k, rng, n_init, max_iter)[1]
    sample = np.sort(rng.choice(n, SAMPLE_SIZE, replace=False))
    centres, _ = _best_of_runs(x[sample], weights[sample], k, rng, n_init, max_iter)
    labels, _ = _lloyd(x, weights, centres, max_iter, _tolerance(x[sample], weights[sample]))
    return labels
