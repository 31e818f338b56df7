"""Stage: stable cluster ids — the labels renumbered to agree with the source table's latest earlier run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from lwec_tasks.executors.progress import Progress
from lwec_tasks.io.catalog import describe_source
from lwec_tasks.io.label_store import LabelStore
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.consensus import PartitionedLabels
from lwec_tasks.stages.planning import earlier_run
from lwec_tasks.stages.read import PartitionedTable


@dataclass(frozen=True, eq=False)
class StableIds:
    """The ids a run writes.

    Attributes
    ----------
    ids : (k,) int64 the id of each consensus cluster 0..k−1
    aligned_to : the earlier run's key; default None (none, or turned off)
    agreement : the share of the objects both runs labelled that keep their id; default None (no earlier run or
        shared object)
    n_shared : those objects; default 0
    jaccard : each id that kept an earlier cluster's id → its Jaccard overlap with that cluster over the objects
        both runs labelled (:func:`lwec_tasks.core.stability.matched_jaccard`); default empty (no earlier run)
    """

    ids: np.ndarray
    aligned_to: str | None = None
    agreement: float | None = None
    n_shared: int = 0
    jaccard: dict[int, float] = field(default_factory=dict)


def stable_ids(table: PartitionedTable, labels: PartitionedLabels, store: LabelStore,
               source_table: str, run_key: str, log) -> tuple[PartitionedLabels, StableIds]:
    """Renumber the labels to agree with the source table's latest earlier run in ``store``, as the
    library does (:func:`lwec_tasks.core.renumber.match_clusters`), without the ids leaving the partitions.

    The flow process finds the earlier run (small queries on the runs table); each worker reads the earlier
    labels of its own id range and returns them with its (k × k_earlier) overlap counts; the ranges cover
    every id, so the labels met are the earlier run's cluster ids. The flow sums the counts, a task matches the
    clusters and the workers apply the (k,) renaming. Returns the renumbered labels (sizes
    indexed by the new ids) and the ids; unchanged labels when there is no earlier run.
    """
    from lwec_tasks.core.renumber import ids_per_cluster, match_clusters
    from lwec_tasks.core.stability import matched_jaccard

    session = table.session
    k = len(labels.sizes)
    output_table = store.names
    earlier = earlier_run(store.engine, output_table, source_table, run_key)
    if earlier is not None:
        stored = describe_source(store.engine, output_table.rows if earlier.run is not None else output_table.view)
    if earlier is None:
        log.info("No earlier run of table %r in %r: cluster ids are 0..%d", source_table, output_table, k - 1)
        return labels, StableIds(np.arange(k, dtype=np.int64))
    overlaps = session.map(part.previous_overlap, table.specs, table.keys, labels.labels, name="earlier-overlap",
                           stored=stored, earlier=earlier, k=k)
    Progress(log, f"overlap with run {earlier.run_key!r}").wait(overlaps, rows=table.counts)
    parts = session.gather(overlaps)
    previous_ids = np.unique(np.concatenate([p.earlier for p in parts] + [np.zeros(0, np.int64)]))
    overlap = np.zeros((k, len(previous_ids)), dtype=np.int64)
    for p in parts:
        overlap[:, np.searchsorted(previous_ids, p.earlier)] += p.counts
    present = np.flatnonzero(labels.sizes > 0)
    # where the tasks run: the assignment imports scipy.optimize, which a Dask run's flow process need not load
    matching = session.submit(match_clusters, overlap[present], present, previous_ids, name="match-clusters").result()
    ids = ids_per_cluster(dict(zip(present.tolist(), matching.ids.tolist())), k)
    agreement = None if matching.n_shared == 0 else float(matching.agreement)
    log.info("Cluster ids aligned to run %r: %d of %d clusters matched; %s of the %d objects both runs labelled "
             "keep their id", earlier.run_key, matching.n_matched, k,
             "none" if agreement is None else f"{agreement:.1%}", matching.n_shared)
    shared_ids = session.share(ids)
    renamed = session.map(part.lookup, labels.labels, name="stable-ids", values=shared_ids)
    sizes = np.zeros(int(ids.max()) + 1, dtype=labels.sizes.dtype)
    sizes[ids] = labels.sizes
    embedding_sums = labels.embedding_sums
    if embedding_sums is not None:
        embedding_sums = np.zeros((len(sizes), labels.embedding_sums.shape[1]))
        embedding_sums[ids] = labels.embedding_sums
    refinement = labels.refinement.renumbered(ids, len(sizes)) if labels.refinement is not None else None
    return (dataclasses.replace(labels, labels=renamed, sizes=sizes, embedding_sums=embedding_sums,
                                refinement=refinement),
            StableIds(ids, earlier.run_key, agreement, matching.n_shared,
                      matched_jaccard(overlap[present], ids[present], previous_ids) if matching.n_shared else {}))
