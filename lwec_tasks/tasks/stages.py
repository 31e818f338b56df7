"""Prefect tasks of the consensus pipeline: one per stage, thin wrappers over :mod:`lwec_tasks.stages`.

The same tasks run on either executor (:mod:`lwec_tasks.executors`): in-process, or the workers of a Dask
cluster. The flow process keeps only small reduced results; the features, base labels and labels stay in
the executor's partitions until they are written.
"""

from __future__ import annotations

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from lwec_tasks.core.placement import Placement
from lwec_tasks.io import mask_url
from lwec_tasks.io.label_store import LabelStore
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.stages.base_columns import base_column_ensemble
from lwec_tasks.stages.consensus import PartitionedLabels, consensus_labels
from lwec_tasks.stages.ensemble import ClusterReliability, reliability
from lwec_tasks.stages.evidence import RunEvidence, run_evidence
from lwec_tasks.stages.generate import PartitionedEnsemble, base_clusterings
from lwec_tasks.stages.identities import StableIds, stable_ids
from lwec_tasks.stages.model import labelling_model
from lwec_tasks.stages.read import PartitionedTable, load_table
from lwec_tasks.stages.refinement import refined_labels
from lwec_tasks.stages.write import write_labels
from lwec_tasks.tasks.retry import database_task
from lwec_tasks.tasks.timings import timed_stage


@database_task("load-features")
@timed_stage("load")
def load_features(executor, request: ConsensusRequest, store: LabelStore) -> PartitionedTable:
    """Check the table (in the database of the run's labels ``store``) and have the executor read it in partitions
    (kept in its memory).

    The checks are :func:`lwec_tasks.preflight.plan_consensus_read`'s (the command line runs them before
    Prefect starts). Nothing is written. Raises :class:`~lwec_tasks.core.errors.LwecInputError` on bad input
    and :class:`~lwec_tasks.io.DatabaseUnreachableError` (retried) when the database does not answer.
    """
    return load_table(executor, request, get_run_logger(), store)


@task(name="generate-base-clusterings", cache_policy=NO_CACHE)
@timed_stage("generate")
def generate_ensemble(table: PartitionedTable, request: ConsensusRequest) -> PartitionedEnsemble:
    """M base clusterings (k-means, or the mix ``request.generators``): fitted on the library's rows (all, or a
    seeded sample), every row assigned; with ``request.base_columns`` the clusterings those label columns hold."""
    if request.base_columns is not None:
        return base_column_ensemble(table, request.missing_labels, request.seed, get_run_logger())
    return base_clusterings(table, request.ensemble_size, request.seed, get_run_logger(), request.generators,
                            None if request.auto_k else request.n_clusters)


@task(name="ensemble-driven-cluster-index", cache_policy=NO_CACHE)
@timed_stage("eci")
def cluster_reliability(table: PartitionedTable, ensemble: PartitionedEnsemble,
                        theta: float) -> tuple[PartitionedEnsemble, ClusterReliability]:
    """(the ensemble with its microclusters, the uncertainty and ECI of every base cluster: paper Defs. 3–5), from
    contingency tables summed over partitions."""
    return reliability(table, ensemble, theta, get_run_logger())


@task(name="consensus", cache_policy=NO_CACHE)
@timed_stage("consensus")
def consensus(table: PartitionedTable, ensemble: PartitionedEnsemble, cluster_reliability: ClusterReliability,
              request: ConsensusRequest) -> PartitionedLabels:
    """LWEA or LWGP labels (k given or chosen, ``n_clusters="auto"``), kept in the partitions; on a table whose
    text or boolean columns move the rows, after the naive-Bayes steps (:mod:`lwec_tasks.stages.refinement`)."""
    labels = consensus_labels(table, ensemble, cluster_reliability.eci, request.method, request.n_clusters,
                              request.theta, request.seed, get_run_logger())
    return refined_labels(table, labels, ensemble.sample, get_run_logger())


@database_task("stable-cluster-ids")
@timed_stage("stable_ids")
def stable_cluster_ids(table: PartitionedTable, labels: PartitionedLabels, request: ConsensusRequest,
                       store: LabelStore) -> tuple[PartitionedLabels, StableIds]:
    """Renumber the labels to agree with the source table's latest earlier run in ``store`` (unless
    ``stable_ids`` is off)."""
    if not request.stable_ids:
        return labels, StableIds(np.arange(len(labels.sizes), dtype=np.int64))
    return stable_ids(table, labels, store, request.table, request.run_key, get_run_logger())


@task(name="row-evidence", cache_policy=NO_CACHE)
@timed_stage("evidence")
def row_evidence(table: PartitionedTable, ensemble: PartitionedEnsemble, labels: PartitionedLabels,
                 seed: int | None = None, method: str | None = None, theta: float | None = None) -> RunEvidence:
    """Each row's confidence (kept in the partitions, written with its label), the cluster profiles and the
    co-association's consensus CDF (:mod:`lwec_tasks.stages.evidence`)."""
    return run_evidence(table, ensemble, labels, get_run_logger(), seed, method, theta)


@database_task("write-labels")
@timed_stage("write")
def write_label_rows(table: PartitionedTable, labels: PartitionedLabels, request: ConsensusRequest,
                     store: LabelStore, confidence: list | None = None) -> int:
    """Stage the partitions' labels in ``store``; one transaction replaces the run key's rows and prunes the source
    table's runs beyond ``request.keep_runs`` (nothing changes on failure); then the ``<labels>_latest`` view. Each
    row's ``confidence`` (one handle per partition, or None) is written beside its label. A gated run
    (``request.promote_if``) is written held: out of ``<labels>_latest`` until its gate promotes it.
    Returns the rows written (0 when the table already held exactly these labels under this run key)."""
    run = RunMetadata(run_key=request.run_key, k=labels.k, method=request.method, theta=request.theta,
                      ensemble_size=request.ensemble_size, seed=request.seed, source_table=request.table,
                      flow_run_id=flow_run.id, held=request.promote_if is not None)
    log = get_run_logger()
    written = write_labels(table, labels.labels, store, run, log, keep_runs=request.keep_runs,
                           confidence=confidence)
    log.info("Labels of run key %r are in table %r of %s", request.run_key, request.resolved_output_table,
             mask_url(request.database_url))
    return written


@task(name="build-labelling-model", cache_policy=NO_CACHE)
@timed_stage("model")
def build_labelling_model(table: PartitionedTable, ensemble: PartitionedEnsemble, labels: PartitionedLabels,
                          cluster_reliability: ClusterReliability, request: ConsensusRequest,
                          evidence: RunEvidence | None = None) -> tuple[Placement, float]:
    """The run's labelling model (a Placement writing the stored ids, with what the row confidence of new rows
    needs when ``evidence`` is given) and the share of rows it gives back."""
    return labelling_model(table, ensemble, labels, cluster_reliability.eci, request.method, request.theta,
                           labels.k, request.seed, request.standardize, get_run_logger(), evidence=evidence)
