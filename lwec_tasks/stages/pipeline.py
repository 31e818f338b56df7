"""The consensus pipeline on a Dask cluster, stage by stage, as the flow process drives it.

The flow process plans partitions, sends each worker a :class:`~lwec_tasks.stages.partitions.
PartitionSpec`, and from then on only handles small things: column moments, the sample positions, the
k-means models, the cluster sizes, the (M, n_c) entropy terms, the sparse n_c × n_c cluster graph and its
eigenvectors, k-means partial sums, microcluster cuts, label counts. The N × d features, the N × M base
labels, the N × k embedding and the N labels stay on the workers until the workers write the labels.

Stages (each one Prefect task in :mod:`lwec_tasks.tasks.distributed`): :func:`load_table`,
:func:`base_clusterings`, :func:`reliability`, :func:`lwgp_labels` | :func:`lwea_labels`,
:func:`write_labels`. ``log`` is any logger (the Prefect run logger in the flow).
"""

from __future__ import annotations

import operator
import time

import numpy as np
import sqlalchemy as sa

from lwec_tasks.core import lwgp as lwgp_core
from lwec_tasks.core.defaults import is_auto
from lwec_tasks.core.eci import eci_from_uncertainty
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.spectral import graph_components, leading_eigenvectors, unit_eigenvectors
from lwec_tasks.core.validation import check_n_clusters
from lwec_tasks.executors.progress import Progress, tree_reduce
from lwec_tasks.io import ensure_latest_view, open_engine, prune_runs, staged_run_matches
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.base_clusterings import base_plan, fit_base_model
from lwec_tasks.stages.consensus import (
    assemble_graph,
    check_lwea_fits,
    choose_k,
    fit_embedding_kmeans,
    lwea_on_microclusters,
    lwgp_on_microclusters,
)
from lwec_tasks.stages.planning import (
    RunMetadata,
    create_staging_table,
    drop_table_quietly,
    earlier_run_ids,
    publish_labels,
    staging_table_name,
)
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.reductions import (
    Moments,
    add_tables,
    agreement_from_contingency,
    merge_microclusters,
    split_entropy_terms,
)

#: Rows kept (a seeded uniform sample) for the cluster map, as the local path's ``PICTURE_SAMPLE``.
PICTURE_SAMPLE = 2_000

#: scikit-learn's default relative tolerance of k-means, which LWGP's refinement on all rows uses.
KMEANS_TOL = 1e-4


class PartitionedEnsemble:
    """The base clusterings: ``codes`` (futures of (M, n_p) int32 per-column codes) and what the local
    Ensemble knows about its clusters (``ks``, ``offsets``, ``cluster_sizes``, ``cluster_label``,
    ``cluster_column``); ``n_microclusters`` once they are counted; for the cluster map ``sample`` (S,) the
    sorted table positions of a seeded sample of S ≤ :data:`PICTURE_SAMPLE` rows and ``sample_rows`` (S, d)
    their features as clustered."""

    def __init__(self, **values):
        self.n_microclusters = None
        self.__dict__.update(values)

    @property
    def n_columns(self) -> int:
        return len(self.ks)

    @property
    def n_clusters_total(self) -> int:
        return int(self.offsets[-1])


class PartitionedLabels:
    """Consensus labels: ``labels`` (futures of (n_p,) labels), ``sizes`` (rows per cluster id), ``quality``
    (NMI/ARI against ground truth, or empty); what the labelling model needs of the consensus:
    ``cluster_vectors`` (LWGP's (n_c, k) Tcut vectors, else None) and ``micro`` (LWEA's microclusters, else
    None); ``linkage`` LWEA's dendrogram over the microclusters, (Ñ − 1, 4) scipy format (else None);
    ``k`` the number of clusters asked for (chosen, for "auto") and ``selection`` the automatic choice
    (:class:`~lwec_tasks.core.auto_k.KSelection`, else None)."""

    def __init__(self, **values):
        self.cluster_vectors = None
        self.micro = None
        self.linkage = None
        self.k = None
        self.selection = None
        self.__dict__.update(values)


def _local_positions(positions: np.ndarray, offsets: np.ndarray, p: int) -> np.ndarray:
    """The entries of sorted table ``positions`` that fall in partition p, as row indices within it."""
    start, stop = np.searchsorted(positions, [offsets[p], offsets[p + 1]])
    return positions[start:stop] - offsets[p]


def _gather_rows(session, parts: list, positions: np.ndarray, offsets: np.ndarray, take, name: str,
                 **kwargs):
    """A future of the rows at sorted table ``positions``, in that order, taken from the partitions."""
    pieces = []
    for p, data in enumerate(parts):
        local = _local_positions(positions, offsets, p)
        if len(local):
            pieces.append(session.submit(take, data, local, name=name, **kwargs))
    return session.submit(part.concatenate, *pieces, name=f"{name}-concat")


def base_clusterings(table: PartitionedTable, ensemble_size: int, seed: int | None, log) -> PartitionedEnsemble:
    """M k-means base clusterings by the local rule: each model fitted on the rows the local path fits it on
    (all rows, or above ``LARGE_N`` a seeded sample per clustering), every partition assigned to the models.

    The features are released from the workers' memory afterwards; a seeded sample of at most
    :data:`PICTURE_SAMPLE` of the gathered rows is kept for the cluster map (see :func:`picture_positions`).
    """
    session = table.session
    plan = base_plan(table.n_rows, ensemble_size, seed)
    positions = plan.positions
    rows = _gather_rows(session, table.rows, positions, table.offsets, part.standardised_rows, "base-sample",
                        mean=table.mean, scale=table.scale)
    picture = picture_positions(positions, seed)
    picture_rows = session.submit(part.take, rows, np.searchsorted(positions, picture), name="picture-rows")
    shared_positions = session.share(positions)
    models = session.map(fit_base_model, plan.samples, plan.ks.tolist(), plan.seeds.tolist(), name="fit-base",
                         rows=rows, positions=shared_positions)
    Progress(log, f"fit {len(models)} k-means models on {len(plan.samples[0])} rows each").wait(
        models, rows=[len(sample) for sample in plan.samples])
    sample_rows = picture_rows.result()
    del picture_rows
    raw = session.map(part.assign_partition, table.rows, name="assign", mean=table.mean, scale=table.scale,
                      models=models)
    Progress(log, "assign rows to base clusters").wait(raw, rows=table.counts)
    sizes = tree_reduce(session, session.map(part.column_sizes, raw, name="sizes", ks=plan.ks), add_tables,
                        "sizes-sum").result()
    present = [np.flatnonzero(s) for s in sizes]
    if any(len(labels) < len(s) for labels, s in zip(present, sizes)):
        lookups = []
        for labels, s in zip(present, sizes):
            lookup = np.full(len(s), -1, dtype=np.int32)
            lookup[labels] = np.arange(len(labels), dtype=np.int32)
            lookups.append(session.share(lookup))
        raw = session.map(part.compact_codes, raw, name="compact", lookups=lookups)
    table.rows = None  # the features are no longer needed: free the workers' memory
    ks = np.array([len(labels) for labels in present], dtype=np.int64)
    ensemble = PartitionedEnsemble(
        codes=raw, ks=ks, offsets=np.concatenate([[0], np.cumsum(ks)]).astype(np.int64),
        cluster_sizes=np.concatenate([s[labels] for labels, s in zip(present, sizes)]).astype(np.int64),
        cluster_label=np.concatenate(present).astype(np.int64),
        cluster_column=np.repeat(np.arange(len(ks)), ks), n_objects=table.n_rows, models=models, sample=picture,
        sample_rows=sample_rows)
    log.info("Generated %d base clusterings of %d objects: %d clusters in total (k per clustering %d–%d)",
             len(ks), table.n_rows, ensemble.n_clusters_total, int(ks.min()), int(ks.max()))
    return ensemble


def picture_positions(positions: np.ndarray, seed: int | None) -> np.ndarray:
    """A seeded sample of at most :data:`PICTURE_SAMPLE` of the sorted table ``positions``, sorted.

    Drawn as the local path draws its picture sample, so when ``positions`` are all N rows (N ≤ ``LARGE_N``)
    and the seed is given, these are the rows of the local run's cluster map.
    """
    rng = np.random.default_rng(base_seed(seed))
    chosen = rng.choice(len(positions), size=min(PICTURE_SAMPLE, len(positions)), replace=False)
    return np.asarray(positions, dtype=np.int64)[np.sort(chosen)]


def sample_labels(table: PartitionedTable, labels: PartitionedLabels, positions: np.ndarray) -> np.ndarray:
    """The labels at sorted table ``positions`` (the cluster map's rows), taken from the partitions; (S,)."""
    if len(positions) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(_gather_rows(table.session, labels.labels, positions, table.offsets, part.take,
                                   "picture-labels").result(), dtype=np.int64)


def reliability(table: PartitionedTable, ensemble: PartitionedEnsemble, theta: float, log) -> tuple[np.ndarray, np.ndarray]:
    """(uncertainty H^Π, ECI) of every base cluster, from the summed pairwise contingency tables."""
    session = table.session
    tables = session.map(part.count_tables, ensemble.codes, name="contingency", ks=ensemble.ks)
    total = tree_reduce(session, tables, add_tables, "contingency-sum")
    terms = session.submit(split_entropy_terms, total, ensemble.offsets, ensemble.cluster_sizes, name="entropies")
    Progress(log, "contingency tables").wait(tables, rows=table.counts)
    uncertainty = terms.result().sum(axis=0)
    eci = eci_from_uncertainty(uncertainty, theta, ensemble.n_columns)
    log.info("ECI (θ=%g) over %d clusters: min %.3f, median %.3f, max %.3f", theta, len(eci), eci.min(),
             np.median(eci), eci.max())
    return uncertainty, eci


class _Microclusters:
    """The microcluster table (a future), its size and each partition's row → microcluster index (futures)."""

    def __init__(self, table, size: int, index: list):
        self.table, self.size, self.index = table, size, index


def _microclusters(table: PartitionedTable, ensemble: PartitionedEnsemble, log, for_lwea: bool) -> _Microclusters:
    """The distinct label rows with their counts (a distributed group-by) and each row's microcluster."""
    session = table.session
    parts = session.map(part.microclusters, ensemble.codes, name="microclusters")
    progress = Progress(log, "microclusters")
    progress.wait(parts, rows=table.counts)
    if for_lwea:
        largest = max(session.gather(session.map(len, parts, name="count")))
        session.submit(check_lwea_fits, largest, name="memory-check").result()
    merged = tree_reduce(session, parts, merge_microclusters, "microclusters-merge")
    size = int(session.submit(len, merged, name="count").result())
    index = session.map(part.micro_index, ensemble.codes, name="micro-index", table=merged)
    ensemble.n_microclusters = size
    log.info("Found %d microclusters (distinct label rows) among %d rows", size, table.n_rows)
    return _Microclusters(merged, size, index)


def lwgp_labels(table: PartitionedTable, ensemble: PartitionedEnsemble, eci: np.ndarray, k: int, seed: int | None,
                log) -> PartitionedLabels:
    """LWGP: the Tcut eigenproblem on the reduced cluster graph, the embedding and k-means per partition.

    Follows the local :func:`lwec_tasks.core.lwgp.lwgp` regime by regime: up to ``MICROCLUSTER_LIMIT``
    rows, k-means runs on the weighted microclusters; above it, on a seeded sample of embedded rows
    (the same positions as locally), refined by Lloyd iterations over all partitions.
    """
    session = table.session
    check_n_clusters(k, upper=ensemble.n_clusters_total, upper_name="the number of clusters in the ensemble")
    micro = None
    if table.n_rows <= lwgp_core.MICROCLUSTER_LIMIT:
        micro = _microclusters(table, ensemble, log, for_lwea=False)
        check_n_clusters(k, upper=micro.size, upper_name="the number of distinct label rows (microclusters)")
    if not np.all(eci > 0):
        raise LwecInputError(
            f"theta is too small: the ECI of {int(np.sum(eci == 0))} of {len(eci)} clusters underflows to 0, "
            "leaving objects without links in the bipartite graph; use a larger theta")
    seed_k = derived_seed(base_seed(seed), int(k))
    factors = np.sqrt(eci / ensemble.cluster_sizes)
    shared_eci = session.share(eci)
    blocks = session.map(part.graph_blocks, ensemble.codes, name="graph", offsets=ensemble.offsets, eci=shared_eci)
    graph = session.submit(assemble_graph, tree_reduce(session, blocks, add_tables, "graph-sum"), ensemble.offsets,
                           factors, name="graph-assemble")
    Progress(log, "cluster graph").wait(blocks, rows=table.counts)
    graph = graph.result()
    started = time.perf_counter()
    n_components, component = graph_components(graph)
    unit_basis = unit_eigenvectors(eci * ensemble.cluster_sizes, component, n_components)
    cluster_vectors = leading_eigenvectors(graph, int(k), unit_basis) * factors[:, None]
    log.info("Solved the %d × %d cluster graph's eigenproblem (%d non-zeros, %d components) in %.2f s",
             graph.shape[0], graph.shape[1], graph.nnz, n_components, time.perf_counter() - started)
    del graph
    if micro is not None:
        micro_labels = session.submit(lwgp_on_microclusters, micro.table, ensemble.offsets, eci, cluster_vectors,
                                      int(k), seed_k, name="lwgp-microclusters")
        labels = session.map(part.lookup, micro.index, name="labels", values=micro_labels)
    else:
        labels = _kmeans_on_embedding(table, ensemble, shared_eci, session.share(cluster_vectors), int(k), seed_k,
                                      log)
    result = _finish(table, labels, int(k), log)
    result.cluster_vectors = cluster_vectors
    return result


def _kmeans_on_embedding(table: PartitionedTable, ensemble: PartitionedEnsemble, eci, cluster_vectors, k: int, seed: int,
                         log) -> list:
    """k-means of the row-normalised embedding as the local LWGP does it on rows: the replicates on a seeded
    sample (all rows up to ``SAMPLE_THRESHOLD``), then — for a sample — Lloyd iterations on every row.

    ``eci`` and ``cluster_vectors`` are futures of the (n_c,) ECI and the (n_c, k) transfer matrix."""
    session = table.session
    embeddings = session.map(part.embed, ensemble.codes, name="embed", offsets=ensemble.offsets, eci=eci,
                             cluster_vectors=cluster_vectors)
    Progress(log, "embedding").wait(embeddings, rows=table.counts)
    sampled = table.n_rows > lwgp_core.SAMPLE_THRESHOLD
    if sampled:  # the positions the local k-means samples (lwec_tasks.core.lwgp.kmeans_labels)
        positions = np.sort(np.random.default_rng(seed).choice(table.n_rows, lwgp_core.SAMPLE_SIZE, replace=False))
    else:
        positions = np.arange(table.n_rows)
    sample = _gather_rows(session, embeddings, positions, table.offsets, part.take, "embedding-sample")
    started = time.perf_counter()
    centres = session.submit(fit_embedding_kmeans, sample, k, seed, name="fit-kmeans").result()
    log.info("Fitted k-means (k=%d) on %d embedded rows in %.2f s", k, len(positions), time.perf_counter() - started)
    if not sampled:
        return session.map(part.lloyd_labels, embeddings, name="labels", centres=centres, shift=np.zeros(k))
    return _refine(table, embeddings, centres, log)


def _refine(table: PartitionedTable, embeddings: list, centres: np.ndarray, log) -> list:
    """scikit-learn's Lloyd iterations (``KMeans(init=centres, n_init=1)``) over all partitions.

    Rows are centred by the global mean as scikit-learn centres them; iterations stop when no label
    changes or the centres move less than the tolerance (relative to the mean column variance), at most
    the core's ``KMEANS_MAX_ITER``. A cluster left empty takes the row farthest from its centre.
    """
    session = table.session
    moments = Moments(0, np.zeros(centres.shape[1]), np.zeros(centres.shape[1]))
    for m in session.gather(session.map(part.row_moments, embeddings, name="moments")):
        moments = moments + m
    shift = moments.mean
    tol = float(np.mean(moments.variance)) * KMEANS_TOL
    centres = centres - shift
    k = len(centres)
    labels: list = [None] * len(embeddings)
    strict, iterations = False, 0
    started = time.perf_counter()
    while iterations < lwgp_core.KMEANS_MAX_ITER:
        iterations += 1
        steps = [session.submit(part.lloyd_step, e, previous, centres, shift, k, name="lloyd")
                 for e, previous in zip(embeddings, labels)]
        labels = [session.submit(operator.getitem, s, 0, name="lloyd-labels") for s in steps]
        partials = session.gather([session.submit(operator.getitem, s, 1, name="lloyd-sums") for s in steps])
        sums = np.sum([p.sums for p in partials], axis=0)
        weights = np.sum([p.counts for p in partials], axis=0)
        empty = np.flatnonzero(weights == 0)
        if len(empty):
            _relocate(empty, partials, sums, weights)
        updated = np.divide(sums, weights[:, None], out=centres.copy(), where=weights[:, None] > 0)
        shift_total = float(((updated - centres) ** 2).sum())
        changed = sum(p.changed for p in partials)
        centres = updated
        if changed == 0:
            strict = True
            break
        if shift_total <= tol:
            break
    seconds = time.perf_counter() - started
    log.info("k-means refinement on all rows: %d Lloyd iterations in %.2f s (%.0f rows/s per iteration), %s",
             iterations, seconds, iterations * table.n_rows / max(seconds, 1e-9),
             "labels stable" if strict else "centre shift within tolerance or iteration limit")
    if strict:
        return labels
    return session.map(part.lloyd_labels, embeddings, name="labels", centres=centres, shift=shift)


def _relocate(empty: np.ndarray, partials: list, sums: np.ndarray, weights: np.ndarray) -> None:
    """scikit-learn's rule for empty clusters: each takes one of the rows farthest from their centre."""
    distances = np.concatenate([p.far_distances for p in partials])
    rows = np.concatenate([p.far_rows for p in partials])
    owners = np.concatenate([p.far_labels for p in partials])
    for cluster, j in zip(empty, np.argsort(-distances, kind="stable")[:len(empty)]):
        sums[owners[j]] -= rows[j]
        weights[owners[j]] -= 1
        sums[cluster] = rows[j]
        weights[cluster] = 1


def lwea_labels(table: PartitionedTable, ensemble: PartitionedEnsemble, eci: np.ndarray, k: int, log) -> PartitionedLabels:
    """Exact LWEA: average linkage on the microclusters (counts as weights) on one worker, cut mapped back
    to the rows per partition; labels numbered by each cluster's first row, as locally.

    Raises :class:`~lwec_tasks.core.errors.LwecMemoryError` when the microclusters' distance matrix does
    not fit in a worker's memory.
    """
    session = table.session
    micro = _microclusters(table, ensemble, log, for_lwea=True)
    check_n_clusters(k, upper=micro.size, upper_name="the number of microclusters")
    started = time.perf_counter()
    cut = session.submit(lwea_on_microclusters, micro.table, ensemble.offsets, eci, int(k), table.n_rows,
                         name="lwea")
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
    order = np.lexsort((positions, ids))
    ids, positions = ids[order], positions[order]
    first_of = np.concatenate([[True], ids[1:] != ids[:-1]])
    ids, positions = ids[first_of], positions[first_of]
    numbering = np.empty(len(ids), dtype=np.int64)
    numbering[np.argsort(positions, kind="stable")] = np.arange(len(ids))
    labels = session.map(part.renumber, raw, name="labels", ids=ids, labels=numbering)
    result = _finish(table, labels, int(k), log)
    result.micro, result.linkage = micro, linkage
    return result


def consensus_labels(table: PartitionedTable, ensemble: PartitionedEnsemble, eci: np.ndarray, method: str,
                     n_clusters: int | str, theta: float, seed: int | None, log) -> PartitionedLabels:
    """LWEA or LWGP labels into ``n_clusters`` clusters, or into the k the library chooses for "auto" (the
    choice runs as one task; the labels are then those of the fixed-k stage at the chosen k, as the library's
    automatic choice returns them)."""
    selection = None
    if is_auto(n_clusters):
        started = time.perf_counter()
        selection = table.session.submit(choose_k, ensemble.codes, method, theta, seed, name="choose-k").result()
        n_clusters = int(selection.k)
        best = int(np.argmax(selection.scores))
        log.info("Chose k=%d among k=%d..%d by %s (%.4f) in %.2f s", n_clusters, int(selection.ks.min()),
                 int(selection.ks.max()), selection.criterion, float(selection.scores[best]),
                 time.perf_counter() - started)
    if method == "lwea":
        result = lwea_labels(table, ensemble, eci, n_clusters, log)
    else:
        result = lwgp_labels(table, ensemble, eci, n_clusters, seed, log)
    result.k, result.selection = int(n_clusters), selection
    return result


def _finish(table: PartitionedTable, labels: list, k: int, log) -> PartitionedLabels:
    """Cluster sizes and agreement with the ground truth, from per-partition counts."""
    session = table.session
    progress = Progress(log, "consensus labels")
    sizes_f = session.map(part.label_sizes, labels, name="label-sizes", k=k)
    progress.wait(sizes_f, rows=table.counts)
    sizes = np.sum(session.gather(sizes_f), axis=0)
    quality = {}
    if table.plan.label_column:
        counts = session.map(part.truth_counts, table.keys, labels, name="truth-counts")
        contingency = tree_reduce(session, counts, part.add_counts, "truth-sum").result()
        if len(contingency):
            quality = agreement_from_contingency(contingency.unstack(fill_value=0).to_numpy())
    log.info("Consensus: %d clusters (requested %d); sizes from %d to %d", int((sizes > 0).sum()), k,
             int(sizes[sizes > 0].min()), int(sizes.max()))
    return PartitionedLabels(labels=labels, sizes=sizes, quality=quality)


#: LWEA's labelling model keeps the microcluster lookup (see :mod:`lwec_tasks.core.placement`) up to this many
#: microclusters (Ñ × M int32 in the model); beyond it the model places rows by the average-link rule alone.
MODEL_MICROCLUSTER_LIMIT = 1_000_000


def labelling_model(table: PartitionedTable, ensemble: PartitionedEnsemble, labels: PartitionedLabels, eci: np.ndarray, method: str,
                    theta: float, n_clusters: int, seed: int | None, standardize: bool, log):
    """The run's :class:`~lwec_tasks.core.placement.Placement` for the written ``labels``, as
    :func:`~lwec_tasks.core.placement.build_placement` builds it locally, from small reductions: the base
    k-means centres, the standardisation and the ECI the flow holds; per-partition cluster sizes and, for
    LWEA, the (n_c × k) base/consensus overlap counts (plus the microcluster lookup up to
    :data:`MODEL_MICROCLUSTER_LIMIT` microclusters), for LWGP the sums of each cluster's normalised
    embedding rows (the consensus centres are their size-weighted means).
    """
    from lwec_tasks.core.placement import Placement, Standardisation

    session = table.session
    started = time.perf_counter()
    centres, centre_codes = [], []
    for m, model in enumerate(session.gather(ensemble.models)):
        start, stop = int(ensemble.offsets[m]), int(ensemble.offsets[m + 1])
        column_centres = np.ascontiguousarray(model.cluster_centers_, dtype=np.float64)
        codes = np.full(len(column_centres), -1, dtype=np.int64)
        codes[ensemble.cluster_label[start:stop]] = np.arange(start, stop)
        centres.append(column_centres)
        centre_codes.append(codes)
    cluster_ids = np.flatnonzero(labels.sizes > 0).astype(np.int64)
    vectors = labels.cluster_vectors if method == "lwgp" else None
    parts = session.map(part.model_sums, ensemble.codes, labels.labels, name="model-sums", cluster_ids=cluster_ids,
                        offsets=ensemble.offsets, eci=session.share(eci),
                        cluster_vectors=None if vectors is None else session.share(vectors),
                        n_clusters_total=ensemble.n_clusters_total)
    sizes, sums = tree_reduce(session, parts, add_tables, "model-sums-sum").result()
    state: dict[str, np.ndarray] = {}
    if vectors is None:
        state["shares"] = sums / sizes[None, :]
        micro = labels.micro
        if micro is not None and micro.size <= MODEL_MICROCLUSTER_LIMIT:
            micro_labels = np.full(micro.size, -1, dtype=np.int64)
            for ids, first in session.gather(session.map(part.first_labels, micro.index, labels.labels,
                                                         name="micro-labels")):
                unset = micro_labels[ids] < 0
                micro_labels[ids[unset]] = first[unset]
            rows = session.submit(operator.attrgetter("rows"), micro.table, name="micro-rows").result()
            state["micro_codes"] = (rows.astype(np.int64) + ensemble.offsets[:-1]).astype(np.int32)
            state["micro_labels"] = np.searchsorted(cluster_ids, micro_labels)
    else:
        state["vectors"] = np.ascontiguousarray(vectors)
        state["centres"] = sums / sizes[:, None]
    placement = Placement(
        feature_columns=tuple(table.plan.feature_columns),
        standardisation=Standardisation(table.mean, table.scale) if standardize else None,
        centres=tuple(centres), centre_codes=tuple(centre_codes), eci=np.ascontiguousarray(eci, dtype=np.float64),
        method=method, theta=float(theta), cluster_ids=cluster_ids, state=state, n_clusters=int(n_clusters),
        seed=None if seed is None else int(seed))
    shared = session.share(placement)
    given_back = sum(session.gather(session.map(part.labels_given_back, ensemble.codes, labels.labels,
                                                name="model-check", offsets=ensemble.offsets, placement=shared)))
    share = given_back / max(table.n_rows, 1)
    log.info("Labelling model built: %s placement over %d base clusterings, %d clusters (%.2f s); it gives back "
             "%.1f%% of the run's labels", method.upper(), placement.ensemble_size, len(cluster_ids),
             time.perf_counter() - started, 100 * share)
    return placement, share


class StableIds:
    """The ids a Dask run writes: ``ids`` (k,) the id of each consensus cluster 0..k−1, ``aligned_to`` the
    earlier run's key (None: none, or turned off), ``agreement`` the share of the objects both runs labelled
    that keep their id (None without an earlier run or shared object), ``n_shared`` those objects."""

    def __init__(self, ids: np.ndarray, aligned_to: str | None = None, agreement: float | None = None,
                 n_shared: int = 0):
        self.ids, self.aligned_to, self.agreement, self.n_shared = ids, aligned_to, agreement, n_shared


def stable_ids(table: PartitionedTable, labels: PartitionedLabels, output_table: str, source_table: str, run_key: str,
               log) -> tuple[PartitionedLabels, StableIds]:
    """Renumber the labels to agree with the source table's latest earlier run in ``output_table``, as the
    local path does (:func:`lwec_tasks.core.renumber.match_clusters`), without the ids leaving the workers.

    The flow process finds the earlier run's key and cluster ids (two small queries); each worker reads the
    earlier labels of its own id range and returns its (k × k_earlier) overlap counts; the flow sums them,
    matches the clusters and the workers apply the (k,) renaming. Returns the renumbered labels (sizes
    indexed by the new ids) and the ids; unchanged labels when there is no earlier run.
    """
    from lwec_tasks.core.renumber import ids_per_cluster, match_clusters

    session = table.session
    k = len(labels.sizes)
    engine = open_engine(table.database_url)
    try:
        earlier = earlier_run_ids(engine, output_table, source_table, run_key)
    finally:
        engine.dispose()
    if earlier is None:
        log.info("No earlier run of table %r in %r: cluster ids are 0..%d", source_table, output_table, k - 1)
        return labels, StableIds(np.arange(k, dtype=np.int64))
    overlaps = session.map(part.previous_overlap, table.specs, table.keys, labels.labels, name="earlier-overlap",
                           labels_table=output_table, run_key=earlier.run_key, k=k)
    Progress(log, f"overlap with run {earlier.run_key!r}").wait(overlaps, rows=table.counts)
    parts = session.gather(overlaps)
    previous_ids = np.union1d(earlier.cluster_ids, np.concatenate([p.earlier for p in parts] + [np.zeros(0, int)]))
    overlap = np.zeros((k, len(previous_ids)), dtype=np.int64)
    for p in parts:
        overlap[:, np.searchsorted(previous_ids, p.earlier)] += p.counts
    present = np.flatnonzero(labels.sizes > 0)
    matching = match_clusters(overlap[present], present, previous_ids)
    ids = ids_per_cluster(dict(zip(present.tolist(), matching.ids.tolist())), k)
    agreement = None if matching.n_shared == 0 else float(matching.agreement)
    log.info("Cluster ids aligned to run %r: %d of %d clusters matched; %s of the %d objects both runs labelled "
             "keep their id", earlier.run_key, matching.n_matched, k,
             "none" if agreement is None else f"{agreement:.1%}", matching.n_shared)
    shared_ids = session.share(ids)
    renamed = session.map(part.lookup, labels.labels, name="stable-ids", values=shared_ids)
    sizes = np.zeros(int(ids.max()) + 1, dtype=labels.sizes.dtype)
    sizes[ids] = labels.sizes
    return (PartitionedLabels(**{**labels.__dict__, "labels": renamed, "sizes": sizes}),
            StableIds(ids, earlier.run_key, agreement, matching.n_shared))


def write_labels(table: PartitionedTable, labels: list, output_table: str, run: RunMetadata, log,
                 keep_runs: int | None = None) -> int:
    """Each partition's labels (``labels``: one handle of (n_p,) ids per partition) go into a fresh staging table; one transaction then replaces the run key's rows
    of the labels table with them and, with ``keep_runs``, deletes the source table's runs beyond the
    ``keep_runs`` most recent. The staging table is dropped in every case; when any partition fails, the
    labels table is left as it was. Afterwards the view ``<output_table>_latest`` is created if missing.

    When the labels table already holds exactly these rows under this run key, with the same parameters
    (a rerun after a failure further on, e.g. at the MLflow step), nothing is rewritten and 0 is returned.
    """
    session = table.session
    id_type = table.id_type if table.id_type is not None else sa.BigInteger()
    engine = open_engine(table.database_url)
    staging = staging_table_name(output_table)
    started = time.perf_counter()
    try:
        staged = create_staging_table(engine, staging, id_type)
        writes = [session.submit(part.write_partition, table.database_url, staging, keys, values, name="write")
                  for keys, values in zip(table.keys, labels)]
        Progress(log, "write labels to the staging table").wait(writes, rows=table.counts, settle=True)
        if staged_run_matches(engine, output_table, staged, run, table.n_rows):
            if keep_runs is not None:
                prune_runs(engine, output_table, run.source_table, keep_runs, keep_run_key=run.run_key)
            log.info("Labels for run key %r already in table %r; not rewritten (checked in %.2f s)", run.run_key,
                     output_table, time.perf_counter() - started)
            written = 0
        else:
            written, pruned = publish_labels(engine, output_table, staging, id_type, run, table.n_rows,
                                             keep_runs=keep_runs)
            log.info("Wrote %d labels to table %r in %.2f s (%.0f rows/s; run key %r, earlier rows of this key "
                     "replaced in one transaction)%s", written, output_table, time.perf_counter() - started,
                     written / max(time.perf_counter() - started, 1e-9), run.run_key,
                     f"; deleted {len(pruned)} run(s) of {run.source_table!r} beyond the latest {keep_runs}"
                     if pruned else "")
        view = ensure_latest_view(engine, output_table)
    finally:
        drop_table_quietly(engine, staging)
        engine.dispose()
    log.info("View %r shows the latest run of each source table in %r", view, output_table)
    return written
