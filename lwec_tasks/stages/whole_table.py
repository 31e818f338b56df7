"""Whole-table steps that need only small, reduced inputs; they run as single tasks on a worker.

The cluster graph is assembled from its summed blocks and its eigenproblem solved, LWEA runs on the
microcluster table, and LWGP's k-means on the embedded microclusters — each with the numeric core's own
functions, so the results are the library's on the same inputs. The flow process only receives what they
return.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.counts_linkage import counts_average_linkage, counts_memory_bytes
from lwec_tasks.core.dendrogram_cut import MicroclusterDendrogram
from lwec_tasks.core.lwgp import graph_cluster_vectors, normalised_rows, partition_embedding
from lwec_tasks.core.memory import ensure_fits
from lwec_tasks.core.pair_kernels import object_degrees, sparse_cluster_graph, transfer_rows
from lwec_tasks.stages.reductions import Microclusters


def check_lwea_fits(n_microclusters: int, n_columns: int) -> None:
    """Raise :class:`~lwec_tasks.core.errors.LwecMemoryError` if exact LWEA on this many microclusters of
    ``n_columns`` base clusterings would not fit in this worker's memory (their cluster counts, O(Ñ·M))."""
    ensure_fits(
        counts_memory_bytes(n_microclusters, n_columns),
        f"exact LWEA on {n_microclusters} microclusters (cluster counts)",
        "use method 'lwgp' or fewer or coarser base clusterings",
    )


class _LeafCut(MicroclusterDendrogram):
    """LWEA's dendrogram cut at the level of microclusters.

    The cut itself is the core's (:meth:`MicroclusterDendrogram.cut` with the true number of objects);
    instead of splitting the objects of a microclusters whose internal merges the cut does not all keep,
    it records how many of them stay together, so the rows can be split where they live.
    """

    def __init__(self, linkage, intra_heights, sizes, n_objects: int):
        super().__init__(linkage, intra_heights, np.arange(len(sizes)), sizes)
        self.n_objects = int(n_objects)
        self.split = np.empty(0, dtype=np.int64)
        self.kept = np.empty(0, dtype=np.int64)

    def _split_microclusters(self, raw, split, merged_so_far):
        self.split, self.kept = np.asarray(split, np.int64), np.asarray(merged_so_far, np.int64) + 1
        return raw


def log_linkage_progress(done: int, total: int, seconds: float, log=None) -> None:
    """Progress of a long linkage on ``log`` (default: this worker's ``lwec_tasks.linkage`` logger)."""
    (log or logging.getLogger("lwec_tasks.linkage")).info(
        "Average linkage: %d of %d merges (%.0f%%) in %.0f s", done, total, 100.0 * done / max(total, 1), seconds)


def lwea_on_microclusters(micro: Microclusters, offsets: np.ndarray, eci: np.ndarray, k: int,
                          n_objects: int, report: Callable[[int, int, float], None] | None = log_linkage_progress,
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact LWEA cut into k clusters, on microclusters with their counts as weights; ``report(done, total,
    seconds)`` hears about a long linkage every few seconds.

    Returns (leaf_cluster (Ñ,): a cluster id per microcluster, split: microclusters the cut splits,
    kept: how many of each one's objects — the first in table order — stay together; the rest are
    singletons, linkage: the dendrogram over the microclusters, (Ñ − 1, 4) scipy format, as
    :func:`lwec_tasks.core.lwea.microcluster_linkage` builds it).
    """
    codes = micro.rows.astype(np.int64) + offsets[:-1]
    n_columns = codes.shape[1]
    linkage = counts_average_linkage(codes, eci, n_columns, micro.counts, report=report)
    intra = 1.0 - eci[codes].sum(axis=1) / n_columns
    cut = _LeafCut(linkage, intra, micro.counts, n_objects)
    leaf_cluster = cut.cut(int(k))
    return leaf_cluster, cut.split, cut.kept, linkage


def lwgp_on_microclusters(micro: Microclusters, offsets: np.ndarray, eci: np.ndarray,
                          cluster_vectors: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """LWGP's k-means on one embedded row per microcluster, weighted by its count.

    Returns (labels (Ñ,), sums (k, r): per label the count-weighted sum of the microclusters' row-normalised
    embedding rows, i.e. the sum over the objects of each cluster, of which the labelling model's centres are
    made; r = ``cluster_vectors.shape[1]``).
    """
    codes_t = np.ascontiguousarray(micro.rows.T)
    inv_dx = 1.0 / object_degrees(codes_t, offsets.astype(np.int64), eci)
    embedding = transfer_rows(codes_t, offsets, cluster_vectors, inv_dx)
    counts = micro.counts.astype(np.float64)
    labels = partition_embedding(embedding, int(k), int(seed), counts)
    rows = normalised_rows(embedding, embedding.shape[1]) * counts[:, None]
    sums = np.stack([np.bincount(labels, weights=rows[:, j], minlength=int(k)) for j in range(rows.shape[1])], axis=1)
    return labels, sums


@dataclass(frozen=True)
class SolvedClusterGraph:
    """LWGP's Tcut vectors of the cluster graph: ``vectors`` (n_c, k), with the graph's ``n_clusters`` (n_c),
    stored ``non_zeros`` and connected ``n_components``."""

    vectors: np.ndarray
    n_clusters: int
    non_zeros: int
    n_components: int


def cluster_graph_vectors(blocks: list, offsets: np.ndarray, factors: np.ndarray, eci: np.ndarray,
                          cluster_sizes: np.ndarray, k: int) -> SolvedClusterGraph:
    """The normalised cluster graph assembled from its summed ``blocks``
    (:func:`~lwec_tasks.core.pair_kernels.sparse_cluster_graph`, scaled by ``factors``) and its leading ``k``
    Tcut vectors (:func:`~lwec_tasks.core.lwgp.graph_cluster_vectors` with the clusters' ``eci`` and sizes)."""
    graph = sparse_cluster_graph(blocks, offsets, factors)
    vectors, n_components = graph_cluster_vectors(graph, eci, cluster_sizes, int(k))
    return SolvedClusterGraph(vectors, int(graph.shape[0]), int(graph.nnz), int(n_components))
