"""Exact object-level cuts of a dendrogram built on microclusters.

The full N-object dendrogram of LWEA is the microcluster dendrogram with every
microcluster expanded into a chain of merges of its identical objects at height
1 − mean ECI of its clusters. Those intra-microcluster merges always precede the
merge of that microcluster with anything else, but may come after merges of
unrelated microclusters. Cutting into k clusters means keeping the N − k lowest
merges of the full dendrogram; this module does that without expanding it.
"""

from __future__ import annotations

import numba
import numpy as np

from lwec_tasks.core.linkage_numbering import find_root


@numba.njit(cache=True)
def _micro_roots(linkage, n_leaves, n_merges):
    """Root leaf of every leaf after applying the first ``n_merges`` linkage rows."""
    parent = np.arange(2 * n_leaves - 1)
    for step in range(n_merges):
        parent[np.int64(linkage[step, 0])] = n_leaves + step
        parent[np.int64(linkage[step, 1])] = n_leaves + step
    roots = np.empty(n_leaves, dtype=np.int64)
    for leaf in range(n_leaves):
        roots[leaf] = find_root(parent, leaf)
    return roots


@numba.njit(cache=True)
def first_appearance_labels(raw):
    """Renumber arbitrary non-negative ids (N,) to 0..k−1 in order of first appearance; (N,) int64."""
    mapping = np.full(raw.max() + 1, -1, dtype=np.int64)
    out = np.empty(raw.shape[0], dtype=np.int64)
    next_label = 0
    for i in range(raw.shape[0]):
        r = raw[i]
        if mapping[r] < 0:
            mapping[r] = next_label
            next_label += 1
        out[i] = mapping[r]
    return out


class MicroclusterDendrogram:
    """An average-linkage dendrogram over microclusters plus their internal heights.

    Parameters
    ----------
    linkage : (Ñ − 1, 4) scipy-format linkage over microclusters, sorted by height
    intra_heights : (Ñ,) height at which each microcluster's objects merge
    microcluster_of : (N,) microcluster id of each object
    microcluster_sizes : (Ñ,)
    """

    def __init__(self, linkage, intra_heights, microcluster_of, microcluster_sizes):
        self.linkage = linkage
        self.intra_heights = np.asarray(intra_heights, dtype=np.float64)
        self.microcluster_of = microcluster_of
        self.microcluster_sizes = np.asarray(microcluster_sizes, dtype=np.int64)
        self.n_leaves = len(self.microcluster_sizes)
        self.n_objects = len(microcluster_of)
        # Events sorted by height; at equal height intra merges go first, so a tie
        # never splits a microcluster.
        n_micro_merges = len(linkage)
        heights = np.concatenate([self.intra_heights, linkage[:, 2]])
        is_micro_merge = np.concatenate([np.zeros(self.n_leaves), np.ones(n_micro_merges)])
        order = np.lexsort((np.arange(len(heights)), is_micro_merge, heights))
        counts = np.concatenate([self.microcluster_sizes - 1, np.ones(n_micro_merges, np.int64)])
        self._event_order = order
        self._event_counts = counts[order]
        self._event_is_micro = is_micro_merge[order].astype(bool)
        self._events_before = np.concatenate([[0], np.cumsum(self._event_counts)])

    def cut(self, k: int) -> np.ndarray:
        """Labels 0..k−1 of the N objects after the N − k lowest merges.

        Clusters are numbered in order of their first object.
        """
        n_merges = self.n_objects - k
        # Events fully applied, then possibly part of one more (intra) event.
        full = int(np.searchsorted(self._events_before, n_merges, side="right")) - 1
        applied = self._event_order[:full]
        n_micro_applied = int(self._event_is_micro[:full].sum())
        roots = _micro_roots(self.linkage, self.n_leaves, n_micro_applied)
        raw = roots[self.microcluster_of].copy()

        intra_done = np.zeros(self.n_leaves, dtype=np.int64)
        intra_events = applied[applied < self.n_leaves]
        intra_done[intra_events] = self.microcluster_sizes[intra_events] - 1
        remainder = n_merges - int(self._events_before[full])
        if remainder > 0:
            intra_done[self._event_order[full]] = remainder
        split = np.flatnonzero(intra_done < self.microcluster_sizes - 1)
        if len(split):
            raw = self._split_microclusters(raw, split, intra_done[split])
        return first_appearance_labels(raw)

    def _split_microclusters(self, raw, split, merged_so_far):
        """Microclusters whose internal merges are not all applied yet fall apart.

        Their objects are identical, so which of them stay together is a tie; the
        first ``merged + 1`` objects (by index) stay together, the rest are singletons.
        """
        raw = raw.copy()
        next_id = 2 * self.n_leaves
        is_split = np.zeros(self.n_leaves, dtype=bool)
        is_split[split] = True
        kept = np.zeros(self.n_leaves, dtype=np.int64)
        kept[split] = merged_so_far + 1
        seen = np.zeros(self.n_leaves, dtype=np.int64)
        for obj in np.flatnonzero(is_split[self.microcluster_of]):
            micro = self.microcluster_of[obj]
            seen[micro] += 1
            if seen[micro] > kept[micro]:
                raw[obj] = next_id
                next_id += 1
        return raw

    def cuts(self, ks) -> np.ndarray:
        """(N, len(ks)) labels, one column per k."""
        return np.column_stack([self.cut(int(k)) for k in ks])
