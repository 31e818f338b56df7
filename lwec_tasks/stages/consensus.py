"""Stage: the consensus labels — LWEA (exact, on microclusters) or LWGP (Tcut), k given or chosen.

Global quantities come from reductions of per-partition results, the microcluster table and the cluster graph;
the labels stay in the partitions. ``n_clusters="auto"`` is the library's choice of k
(:func:`lwec_tasks.core.auto_k.select_k`) on the base clusterings and the standardised features of the rows it
samples (all rows up to :data:`~lwec_tasks.core.k_criterion.SELECTION_SAMPLE`), gathered from the partitions.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lwec_tasks.core.auto_k import select_k
from lwec_tasks.core.defaults import is_auto
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.k_criterion import KSelection, selection_sample
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.validation import check_n_clusters
from lwec_tasks.executors.in_process import InProcess
from lwec_tasks.executors.progress import Progress, tree_reduce
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.generate import PartitionedEnsemble, gather_rows, gather_standardised
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.reductions import agreement_from_contingency, microcluster_graph_blocks
from lwec_tasks.stages.whole_table import (
    check_lwea_fits,
    cluster_graph_vectors,
    log_linkage_progress,
    lwea_on_microclusters,
    lwgp_on_microclusters,
)

if TYPE_CHECKING:
    from lwec_tasks.executors import Handle
    from lwec_tasks.stages.generate import FoundMicroclusters
    from lwec_tasks.stages.refinement import Refinement


@dataclass(frozen=True, eq=False)
class PartitionedLabels:
    """Consensus labels and what the later stages need of the consensus.

    Attributes
    ----------
    labels : handles of each partition's (n_p,) int64 labels
    sizes : (k,) rows per cluster id
    k : the number of clusters asked for (chosen, for "auto")
    quality : NMI/ARI against the ground truth (``{"nmi", "ari"}``), or empty (the default)
    cluster_vectors : LWGP's (n_c, k) Tcut vectors (what the labelling model needs), else None (the default)
    embedding_sums : LWGP's (k, k) sums of each cluster's normalised embedding rows (the labelling model's
        consensus centres), else None (the default)
    micro : LWEA's microclusters (what the labelling model needs), else None (the default)
    linkage : LWEA's dendrogram over the microclusters, (Ñ − 1, 4) scipy format, else None (the default)
    selection : the automatic choice of k, else None (the default)
    refinement : the naive-Bayes steps that gave the labels
        (:class:`~lwec_tasks.stages.refinement.Refinement`), else None (the default)
    """

    labels: list[Handle]
    sizes: np.ndarray
    k: int
    quality: dict[str, float] = field(default_factory=dict)
    cluster_vectors: np.ndarray | None = None
    embedding_sums: np.ndarray | None = None
    micro: FoundMicroclusters | None = None
    linkage: np.ndarray | None = None
    selection: KSelection | None = None
    refinement: Refinement | None = None


def sample_labels(table: PartitionedTable, labels: PartitionedLabels, positions: np.ndarray) -> np.ndarray:
    """The labels at sorted table ``positions`` (the cluster map's rows), taken from the partitions; (S,)."""
    if len(positions) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(gather_rows(table.session, labels.labels, positions, table.offsets, operator.getitem,
                                   "picture-labels").result(), dtype=np.int64)


def lwgp_labels(table: PartitionedTable, ensemble: PartitionedEnsemble, eci: np.ndarray, k: int, seed: int | None,
                log) -> PartitionedLabels:
    """LWGP as the library's :func:`lwec_tasks.core.lwgp.lwgp` computes it: the Tcut eigenproblem on the reduced
    cluster graph, then k-means on the embedded microclusters weighted by their counts (one task); each
    partition looks its rows' labels up."""
    session = table.session
    check_n_clusters(k, upper=ensemble.n_clusters_total, upper_name="the number of clusters in the ensemble")
    micro = ensemble.micro
    check_n_clusters(k, upper=micro.size, upper_name="the number of distinct label rows (microclusters)")
    if not np.all(eci > 0):
        raise LwecInputError(
            f"theta is too small: the ECI of {int(np.sum(eci == 0))} of {len(eci)} clusters underflows to 0, "
            "leaving objects without links in the bipartite graph; use a larger theta")
    factors = np.sqrt(eci / ensemble.cluster_sizes)
    blocks = session.submit(microcluster_graph_blocks, micro.table, ensemble.offsets, eci, name="graph")
    started = time.perf_counter()
    solved = session.submit(cluster_graph_vectors, blocks, ensemble.offsets, factors, eci, ensemble.cluster_sizes,
                            int(k), name="graph-eigenproblem").result()
    cluster_vectors = solved.vectors
    log.info("Assembled the %d × %d cluster graph (%d non-zeros, %d components) and solved its eigenproblem in "
             "%.2f s", solved.n_clusters, solved.n_clusters, solved.non_zeros, solved.n_components,
             time.perf_counter() - started)
    started = time.perf_counter()
    fitted = session.submit(lwgp_on_microclusters, micro.table, ensemble.offsets, eci, cluster_vectors, int(k),
                            derived_seed(base_seed(seed), int(k)), name="lwgp-microclusters")
    micro_labels = session.submit(operator.getitem, fitted, 0, name="lwgp-labels")
    embedding_sums = session.submit(operator.getitem, fitted, 1, name="lwgp-sums").result()
    log.info("k-means (k=%d) on %d weighted microclusters in %.2f s", k, micro.size, time.perf_counter() - started)
    labels = session.map(part.lookup, micro.index, name="labels", values=micro_labels)
    sizes, quality = counted_labels(table, labels, int(k), log)
    return PartitionedLabels(labels, sizes, int(k), quality, cluster_vectors=cluster_vectors,
                             embedding_sums=embedding_sums)


def lwea_labels(table: PartitionedTable, ensemble: PartitionedEnsemble, eci: np.ndarray, k: int,
                log) -> PartitionedLabels:
    """Exact LWEA: average linkage on the microclusters (counts as weights) on one worker, cut mapped back
    to the rows per partition; labels numbered by each cluster's first row, as in the library.

    Raises :class:`~lwec_tasks.core.errors.LwecMemoryError` when the microclusters' cluster counts do not
    fit in a worker's memory.
    """
    session = table.session
    micro = ensemble.micro
    session.submit(check_lwea_fits, micro.size, len(ensemble.offsets) - 1, name="memory-check").result()
    check_n_clusters(k, upper=micro.size, upper_name="the number of microclusters")
    started = time.perf_counter()
    # In this process the run's own log hears the progress; a Dask worker logs it on its own.
    in_process = isinstance(session, InProcess)
    report = functools.partial(log_linkage_progress, log=log) if in_process else log_linkage_progress
    cut = session.submit(lwea_on_microclusters, micro.table, ensemble.offsets, eci, int(k), table.n_rows,
                         report, name="lwea")
    leaf_cluster = session.submit(operator.getitem, cut, 0, name="lwea-leaves")
    split, kept, linkage = session.gather([session.submit(operator.getitem, cut, j, name="lwea-splits")
                                           for j in (1, 2, 3)])
    log.info("Average linkage on %d microclusters in %.2f s", micro.size, time.perf_counter() - started)
    if len(split):
        counts = np.array(session.gather(session.map(part.split_counts, micro.index, name="split-counts",
                                                     split=split)), dtype=np.int64).reshape(-1, len(split))
        before = np.vstack([np.zeros((1, len(split)), np.int64), np.cumsum(counts, axis=0)[:-1]])
    else:
        before = np.zeros((table.n_partitions, 0), dtype=np.int64)
    raw = [session.submit(part.lwea_raw_ids, index, leaf_cluster, split, kept, before[p], int(table.offsets[p]),
                          micro.size, name="lwea-raw") for p, index in enumerate(micro.index)]
    firsts = session.gather([session.submit(part.first_positions, r, int(table.offsets[p]), name="first-rows")
                             for p, r in enumerate(raw)])
    ids = np.concatenate([f[0] for f in firsts])
    positions = np.concatenate([f[1] for f in firsts])
    order = np.lexsort((positions, ids))  # by id, then position: each id's first row comes first
    ids, first = np.unique(ids[order], return_index=True)
    positions = positions[order][first]
    numbering = np.empty(len(ids), dtype=np.int64)
    numbering[np.argsort(positions, kind="stable")] = np.arange(len(ids))
    labels = session.map(part.renumber, raw, name="labels", ids=ids, labels=numbering)
    sizes, quality = counted_labels(table, labels, int(k), log)
    return PartitionedLabels(labels, sizes, int(k), quality, micro=micro, linkage=linkage)


def consensus_labels(table: PartitionedTable, ensemble: PartitionedEnsemble, eci: np.ndarray, method: str,
                     n_clusters: int | str, theta: float, seed: int | None, log) -> PartitionedLabels:
    """LWEA or LWGP labels into ``n_clusters`` clusters, or into the k the library chooses for "auto" (the
    choice runs as one task; the labels are then those of the fixed-k stage at the chosen k, as the library's
    automatic choice returns them)."""
    selection = None
    if is_auto(n_clusters):
        started = time.perf_counter()
        positions = selection_sample(table.n_rows, seed)
        positions = np.arange(table.n_rows) if positions is None else positions
        rows = gather_rows(table.session, ensemble.codes, positions, table.offsets, part.code_rows, "k-selection-rows")
        features = gather_standardised(table, positions, "k-selection-features") if table.holds_features else None
        selection = table.session.submit(select_k, rows, method, theta, random_state=seed, features=features,
                                         name="choose-k").result()
        n_clusters = int(selection.k)
        best = int(np.argmax(selection.scores))
        log.info("Chose k=%d among k=%d..%d by %s (%.4f) in %.2f s", n_clusters, int(selection.ks.min()),
                 int(selection.ks.max()), selection.criterion, float(selection.scores[best]),
                 time.perf_counter() - started)
    if method == "lwea":
        result = lwea_labels(table, ensemble, eci, n_clusters, log)
    else:
        result = lwgp_labels(table, ensemble, eci, n_clusters, seed, log)
    return result if selection is None else dataclasses.replace(result, selection=selection)


def counted_labels(table: PartitionedTable, labels: list, k: int, log, what: str = "Consensus"
                   ) -> tuple[np.ndarray, dict[str, float]]:
    """((k,) cluster sizes, agreement with the ground truth or empty) of the partitions' ``labels`` (handles of
    (n_p,) labels in 0..k−1), from per-partition counts; logged as ``what``."""
    session = table.session
    progress = Progress(log, "consensus labels")
    sizes_f = session.map(np.bincount, labels, name="label-sizes", minlength=k)
    progress.wait(sizes_f, rows=table.counts)
    sizes = np.sum(session.gather(sizes_f), axis=0)
    quality = {}
    if table.plan.label_column:
        counts = session.map(part.truth_counts, table.keys, labels, name="truth-counts")
        contingency = tree_reduce(session, counts, part.add_counts, "truth-sum").result()
        if len(contingency):
            quality = agreement_from_contingency(contingency.unstack(fill_value=0).to_numpy())
    log.info("%s: %d clusters (requested %d); sizes from %d to %d", what, int((sizes > 0).sum()), k,
             int(sizes[sizes > 0].min()), int(sizes.max()))
    return sizes, quality
