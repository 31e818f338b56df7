"""Size-weighted average linkage on cluster counts: exact LWEA in O(Ñ·M) memory (compiled with numba).

The weighted co-association summed over two groups of objects A and B is

    S(A, B) = Σ_c w(c) · n_A(c) · n_B(c),

c running over the ensemble's clusters, n_A(c) the number of objects of A in c,
and w(c) = ECI(c) / M for LWEA. Average linkage on 1 − LWCA between A and B is
therefore 1 − S(A, B) / (|A| · |B|), which needs for each group only its sparse
vector of counts over the clusters (at most M non-zeros per microcluster, and
a merge adds two vectors). Average linkage is reducible, so the
nearest-neighbour chain finds the dendrogram; a group's nearest neighbour is
found through an inverted index from each cluster to the groups that hold it,
in Σ_{c ∈ A} |groups holding c| steps. Groups sharing no cluster are at
distance exactly 1.

Exactness and ties. S(A, B) is summed over the shared clusters in ascending
cluster id, each term w(c) · ((n_A(c)/|A|) · (n_B(c)/|B|)), so d(A, B) and
d(B, A) are the same float whatever the merge history. The
tie rule is the dense nearest-neighbour chain's: the chain starts at the lowest
live slot; a nearest neighbour is the previous chain element when it is among
the closest, else the lowest slot among them; a merge of slots x < y puts the
new group in slot y. Rows are then sorted by height (stable) and numbered as
scipy numbers them.

Falling back without a query. Each query also keeps x's few most similar groups after
its nearest neighbour a (the runner-ups, with their similarities) and bounds x's
similarity to every other live group. Merges never lift a group above the most similar
of its parts (the similarity to a union is the size-weighted mean of the parts'), so
when the chain falls back to x after a has been merged, every live group is still
under that bound except the ones now holding a or a runner-up, and the chain element
below x, whose similarities are computed afresh. If the best of those is strictly above
the bound it is x's nearest neighbour (under the tie rule: only they can tie) and is
pushed, or merged with x if it is the element below, without a query (more than nine
falls back in ten on 100k blob rows); otherwise the query starts from the best of them,
which lets it settle sooner.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numba
import numpy as np

from lwec_tasks.core.cache_hints import prefetch
from lwec_tasks.core.linkage_numbering import scipy_numbering
from lwec_tasks.core.memory import ensure_fits

# Seconds between two progress reports of a long linkage.
_PROGRESS_EVERY_SECONDS = 5.0
# Longest vector whose reading order is sorted in place (longer ones: numpy's sort).
_INSERTION_SORT_UP_TO = 48
# Candidates ahead whose vector's address (and, half as far ahead, the vector itself) is prefetched.
_PREFETCH_AHEAD = 4
# Runner-ups a query keeps for the fall back to its group.
_RUNNERS = 4


@numba.njit(cache=True)
def _build_index(codes, sizes, n_clusters):
    """Inverted index and group vectors of the microclusters.

    Index (CSR by cluster c, ``list_len[c]`` live entries from ``list_start[c]``): each group g holding c and
    its share n_g(c) / |g|. Vectors (in an arena, from ``vec_start[g]``, ``vec_len[g]`` entries): g's
    clusters ascending, its count in each, and the position of its entry in that cluster's list.
    """
    m, n_columns = codes.shape
    list_len = np.zeros(n_clusters, dtype=np.int64)
    for i in range(m):
        for j in range(n_columns):
            list_len[codes[i, j]] += 1
    list_start = np.zeros(n_clusters + 1, dtype=np.int64)
    for c in range(n_clusters):
        list_start[c + 1] = list_start[c] + list_len[c]
    list_group = np.empty(list_start[n_clusters], dtype=np.int32)
    list_share = np.empty(list_start[n_clusters], dtype=np.float64)
    fill = list_start[:n_clusters].copy()
    capacity = 2 * m * n_columns + 16
    vec_cluster = np.empty(capacity, dtype=np.int32)
    vec_count = np.empty(capacity, dtype=np.int32)
    vec_slot = np.empty(capacity, dtype=np.int32)
    vec_start = np.empty(m, dtype=np.int64)
    vec_len = np.full(m, n_columns, dtype=np.int64)
    row = np.empty(n_columns, dtype=codes.dtype)
    for i in range(m):
        vec_start[i] = i * n_columns
        # The row's cluster ids ascending (an insertion sort: rows are short, and np.sort would allocate).
        for j in range(n_columns):
            r = j
            while r > 0 and row[r - 1] > codes[i, j]:
                row[r] = row[r - 1]
                r -= 1
            row[r] = codes[i, j]
        for j in range(n_columns):
            c = row[j]
            vec_cluster[i * n_columns + j] = c
            vec_count[i * n_columns + j] = sizes[i]
            vec_slot[i * n_columns + j] = fill[c]
            list_group[fill[c]] = i
            list_share[fill[c]] = 1.0
            fill[c] += 1
    return (list_start, list_len, list_group, list_share), (vec_cluster, vec_count, vec_slot, vec_start, vec_len)


@numba.njit(cache=True)
def _next_alive(skip, i):
    """Smallest live slot ≥ i (``skip[i] == i`` for a live slot; the sentinel slot m is always live)."""
    root = i
    while skip[root] != root:
        root = skip[root]
    while skip[i] != root:
        following = skip[i]
        skip[i] = root
        i = following
    return root


@numba.njit(cache=True)
def _similarity(x_shares, g, weights, size, vectors):
    """S(x, g) / (|x| |g|) = Σ_shared w(c) · ((n_x(c)/|x|) · (n_g(c)/|g|)), x's shares scattered into
    ``x_shares`` (zero elsewhere): the canonical value.

    Summed over g's clusters in ascending c; the terms of clusters x lacks are exactly 0.0 and leave the sum
    unchanged, so the non-zero terms are added in ascending c whichever group is x, and the value is the same.
    """
    vec_cluster, vec_count, _, vec_start, vec_len = vectors
    sg = np.float64(size[g])
    total = 0.0
    for e in range(vec_start[g], vec_start[g] + vec_len[g]):
        c = vec_cluster[e]
        total += weights[c] * (x_shares[c] * (vec_count[e] / sg))
    return total


@numba.njit(cache=True)
def _scatter_shares(x, size, vectors, x_shares):
    """x's shares n_x(c) / |x| written into the zeroed scratch array ``x_shares`` (over the clusters)."""
    vec_cluster, vec_count, _, vec_start, vec_len = vectors
    sx = np.float64(size[x])
    for t in range(vec_start[x], vec_start[x] + vec_len[x]):
        x_shares[vec_cluster[t]] = vec_count[t] / sx


@numba.njit(cache=True)
def _clear_shares(x, vectors, x_shares):
    """``x_shares`` zeroed again after :func:`_scatter_shares` of x."""
    vec_cluster, _, _, vec_start, vec_len = vectors
    for t in range(vec_start[x], vec_start[x] + vec_len[x]):
        x_shares[vec_cluster[t]] = 0.0


@numba.njit(cache=True)
def _reading_order(x, weights, size, index, vectors, scratch):
    """x's vector positions in the order their lists are read (most weight per list entry first) into
    ``order``, and what each cluster c can add to a similarity at most, w(c) · n_x(c) / |x| (the other
    group's share is at most 1), into ``can_add``; both are scratch arrays of :func:`_query_scratch`. Returns
    the number of entries in those lists."""
    order, can_add, _, key, _ = scratch
    list_len = index[1]
    vec_cluster, vec_count, _, vec_start, vec_len = vectors
    start, length = vec_start[x], vec_len[x]
    sx = np.float64(size[x])
    entries = 0
    for t in range(length):
        c = vec_cluster[start + t]
        can_add[t] = weights[c] * (vec_count[start + t] / sx)
        key[t] = -can_add[t] / list_len[c]
        entries += list_len[c]
    if length > _INSERTION_SORT_UP_TO:
        order[:length] = np.argsort(key[:length], kind="mergesort")
        return entries
    # A stable insertion sort: short vectors (most queries) are sorted without allocating.
    for t in range(length):
        r = t
        while r > 0 and key[order[r - 1]] > key[t]:
            order[r] = order[r - 1]
            r -= 1
        order[r] = t
    return entries


@numba.njit(cache=True)
def _remaining_bounds(x, cluster_column, vectors, scratch):
    """``remaining[r]`` (r = 0..len(x)) of ``scratch``: the most that x's clusters other than the first r of
    ``order`` can add to its similarity with any group. A group's shares over one column's clusters sum to at
    most 1, so a column adds at most its largest unread ``can_add``; the bounds are built from the last read
    cluster back, keeping each column's largest so far in ``column_top`` (zero on entry and on return)."""
    order, can_add, remaining, _, column_top = scratch
    vec_cluster = vectors[0]
    start, length = vectors[3][x], vectors[4][x]
    total = 0.0
    remaining[length] = 0.0
    for r in range(length - 1, -1, -1):
        t = order[r]
        column = cluster_column[vec_cluster[start + t]]
        if can_add[t] > column_top[column]:
            total += can_add[t] - column_top[column]
            column_top[column] = can_add[t]
        remaining[r] = total
    for t in range(length):
        column_top[cluster_column[vec_cluster[start + t]]] = 0.0


@numba.njit(cache=True)
def _drop_below(threshold, partial, touched, n_touched):
    """Keep the candidates whose partial sum reaches ``threshold`` (the others' sums go back to −inf); returns
    how many are kept, at the front of ``touched``, and the highest partial sum dropped (0.0 if none)."""
    kept = 0
    highest_dropped = 0.0
    for t in range(n_touched):
        g = touched[t]
        if partial[g] >= threshold:
            touched[kept] = g
            kept += 1
        else:
            highest_dropped = max(highest_dropped, partial[g])
            partial[g] = -np.inf
    return kept, highest_dropped


@numba.njit(cache=True)
def _keep_runner(g, similarity, runner_slot, runner_sim, n_runners, others_bound):
    """Group g and its similarity into the runner-ups (``runner_slot``/``runner_sim``, most similar first, at
    most their length); a group pushed out or not let in raises ``others_bound``. Returns (n_runners,
    others_bound)."""
    capacity = runner_slot.shape[0]
    if n_runners == capacity:
        if similarity <= runner_sim[capacity - 1]:
            return n_runners, max(others_bound, similarity)
        others_bound = max(others_bound, runner_sim[capacity - 1])
        n_runners -= 1
    r = n_runners
    while r > 0 and runner_sim[r - 1] < similarity:
        runner_slot[r] = runner_slot[r - 1]
        runner_sim[r] = runner_sim[r - 1]
        r -= 1
    runner_slot[r] = g
    runner_sim[r] = similarity
    return n_runners + 1, others_bound


@numba.njit(cache=True)
def _nearest(x, previous, weights, cluster_column, n_columns, size, index, vectors, skip, partial, touched,
             x_shares, scratch, seeds, n_seeds, is_seed, runner_slot, runner_sim):
    """Nearest live group of ``x`` under the dense chain's tie rule; returns (y, distance, bound, n_runners):
    x's runner-ups written to ``runner_slot``/``runner_sim`` (most similar first), bound at least x's
    similarity S / (|x| |g|) to every live group g but y, the runner-ups and ``previous`` (round-off margin
    included).

    ``seeds`` = (slots, similarities): the first ``n_seeds`` are groups whose exact similarity is known; the
    search starts from the best of them. ``is_seed`` (over the slots) is all False on entry and on return.

    Candidates come from the lists of x's clusters, most weight per entry first; once the clusters left can add
    less than a similarity already reached, no group outside the lists read can win, and each candidate whose
    partial sum plus what it can still gain stays below that similarity is dropped. From then on the lists
    only feed the candidates, until checking the candidates directly costs less than the lists left. The
    survivors' similarities are then computed canonically (:func:`_similarity`).

    ``partial`` holds each slot's partial sum while it is a candidate and −inf otherwise (also on return), so
    feeding the candidates needs no test: a non-candidate's −inf stays −inf. ``x_shares`` is a zeroed
    scratch array over the clusters, zeroed again on return; ``scratch`` is :func:`_query_scratch`'s.
    """
    list_start, list_len, list_group, list_share = index
    vec_cluster, _, _, vec_start, vec_len = vectors
    start, length = vec_start[x], vec_len[x]
    _scatter_shares(x, size, vectors, x_shares)
    unread_entries = _reading_order(x, weights, size, index, vectors, scratch)
    _remaining_bounds(x, cluster_column, vectors, scratch)
    order, can_add, remaining = scratch[0], scratch[1], scratch[2]
    # Round-off in partial sums and bounds is far below this margin.
    margin = 1e-9 * (1.0 + remaining[0])
    to_previous = _similarity(x_shares, previous, weights, size, vectors) if previous >= 0 else 0.0
    reached = to_previous
    seed_slot, seed_sim = seeds
    for s in range(n_seeds):
        reached = max(reached, seed_sim[s])
        is_seed[seed_slot[s]] = True
    n_touched = 0
    # A direct check reads the candidate's vector; it costs about as much as 2 · len(x) + 20 list entries
    # (chosen on a synthetic ensemble, not on the benchmark's blobs), and the candidates are checked directly
    # once that is no more than the lists left.
    check_cost = 2 * length + 20
    read = 0
    settled = False
    dropped_at = -1
    # The most similar any group but the answer can be: groups never read, dropped ones, checked ones.
    others_bound = 0.0
    while read < length:
        if remaining[read] < reached - margin:
            # No group outside the candidates can win now, nor can a candidate whose partial sum plus what
            # the unread clusters can add stays below what is reached (both only grow apart): drop those.
            if not settled:
                others_bound = remaining[read]
            settled = True
            # Few enough already: the drop waits for the last one, after the loop.
            if n_touched * check_cost <= unread_entries:
                break
            n_touched, dropped = _drop_below(reached - margin - remaining[read], partial, touched, n_touched)
            others_bound = max(others_bound, dropped + remaining[read])
            dropped_at = read
            if n_touched * check_cost <= unread_entries:
                break
        c = vec_cluster[start + order[read]]
        unread_entries -= list_len[c]
        gain = can_add[order[read]]
        if settled:
            for p in range(list_start[c], list_start[c] + list_len[c]):
                g = list_group[p]
                value = partial[g] + gain * list_share[p]
                partial[g] = value
                reached = max(reached, value)
        else:
            for p in range(list_start[c], list_start[c] + list_len[c]):
                g = list_group[p]
                if g == x:
                    continue
                value = partial[g]
                if value == -np.inf:
                    value = 0.0
                    touched[n_touched] = g
                    n_touched += 1
                value += gain * list_share[p]
                partial[g] = value
                if value > reached:
                    reached = value
        read += 1
    if not settled:
        others_bound = remaining[read]
    if dropped_at != read:
        # (Unless the loop stopped right after dropping with the same threshold.)
        n_touched, dropped = _drop_below(reached - margin - remaining[read], partial, touched, n_touched)
        others_bound = max(others_bound, dropped + remaining[read])
    best = 1.0
    y = -1
    best_similarity = 0.0
    n_runners = 0
    if previous >= 0:
        best = 1.0 - to_previous / n_columns
        y = previous
        best_similarity = to_previous
    # The seeds (exact similarities known), then the surviving candidates.
    for t in range(-n_seeds, n_touched):
        if t < 0:
            g = seed_slot[t + n_seeds]
            similarity = seed_sim[t + n_seeds]
        else:
            # The checks wait on memory: start loading the vectors of the candidates a few checks ahead.
            if t + _PREFETCH_AHEAD < n_touched:
                ahead = touched[t + _PREFETCH_AHEAD]
                prefetch(vec_start, ahead)
                prefetch(size, ahead)
            if t + _PREFETCH_AHEAD // 2 < n_touched:
                ahead = vec_start[touched[t + _PREFETCH_AHEAD // 2]]
                prefetch(vec_cluster, ahead)
                prefetch(vectors[1], ahead)
            g = touched[t]
            partial[g] = -np.inf
            if g == previous or is_seed[g]:
                continue
            similarity = _similarity(x_shares, g, weights, size, vectors)
        d = 1.0 - similarity / n_columns
        if d < best or (d == best and y != previous and (y < 0 or g < y)):
            # The one it beats becomes a runner-up (``previous`` never: the fall back computes it afresh).
            if y >= 0 and y != previous:
                n_runners, others_bound = _keep_runner(y, best_similarity, runner_slot, runner_sim, n_runners,
                                                       others_bound)
            best = d
            y = g
            best_similarity = similarity
        else:
            n_runners, others_bound = _keep_runner(g, similarity, runner_slot, runner_sim, n_runners, others_bound)
    for s in range(n_seeds):
        is_seed[seed_slot[s]] = False
    _clear_shares(x, vectors, x_shares)
    if best == 1.0 and (previous < 0 or y != previous):
        # Every live group is at distance 1 (sharing nothing, or only clusters of weight 0): the lowest slot.
        y = _next_alive(skip, 0)
        if y == x:
            y = _next_alive(skip, x + 1)
    return y, best, others_bound + margin, n_runners


def _query_scratch(n_clusters: int, n_columns: int) -> tuple:
    """Scratch arrays of one query: (order, can_add, remaining, sort keys, column_top), sized for a vector of
    every cluster; ``column_top`` (n_columns,) must start at zero."""
    return (np.empty(n_clusters, dtype=np.int64), np.empty(n_clusters), np.empty(n_clusters + 1),
            np.empty(n_clusters), np.zeros(n_columns))


@numba.njit(cache=True)
def _find_entry(vectors, g, c):
    """Position in the arena of cluster c in g's vector (binary search)."""
    vec_cluster, _, _, vec_start, vec_len = vectors
    low, high = vec_start[g], vec_start[g] + vec_len[g]
    while low < high:
        middle = (low + high) // 2
        if vec_cluster[middle] < c:
            low = middle + 1
        else:
            high = middle
    return low


@numba.njit(cache=True)
def _merge(x, y, size, index, vectors, arena_end):
    """Merge group x into slot y: y's new vector (counts added, clusters ascending) appended at ``arena_end``,
    the index pointed at it (x's entries renamed or dropped, y's shares over its new size); returns the new
    arena end. The arena must have room for both vectors."""
    list_start, list_len, list_group, list_share = index
    vec_cluster, vec_count, vec_slot, vec_start, vec_len = vectors
    new_size = np.float64(size[x] + size[y])
    ax, lx = vec_start[x], vec_len[x]
    ay, ly = vec_start[y], vec_len[y]
    out = arena_end
    i = 0
    j = 0
    while i < lx or j < ly:
        if j >= ly or (i < lx and vec_cluster[ax + i] < vec_cluster[ay + j]):
            c, count, slot = vec_cluster[ax + i], vec_count[ax + i], vec_slot[ax + i]
            list_group[slot] = y
            i += 1
        elif i >= lx or vec_cluster[ay + j] < vec_cluster[ax + i]:
            c, count, slot = vec_cluster[ay + j], vec_count[ay + j], vec_slot[ay + j]
            j += 1
        else:
            c, count, slot = vec_cluster[ay + j], vec_count[ax + i] + vec_count[ay + j], vec_slot[ay + j]
            # Drop x's entry: the list's last entry takes its place.
            gone = vec_slot[ax + i]
            last = list_start[c] + list_len[c] - 1
            if gone != last:
                moved = list_group[last]
                list_group[gone] = moved
                list_share[gone] = list_share[last]
                if moved == y:
                    slot = gone
                else:
                    vec_slot[_find_entry(vectors, moved, c)] = gone
            list_len[c] -= 1
            i += 1
            j += 1
        list_share[slot] = count / new_size
        vec_cluster[out] = c
        vec_count[out] = count
        vec_slot[out] = slot
        out += 1
    vec_start[y] = arena_end
    vec_len[y] = out - arena_end
    vec_len[x] = 0
    return out


@numba.njit(cache=True)
def _compact(vectors, needed):
    """The live vectors copied to the front of fresh arrays with room for ``needed`` more; (vectors, end)."""
    vec_cluster, vec_count, vec_slot, vec_start, vec_len = vectors
    live = 0
    for g in range(vec_len.shape[0]):
        live += vec_len[g]
    capacity = max(2 * live + needed, vec_cluster.shape[0])
    new_cluster = np.empty(capacity, dtype=np.int32)
    new_count = np.empty(capacity, dtype=np.int32)
    new_slot = np.empty(capacity, dtype=np.int32)
    end = 0
    for g in range(vec_len.shape[0]):
        length = vec_len[g]
        if length == 0:
            continue
        s = vec_start[g]
        new_cluster[end:end + length] = vec_cluster[s:s + length]
        new_count[end:end + length] = vec_count[s:s + length]
        new_slot[end:end + length] = vec_slot[s:s + length]
        vec_start[g] = end
        end += length
    return (new_cluster, new_count, new_slot, vec_start, vec_len), end


@numba.njit(cache=True)
def _holder(merged_into, s):
    """The live slot now holding the group once in slot s (``merged_into`` is −1 for a live slot); the path
    followed is pointed at it."""
    root = s
    while merged_into[root] >= 0:
        root = merged_into[root]
    while merged_into[s] >= 0 and merged_into[s] != root:
        following = merged_into[s]
        merged_into[s] = root
        s = following
    return root


@numba.njit(cache=True)
def _from_cache(x, previous, answer_holder, runner_slot, n_runners, bound, merged_into, weights, n_columns, size,
                vectors, x_shares, seeds):
    """The fall back to x after its nearest neighbour was merged (into ``answer_holder``).

    The groups now holding x's runner-ups, and ``answer_holder``, go to ``seeds`` = (slots, similarities) with
    their exact similarities to x. Returns (n_seeds, y, distance): y is x's nearest neighbour under the tie
    rule when the best of the seeds and ``previous`` is strictly above ``bound`` (then nothing else can
    reach it), else −1.
    """
    seed_slot, seed_sim = seeds
    _scatter_shares(x, size, vectors, x_shares)
    n_seeds = 0
    for r in range(-1, n_runners):
        h = answer_holder if r < 0 else _holder(merged_into, runner_slot[r])
        if h in (x, previous):
            continue
        seen = False
        for s in range(n_seeds):
            seen = seen or seed_slot[s] == h
        if not seen:
            seed_slot[n_seeds] = h
            seed_sim[n_seeds] = _similarity(x_shares, h, weights, size, vectors)
            n_seeds += 1
    best = np.inf
    y = -1
    best_similarity = -np.inf
    if previous >= 0:
        best_similarity = _similarity(x_shares, previous, weights, size, vectors)
        best = 1.0 - best_similarity / n_columns
        y = previous
    for s in range(n_seeds):
        d = 1.0 - seed_sim[s] / n_columns
        if d < best or (d == best and y != previous and seed_slot[s] < y):
            best = d
            y = seed_slot[s]
            best_similarity = seed_sim[s]
    _clear_shares(x, vectors, x_shares)
    return n_seeds, (y if best_similarity > bound else -1), best


@numba.njit(nogil=True, cache=True)
def _chain_steps(stop_step, state, chain, others_bound, runners, merges, weights, cluster_column, n_columns, size,
                 index, vectors, skip, merged_into, partial, touched, x_shares, scratch, seeds, is_seed, shortcut):
    """Run the nearest-neighbour chain until ``stop_step`` merges are done.

    ``state`` holds (step, chain length, arena end, queries, merged slot of the last step);
    ``others_bound[i]`` and ``runners`` = (slots, similarities, counts), row i, are the bound and the
    runner-ups of the query that pushed ``chain[i + 1]``. ``shortcut=False`` queries at every push. The
    arena may be reallocated, so the vectors are returned.
    """
    runner_slot, runner_sim, n_runner = runners
    step, chain_length, arena_end, queries, merged = state[0], state[1], state[2], state[3], state[4]
    while step < stop_step:
        n_seeds = 0
        reciprocal = False
        if chain_length == 0:
            chain[0] = _next_alive(skip, 0)
            chain_length = 1
        elif shortcut:
            i = chain_length - 1
            x = chain[i]
            previous = chain[i - 1] if i > 0 else -1
            n_seeds, y, current = _from_cache(x, previous, merged, runner_slot[i], n_runner[i], others_bound[i],
                                              merged_into, weights, n_columns, size, vectors, x_shares, seeds)
            if y == previous and y >= 0:
                reciprocal = True
            elif y >= 0:
                # The bound still holds for every group but the seeds: y is pushed, the other seeds are its
                # runner-ups.
                n = 0
                for s in range(n_seeds):
                    if seeds[0][s] != y:
                        n, _ = _keep_runner(seeds[0][s], seeds[1][s], runner_slot[i], runner_sim[i], n, 0.0)
                n_runner[i] = n
                chain[chain_length] = y
                chain_length += 1
                n_seeds = 0
        while not reciprocal:
            i = chain_length - 1
            x = chain[i]
            previous = chain[i - 1] if i > 0 else -1
            queries += 1
            y, current, bound, n = _nearest(x, previous, weights, cluster_column, n_columns, size, index, vectors,
                                            skip, partial, touched, x_shares, scratch, seeds, n_seeds, is_seed,
                                            runner_slot[i], runner_sim[i])
            n_seeds = 0
            if i > 0 and y == previous:
                break
            n_runner[i] = n
            others_bound[i] = bound
            chain[chain_length] = y
            chain_length += 1
        chain_length -= 2
        if x > y:
            x, y = y, x
        nx, ny = size[x], size[y]
        merges[step, 0] = x
        merges[step, 1] = y
        merges[step, 2] = current
        merges[step, 3] = nx + ny
        needed = vectors[4][x] + vectors[4][y]
        if arena_end + needed > vectors[0].shape[0]:
            vectors, arena_end = _compact(vectors, needed)
        arena_end = _merge(x, y, size, index, vectors, arena_end)
        size[y] = nx + ny
        size[x] = 0
        skip[x] = x + 1
        merged_into[x] = y
        merged = y
        step += 1
    state[0], state[1], state[2], state[3], state[4] = step, chain_length, arena_end, queries, merged
    return vectors


def counts_memory_bytes(n_microclusters: int, n_columns: int) -> int:
    """Bytes :func:`counts_average_linkage` holds for Ñ microclusters of M columns (index, vectors, state)."""
    entries = n_microclusters * n_columns
    # Index: group (int32) + share (float64), 12 B/entry; vectors: cluster + count + index slot (int32 each) in
    # an arena up to twice the live size, 24 B/entry; per slot: sizes, partial sums, candidates, chain and its
    # bounds, runner-ups, skip and merge links, merges (≈ 180 B).
    return entries * 36 + n_microclusters * 180


def counts_average_linkage(micro_codes: np.ndarray, weights: np.ndarray, n_columns: int, sizes: np.ndarray,
                           report: Callable[[int, int, float], None] | None = None) -> np.ndarray:
    """Size-weighted average linkage of microclusters on 1 − Σ_shared weight / M, from cluster counts.

    The same dendrogram as average linkage on the condensed matrix of
    the dense reference (``benchmarks/dense_linkage.py``), without it.

    Parameters
    ----------
    micro_codes : (Ñ, M) int array of global cluster ids per microcluster (one per column, all distinct
        within a row)
    weights : (n_c,) non-negative weight per cluster (ECI for LWEA)
    n_columns : M
    sizes : (Ñ,) objects per microcluster, all ≥ 1
    report : called as ``report(merges_done, merges_total, seconds)`` about every 5 s of a long linkage

    Returns
    -------
    ndarray of shape (Ñ − 1, 4) in scipy's linkage format (rows sorted by height, column 3 the number of
    leaves under each new node).
    """
    m = len(micro_codes)
    if m < 2:
        return np.empty((0, 4))
    merges = chain_merges(micro_codes, weights, n_columns, sizes, report)
    order = np.argsort(merges[:, 2], kind="mergesort")
    return scipy_numbering(merges[order], m, np.ones(m))


def chain_merges(micro_codes: np.ndarray, weights: np.ndarray, n_columns: int, sizes: np.ndarray,
                 report: Callable[[int, int, float], None] | None = None) -> np.ndarray:
    """The nearest-neighbour chain's merges in the order made: (Ñ − 1, 4) rows (slot x < slot y, distance,
    new size), the merged group living on in slot y; arguments as :func:`counts_average_linkage`."""
    return run_chain(micro_codes, weights, n_columns, sizes, report)[0]


def run_chain(micro_codes: np.ndarray, weights: np.ndarray, n_columns: int, sizes: np.ndarray,
              report: Callable[[int, int, float], None] | None = None,
              shortcut: bool = True) -> tuple[np.ndarray, int]:
    """:func:`chain_merges` and the number of nearest-neighbour queries it made; ``shortcut=False`` queries
    at every step instead of taking the module's shortcut (the same merges, more queries)."""
    codes = np.ascontiguousarray(micro_codes, dtype=np.int64)
    m = len(codes)
    ensure_fits(
        counts_memory_bytes(m, codes.shape[1]),
        f"exact LWEA on {m} microclusters (cluster counts)",
        "use method 'lwgp' or fewer or coarser base clusterings",
    )
    weights = np.asarray(weights, dtype=np.float64)
    size = np.asarray(sizes, dtype=np.int64).copy()
    index, vectors = _build_index(codes, size, len(weights))
    cluster_column = np.empty(len(weights), dtype=np.int64)
    cluster_column[codes] = np.arange(codes.shape[1])
    skip = np.arange(m + 1, dtype=np.int64)
    # Per slot: its partial similarity while a query's candidate, else −inf.
    partial = np.full(m, -np.inf)
    x_shares = np.zeros(len(weights))
    scratch = _query_scratch(len(weights), codes.shape[1])
    touched = np.empty(m, dtype=np.int64)
    chain = np.empty(m, dtype=np.int64)
    others_bound = np.empty(m)
    runners = (np.empty((m, _RUNNERS), dtype=np.int64), np.empty((m, _RUNNERS)), np.zeros(m, dtype=np.int64))
    merged_into = np.full(m, -1, dtype=np.int64)
    seeds = (np.empty(_RUNNERS + 1, dtype=np.int64), np.empty(_RUNNERS + 1))
    is_seed = np.zeros(m, dtype=np.bool_)
    merges = np.empty((m - 1, 4))
    state = np.array([0, 0, m * codes.shape[1], 0, -1], dtype=np.int64)
    started = last_report = time.perf_counter()
    batch = max(1, (m - 1) // 100)
    while state[0] < m - 1:
        before = time.perf_counter()
        stop = min(m - 1, int(state[0]) + batch)
        vectors = _chain_steps(stop, state, chain, others_bound, runners, merges, weights, cluster_column,
                               float(n_columns), size, index, vectors, skip, merged_into, partial, touched, x_shares,
                               scratch, seeds, is_seed, shortcut)
        elapsed = time.perf_counter() - before
        now = time.perf_counter()
        if report is not None and now - last_report >= _PROGRESS_EVERY_SECONDS:
            report(int(state[0]), m - 1, now - started)
            last_report = now
        # Batches of about half a second: few calls, prompt reports.
        batch = max(1, min(m, int(batch * min(4.0, 0.5 / max(elapsed, 1e-3)))))
    return merges, int(state[3])
