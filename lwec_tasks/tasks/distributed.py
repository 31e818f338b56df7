"""Tasks of the consensus pipeline on an existing Dask cluster (flow parameter ``dask_address``).

The same stages as the local pipeline, under the same task names (so the Prefect UI, the stage timings
and the MLflow metrics read the same), with the heavy work on the Dask workers
(:mod:`lwec_tasks.distributed`). The flow process keeps only small reduced results: no features, base
labels or consensus labels pass through it, so the labels.csv artifact of a local run is replaced by
``labels_location.json`` naming the labels table and run key.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from prefect import allow_failure, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from lwec_tasks.core.placement import Placement
from lwec_tasks.distributed.cluster import DaskSession, connect
from lwec_tasks.distributed.pipeline import (
    DaskEnsemble,
    DaskLabels,
    DaskStableIds,
    DaskTable,
    base_clusterings,
    labelling_model,
    load_table,
    lwea_labels,
    lwgp_labels,
    reliability,
    sample_labels,
    stable_ids,
    write_labels,
)
from lwec_tasks.distributed.planning import RunMetadata
from lwec_tasks.io import mask_url
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.cluster import ClusterReliability
from lwec_tasks.tasks.retry import database_task, tracking_task
from lwec_tasks.tasks.summary import SUMMARY_ARTIFACT_KEY, summary_markdown, tracking_failure_message
from lwec_tasks.tasks.timings import record_stage_time, stage_timings
from lwec_tasks.tasks.track import figure_uris, flow_run_page
from lwec_tasks.tracking import (
    SourceTable,
    TrackingError,
    mask_uri,
    resolve_tracking_uri,
    run_page_url,
    run_writer,
)
from lwec_tasks.tracking.figures import consensus_figures
from lwec_tasks.tracking.model import active_run_in, log_placement_model


def consensus_on_dask(request: ConsensusRequest) -> dict:
    """Run the whole pipeline with its heavy stages on the Dask cluster at ``request.dask_address``.

    Connects first: an unreachable scheduler fails within seconds, before anything is read or written.
    Returns the same summary as the local pipeline.
    """
    with connect(request.dask_address) as session:
        table = load_partitions(session, request)
        ensemble = generate_dask_ensemble(table, request)
        cluster_reliability = dask_cluster_reliability(table, ensemble, request.theta)
        labels = dask_consensus_labels(table, ensemble, cluster_reliability, request)
        labels, stable = dask_stable_ids(table, labels, request)
        written = write_dask_labels(table, labels, request)
        model = dask_labelling_model(table, ensemble, labels, cluster_reliability, request)
        facts = RunFacts(session, table, ensemble, labels, stable, model)
    tracked = log_dask_run_to_mlflow(request, facts, cluster_reliability, return_state=True)
    return publish_dask_summary(request, facts, written, allow_failure(tracked))


@database_task("load-features", on_completion=[record_stage_time])
def load_partitions(session: DaskSession, request: ConsensusRequest) -> DaskTable:
    """Check the table and have the workers read it in id-range partitions (kept in their memory)."""
    return load_table(session, request, get_run_logger())


@task(name="generate-base-clusterings", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def generate_dask_ensemble(table: DaskTable, request: ConsensusRequest) -> DaskEnsemble:
    """M k-means base clusterings: fitted on a seeded sample, every row assigned on the workers."""
    return base_clusterings(table, request.ensemble_size, request.seed, get_run_logger())


@task(name="ensemble-driven-cluster-index", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def dask_cluster_reliability(table: DaskTable, ensemble: DaskEnsemble, theta: float) -> ClusterReliability:
    """Uncertainty and ECI of every base cluster, from contingency tables summed over the partitions."""
    uncertainty, eci = reliability(table, ensemble, theta, get_run_logger())
    return ClusterReliability(uncertainty, eci)


@task(name="consensus", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def dask_consensus_labels(table: DaskTable, ensemble: DaskEnsemble, cluster_reliability: ClusterReliability,
                          request: ConsensusRequest) -> DaskLabels:
    """LWEA or LWGP with the labels computed and kept on the workers."""
    log = get_run_logger()
    if request.method == "lwea":
        return lwea_labels(table, ensemble, cluster_reliability.eci, request.n_clusters, log)
    return lwgp_labels(table, ensemble, cluster_reliability.eci, request.n_clusters, request.seed, log)


@database_task("stable-cluster-ids", on_completion=[record_stage_time])
def dask_stable_ids(table: DaskTable, labels: DaskLabels,
                    request: ConsensusRequest) -> tuple[DaskLabels, DaskStableIds]:
    """Renumber the labels on the workers to agree with the source table's latest earlier run (``stable_ids``)."""
    if not request.stable_ids:
        return labels, DaskStableIds(np.arange(len(labels.sizes), dtype=np.int64))
    return stable_ids(table, labels, request.resolved_output_table, request.table, request.run_key,
                      get_run_logger())


@database_task("write-labels", on_completion=[record_stage_time])
def write_dask_labels(table: DaskTable, labels: DaskLabels, request: ConsensusRequest) -> int:
    """Workers stage their labels; one transaction replaces the run key's rows and prunes the source table's
    runs beyond ``request.keep_runs`` (nothing changes on failure); then the ``<labels>_latest`` view."""
    run = RunMetadata(run_key=request.run_key, k=request.n_clusters, method=request.method, theta=request.theta,
                      ensemble_size=request.ensemble_size, seed=request.seed, source_table=request.table,
                      flow_run_id=flow_run.id)
    written = write_labels(table, labels, request.resolved_output_table, run, get_run_logger(),
                           keep_runs=request.keep_runs)
    get_run_logger().info("Wrote %d labels to table %r of %s (run key %r; earlier rows of this key replaced)",
                          written, request.resolved_output_table, mask_url(request.database_url), request.run_key)
    return written


@task(name="build-labelling-model", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def dask_labelling_model(table: DaskTable, ensemble: DaskEnsemble, labels: DaskLabels,
                         cluster_reliability: ClusterReliability, request: ConsensusRequest) -> tuple[Placement, float]:
    """The run's labelling model (a Placement writing the stored ids) and the share of rows it gives back."""
    return labelling_model(table, ensemble, labels, cluster_reliability.eci, request.method, request.theta,
                           request.n_clusters, request.seed, request.standardize, get_run_logger())


class RunFacts:
    """The small facts of a finished Dask run that the MLflow run and the summary report.

    For the figures: ``sample_rows`` (S, d) the cluster map's rows (S ≤ 2,000, as clustered) and
    ``sample_labels`` (S,) their written labels, gathered from the workers after the stable ids;
    ``linkage`` LWEA's dendrogram over the microclusters ((Ñ − 1, 4); None for LWGP).
    """

    def __init__(self, session: DaskSession, table: DaskTable, ensemble: DaskEnsemble, labels: DaskLabels,
                 stable: DaskStableIds, model: tuple[Placement, float]):
        self.scheduler = session.address
        self.n_workers = session.n_workers
        self.n_partitions = table.n_partitions
        self.id_column = table.plan.id_column
        self.feature_columns = table.plan.feature_columns
        self.n_objects, self.n_rows_read, self.n_rows_dropped = table.n_rows, table.n_read, table.n_dropped
        self.n_base_clusters = ensemble.n_clusters_total
        self.n_microclusters = ensemble.n_microclusters
        self.clusters = pd.DataFrame({
            "cluster": np.arange(ensemble.n_clusters_total), "base_clustering": ensemble.cluster_column,
            "base_label": ensemble.cluster_label, "size": ensemble.cluster_sizes,
        })
        self.sizes = labels.sizes
        self.quality = labels.quality
        self.stable = stable
        self.placement, self.model_given_back = model
        self.sample_rows = ensemble.sample_rows
        self.sample_labels = sample_labels(table, labels, ensemble.sample)
        self.linkage = labels.linkage


@tracking_task("log-to-mlflow")
def log_dask_run_to_mlflow(request: ConsensusRequest, facts: RunFacts,
                           cluster_reliability: ClusterReliability) -> dict[str, str]:
    """One MLflow run with the local run's params, metrics, tags, ECI table and figures."""
    tracking_uri = resolve_tracking_uri(request.tracking_uri)
    eci, sizes = cluster_reliability.eci, facts.sizes
    params = {
        "method": request.method, "theta": request.theta, "ensemble_size": request.ensemble_size,
        "n_clusters": request.n_clusters, "seed": request.seed, "table": request.table,
        "database": mask_url(request.database_url), "output_table": request.resolved_output_table,
        "run_key": request.run_key, "id_column": facts.id_column, "label_column": request.label_column,
        "feature_count": len(facts.feature_columns), "feature_columns": ",".join(facts.feature_columns),
        "n_objects": facts.n_objects, "standardize": request.standardize, "drop_nonfinite": request.drop_nonfinite,
        "dask_scheduler": facts.scheduler, "dask_workers": facts.n_workers, "partitions": facts.n_partitions,
        "stable_ids": request.stable_ids, "keep_runs": request.keep_runs, "ids_aligned_to": facts.stable.aligned_to,
    }
    metrics = {
        **facts.quality,
        **{f"time_{stage}_s": seconds for stage, seconds in stage_timings(flow_run.id).items()},
        "eci_mean": float(eci.mean()), "eci_median": float(np.median(eci)), "eci_min": float(eci.min()),
        "eci_max": float(eci.max()), "uncertainty_mean_bits": float(cluster_reliability.uncertainty.mean()),
        "n_base_clusters": facts.n_base_clusters, "n_microclusters": facts.n_microclusters,
        "n_clusters_found": int((sizes > 0).sum()), "largest_cluster_fraction": float(sizes.max() / sizes.sum()),
        "n_rows_read": facts.n_rows_read, "n_rows_dropped": facts.n_rows_dropped,
        "id_agreement_with_previous_run": facts.stable.agreement,
        "objects_shared_with_previous_run": facts.stable.n_shared if facts.stable.aligned_to else None,
        "k": request.n_clusters, "model_labels_given_back": facts.model_given_back,
    }
    tags = {
        "lwec.run_key": request.run_key, "lwec.method": request.method, "lwec.executor": "dask",
        **({"lwec.aligned_to_run_key": facts.stable.aligned_to} if facts.stable.aligned_to else {}),
        **{f"prefect.{key}": value for key, value in {
            "flow_run_id": flow_run.id, "flow_run_name": flow_run.name, "flow_run_url": flow_run_page()}.items()
           if value},
    }
    clusters = facts.clusters.assign(uncertainty_bits=cluster_reliability.uncertainty, eci=eci)
    location = {"output_table": request.resolved_output_table, "run_key": request.run_key,
                "rows": int(sizes.sum()), "database": mask_url(request.database_url)}
    with run_writer(tracking_uri, request.experiment) as writer:
        run_id = writer.start_run(flow_run.name, params=params, metrics=metrics, tags=tags)
        writer.log_dataset(run_id, SourceTable(database=request.database_url, table=request.table,
                                               feature_columns=tuple(facts.feature_columns), n_rows=facts.n_objects,
                                               n_rows_read=facts.n_rows_read))
        writer.log_table(run_id, clusters, "eci_per_cluster.csv")
        writer.log_dict(run_id, location, "labels_location.json")
        figures = consensus_figures(request.method, request.theta, eci, facts.sizes, facts.sample_rows,
                                    facts.sample_labels, request.n_clusters, facts.linkage)
        for name, figure in figures.items():
            writer.log_figure(run_id, figure, f"figures/{name}")
        with active_run_in(tracking_uri, run_id):
            uri = log_placement_model(facts.placement, None, request.register_model)
        writer.finish(run_id)
    get_run_logger().info("Logged MLflow run %s in experiment %r at %s (labelling model %s)", run_id,
                          request.experiment, mask_uri(tracking_uri), uri)
    return {"run_id": run_id, "url": run_page_url(tracking_uri, run_id), "model_uri": uri,
            "figures": figure_uris(tracking_uri, run_id, figures)}


@task(name="publish-summary", cache_policy=NO_CACHE)
def publish_dask_summary(request: ConsensusRequest, facts: RunFacts, rows_written: int,
                         logged: dict | BaseException) -> dict:
    """The run summary (the local pipeline's keys), as the flow's return value and a markdown artifact."""
    if facts.quality:
        get_run_logger().info("Agreement with %r: NMI %.4f, ARI %.4f", request.label_column, facts.quality["nmi"],
                              facts.quality["ari"])
    summary = {
        "run_key": request.run_key, "output_table": request.resolved_output_table, "rows_written": rows_written,
        "n_objects": facts.n_objects, "n_clusters_found": int((facts.sizes > 0).sum()),
        "k": request.n_clusters, "nmi": facts.quality.get("nmi"), "ari": facts.quality.get("ari"),
        "ids_aligned_to": facts.stable.aligned_to, "id_agreement": facts.stable.agreement,
        "mlflow_experiment": request.experiment,
        "mlflow_tracking_uri": mask_uri(resolve_tracking_uri(request.tracking_uri)), "mlflow_run_id": None,
        "mlflow_run_url": None, "model_uri": None, "figures": {}, "timings": stage_timings(flow_run.id, forget=True),
        "dask_scheduler": facts.scheduler,
    }
    if isinstance(logged, BaseException):
        summary["mlflow_error"] = str(logged)
        _publish(request, summary)
        raise TrackingError(tracking_failure_message(request, rows_written, logged, facts.n_objects)) from None
    summary["mlflow_run_id"], summary["mlflow_run_url"] = logged["run_id"], logged["url"]
    summary["model_uri"], summary["figures"] = logged["model_uri"], logged["figures"]
    _publish(request, summary)
    get_run_logger().info("Done on Dask: %d labels in table %r (run key %r); MLflow run %s in experiment %r",
                          rows_written, summary["output_table"], request.run_key, summary["mlflow_run_id"],
                          request.experiment)
    return summary


def _publish(request: ConsensusRequest, summary: dict) -> None:
    create_markdown_artifact(markdown=summary_markdown(request, summary), key=SUMMARY_ARTIFACT_KEY,
                             description=f"{request.method.upper()} consensus of {request.table} on Dask")
