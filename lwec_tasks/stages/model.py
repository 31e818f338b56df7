"""Stage: the run's labelling model (:class:`~lwec_tasks.core.placement.Placement`) from small reductions."""

from __future__ import annotations

import operator
import time

import numpy as np

from lwec_tasks.executors.progress import tree_reduce
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.consensus import PartitionedLabels, sample_labels
from lwec_tasks.stages.generate import PartitionedEnsemble, gather_rows
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stages.sums import add_tables

#: LWEA's labelling model keeps the microcluster lookup (see :mod:`lwec_tasks.core.placement`) up to this many
#: microclusters (Ñ × M int32 in the model); beyond it the model places rows by the average-link rule alone.
MODEL_MICROCLUSTER_LIMIT = 1_000_000


def labelling_model(table: PartitionedTable, ensemble: PartitionedEnsemble, labels: PartitionedLabels,
                    eci: np.ndarray, method: str, theta: float, n_clusters: int, seed: int | None, standardize: bool,
                    log, evidence=None):
    """The run's :class:`~lwec_tasks.core.placement.Placement` for the written ``labels``, from small
    reductions: the base k-means centres, the standardisation and the ECI the flow holds; per-partition
    cluster sizes and, for
    LWEA, the (n_c × k) base/consensus overlap counts (plus the microcluster lookup up to
    :data:`MODEL_MICROCLUSTER_LIMIT` microclusters), for LWGP the sums of each cluster's normalised
    embedding rows the consensus stage made (the consensus centres are their size-weighted means).

    After naive-Bayes steps (``labels.refinement``) the model keeps the last step's model, which places new rows
    as it placed the run's.

    With the run's ``evidence`` (:class:`~lwec_tasks.stages.evidence.RunEvidence`) the model also keeps what
    the row confidence of new rows needs (the clusters' centres and the base clusters' shares), and LWEA's
    overlap counts are taken from it rather than counted again.

    A run on base columns (``ensemble.dictionaries``: each column's label values in code order) gets a
    :class:`~lwec_tasks.core.label_placement.LabelPlacement` over the code centres (its clusterings have no
    k-means models, its labels no standardisation).
    """
    from lwec_tasks.core.label_placement import LabelPlacement, code_centres
    from lwec_tasks.core.placement import Placement, Standardisation

    session = table.session
    started = time.perf_counter()
    base_values = None if ensemble.dictionaries is None else tuple(tuple(d) for d in ensemble.dictionaries)
    if base_values is None:
        centres, owners = map(list, zip(*session.gather(session.map(model_centres, ensemble.models,
                                                                    name="model-centres"))))
    else:
        centres = list(code_centres(ensemble.ks))
        owners = [None] * len(centres)
    centre_codes = []
    for m, column_centres in enumerate(centres):
        start, stop = int(ensemble.offsets[m]), int(ensemble.offsets[m + 1])
        raw = np.arange(len(column_centres)) if owners[m] is None else np.asarray(owners[m], dtype=np.int64)
        by_label = np.full(int(max(raw.max(initial=-1) + 1, ensemble.cluster_label[start:stop].max(initial=-1) + 1)),
                           -1, dtype=np.int64)
        by_label[ensemble.cluster_label[start:stop]] = np.arange(start, stop)
        centre_codes.append(by_label[raw])
    cluster_ids = np.flatnonzero(labels.sizes > 0).astype(np.int64)
    vectors = labels.cluster_vectors if method == "lwgp" else None
    if vectors is not None:  # summed over the microclusters while k-means labelled them
        sizes, sums = labels.sizes[cluster_ids], labels.embedding_sums[cluster_ids]
    elif evidence is not None:
        sizes = labels.sizes[cluster_ids].astype(np.float64)
        sums = evidence.overlap[:, cluster_ids].astype(np.float64)
    else:
        parts = session.map(part.overlap_counts, ensemble.codes, labels.labels, name="model-sums",
                            cluster_ids=cluster_ids, offsets=ensemble.offsets,
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
    if evidence is not None:
        state.update(confidence_state(evidence, ensemble, cluster_ids))
    if labels.refinement is not None:  # the naive-Bayes model of the run's last step places the rows
        state.update(labels.refinement.model.restricted(cluster_ids).arrays())
    fields = dict(
        standardisation=Standardisation(table.mean, table.scale) if standardize and base_values is None else None,
        centres=tuple(centres), centre_codes=tuple(centre_codes), eci=np.ascontiguousarray(eci, dtype=np.float64),
        method=method, theta=float(theta), cluster_ids=cluster_ids, state=state, n_clusters=int(n_clusters),
        seed=None if seed is None else int(seed))
    if base_values is None:
        placement = Placement(feature_columns=tuple(table.plan.feature_columns),
                              encoding=table.encoding, **fields)
    else:
        placement = LabelPlacement(feature_columns=table.plan.base_columns, base_values=base_values, **fields)
    share = _labels_given_back(table, ensemble, labels, placement)
    log.info("Labelling model built: %s placement over %d base clusterings, %d clusters (%.2f s); it gives back "
             "%.1f%% of the run's labels on %d sampled rows", method.upper(), placement.ensemble_size,
             len(cluster_ids), time.perf_counter() - started, 100 * share, len(ensemble.sample))
    return placement, share


def model_centres(model) -> tuple[np.ndarray, np.ndarray | None]:
    """A fitted base model's (P, d) float64 centres and each one's cluster (P,) (None: a k-means centre is its own
    cluster; a generator's prototypes carry theirs in ``centre_labels``). Taken where the model is, so the flow
    process receives arrays, not scikit-learn objects (whose unpickling would import scikit-learn there)."""
    return np.ascontiguousarray(model.cluster_centers_, dtype=np.float64), getattr(model, "centre_labels", None)


def _labels_given_back(table: PartitionedTable, ensemble: PartitionedEnsemble, labels: PartitionedLabels,
                       placement) -> float:
    """The share of the cluster map's sampled rows (:data:`~lwec_tasks.stages.generate.PICTURE_SAMPLE` at most)
    that ``placement`` gives their written label, placed from their base cluster codes (a training row's
    nearest base centres are its codes), or after naive-Bayes steps from their features."""
    refinement = labels.refinement
    if refinement is not None:
        if len(refinement.positions) == 0:
            return 1.0
        placed = placement.predict(refinement.sample_rows, refinement.sample_gaps)
        return float(np.mean(placed == sample_labels(table, labels, refinement.positions)))
    positions = ensemble.sample
    if len(positions) == 0:
        return 1.0
    codes = np.asarray(gather_rows(table.session, ensemble.codes, positions, table.offsets, part.code_rows,
                                   "model-check-codes").result(), dtype=np.int64)
    placed = placement.cluster_ids[placement.consensus_of_codes(codes + ensemble.offsets[:-1])]
    return float(np.mean(placed == sample_labels(table, labels, positions)))


def confidence_state(evidence, ensemble: PartitionedEnsemble, cluster_ids: np.ndarray) -> dict[str, np.ndarray]:
    """The labelling model's state for the confidence of new rows (consensus cluster j = ``cluster_ids[j]``):
    ``confidence_shares`` (n_c, k) the base clusters' shares and, with features, ``confidence_centres`` (k, d)
    the clusters' centres in the clustered space and, when the run took its level from the clusters' Gaussians,
    ``confidence_levels`` (LEVEL_BINS + 1,) its level map."""
    from lwec_tasks.core.confidence import base_shares

    state = {"confidence_shares": base_shares(evidence.overlap[:, cluster_ids], ensemble.cluster_sizes)}
    if evidence.centres is not None:
        state["confidence_centres"] = np.ascontiguousarray(evidence.centres[cluster_ids])
    if evidence.level_map is not None:
        state["confidence_levels"] = np.asarray(evidence.level_map, dtype=np.float64)
    return state
