"""Task: log the run to MLflow (params, metrics, tags, the ECI table, figures, the labelling model)."""

from __future__ import annotations

import numpy as np
from prefect import get_run_logger
from prefect.runtime import deployment, flow_run

from lwec_tasks.executors import Executor
from lwec_tasks.io import mask_url
from lwec_tasks.io.label_store import LabelStore
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.stages.consensus import PartitionedLabels
from lwec_tasks.stages.ensemble import ClusterReliability
from lwec_tasks.stages.generate import PartitionedEnsemble
from lwec_tasks.tasks.retry import tracking_task
from lwec_tasks.tasks.run_facts import RunFacts
from lwec_tasks.tracking.dataset import SourceTable
from lwec_tasks.tracking.limits import database_backend
from lwec_tasks.tracking.store import mask_uri, resolve_tracking_uri, run_page_url


def draw_figures(executor: Executor, request: ConsensusRequest, cluster_reliability: ClusterReliability,
                 ensemble: PartitionedEnsemble, labels: PartitionedLabels, shown_labels: np.ndarray,
                 evidence=None) -> dict[str, bytes]:
    """Artifact name → PNG bytes of the run's figures (:func:`~lwec_tasks.tracking.figures.consensus_pngs`);
    ``shown_labels`` (S,) are the written labels of the cluster map's rows.

    Drawn where the ``executor`` runs tasks: in this thread in-process, on a worker on Dask (the flow process then
    never loads matplotlib; the figures' inputs are the run's small summaries). Contacts no store, and in this
    process imports nothing after :func:`prepare_tracking`: the flow draws while the labels are written.
    """
    from lwec_tasks.tracking.figures import consensus_pngs

    return executor.submit(consensus_pngs, request.method, request.theta, cluster_reliability.eci, labels.sizes,
                           ensemble.sample_rows, shown_labels, labels.k, labels.linkage, labels.selection,
                           dict(vars(evidence.summary())) if evidence is not None else None,
                           name="figures").result()


def deployment_id() -> str | None:
    """The current flow run's deployment id, None outside a deployment. From the flow run's context where there
    is one: Prefect's ``runtime.deployment.id`` asks the API for the flow run whenever the run has no deployment."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return deployment.id
    return str(context.flow_run.deployment_id) if context.flow_run.deployment_id else None


def prepare_tracking(tracking_uri: str | None = None, figures_here: bool = True) -> None:
    """Import what :func:`log_to_mlflow` uses (MLflow; for a database store, MLflow's code for it: about a
    second) and, when ``figures_here`` (the default; False when a Dask cluster draws them), what
    :func:`draw_figures` draws with; do MLflow's own first-log work
    (:func:`~lwec_tasks.tracking.model.prepare_model_logging`). Contacts no store.

    The flow calls it before the labels are written beside the figures being drawn, as imports in two threads
    at once can meet half-initialised modules.
    """
    from lwec_tasks.tracking.model import prepare_model_logging

    if figures_here:
        from lwec_tasks.tracking.figures import prepare_figures

        prepare_figures()
    prepare_model_logging()
    uri = resolve_tracking_uri(tracking_uri)
    if uri.lower().startswith("sqlite:") or database_backend(uri):  # MLflow's SqlAlchemyStore keeps it
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401


@tracking_task("log-to-mlflow")
def log_to_mlflow(request: ConsensusRequest, facts: RunFacts, cluster_reliability: ClusterReliability,
                  store: LabelStore, timings: dict[str, float] | None = None) -> dict:
    """Log the run as one MLflow run, with the source table as its dataset input, and note the MLflow run in the
    run's labels ``store``.

    Raises :class:`~lwec_tasks.tracking.TrackingError` (retried only when ``retryable``, see
    :func:`~lwec_tasks.tasks.retry.retry_if_tracking_unreachable`) when the store is down or refuses a
    write. Returns ``{"run_id", "url" (its page in the MLflow UI), "model_uri" (the labelling model),
    "figures" (artifact URI of each figure), "metrics" (the run's metrics: name → number or None, what the
    quality gate judges)}``. The run is named after the flow run (``<table>-k<k>-<method>``). ``timings``:
    seconds per stage (:meth:`~lwec_tasks.tasks.timings.StageClock.seconds`), logged as ``time_<stage>_s``.
    """
    from lwec_tasks.tracking.fluent import active_run_in
    from lwec_tasks.tracking.model import log_placement_model
    from lwec_tasks.tracking.runs import run_writer

    tracking_uri = resolve_tracking_uri(request.tracking_uri)
    eci, sizes = cluster_reliability.eci, facts.sizes
    params = {
        "method": request.method, "theta": request.theta, "ensemble_size": request.ensemble_size,
        "n_clusters": request.n_clusters, "k": facts.k,
        "k_criterion": facts.selection.criterion if facts.selection is not None
        else facts.evidence.k_curve.criterion if facts.evidence.k_curve is not None else None, "seed": request.seed,
        "table": request.table, "database": mask_url(request.database_url),
        "output_table": request.resolved_output_table, "run_key": request.run_key, "id_column": facts.id_column,
        "label_column": request.label_column, "feature_count": len(facts.feature_columns),
        "feature_columns": ",".join(facts.feature_columns), "n_objects": facts.n_objects,
        "standardize": request.standardize, "drop_nonfinite": request.drop_nonfinite,
        "executor": facts.executor.name, "partitions": facts.n_partitions, "threads": facts.executor.n_threads,
        "dask_scheduler": facts.executor.scheduler,
        "dask_workers": facts.executor.n_workers if facts.executor.scheduler else None,
        "stable_ids": request.stable_ids, "keep_runs": request.keep_runs, "ids_aligned_to": facts.stable.aligned_to,
    }
    params.update(column_params(facts))
    if request.base_columns is not None:  # which columns formed the ensemble, how NULLs were taken
        params.update(base_columns=",".join(request.base_columns), missing_labels=request.missing_labels)
    else:  # the mix that made the base clusterings (for a run given none, the default for the table's size)
        params["generators"] = request.generators
        params["naive_bayes_steps"] = len(facts.bayes_moved)
    metrics = {
        **facts.quality,
        **{f"time_{stage}_s": seconds for stage, seconds in (timings or {}).items()},
        "eci_mean": float(eci.mean()), "eci_median": float(np.median(eci)), "eci_min": float(eci.min()),
        "eci_max": float(eci.max()), "uncertainty_mean_bits": float(cluster_reliability.uncertainty.mean()),
        "n_base_clusters": facts.n_base_clusters, "n_microclusters": facts.n_microclusters,
        "n_clusters_found": int((sizes > 0).sum()), "largest_cluster_fraction": float(sizes.max() / sizes.sum()),
        "n_rows_read": facts.n_rows_read, "n_rows_dropped": facts.n_rows_dropped,
        "id_agreement_with_previous_run": facts.stable.agreement,
        "objects_shared_with_previous_run": facts.stable.n_shared if facts.stable.aligned_to else None,
        "k": facts.k, "model_labels_given_back": facts.model_given_back,
        "naive_bayes_rows_moved": sum(facts.bayes_moved) if facts.bayes_moved else None,
    }
    tags = {
        "lwec.run_key": request.run_key, "lwec.method": request.method, "lwec.executor": facts.executor.name,
        **({"lwec.aligned_to_run_key": facts.stable.aligned_to} if facts.stable.aligned_to else {}),
        **{f"prefect.{key}": value for key, value in {
            "flow_run_id": flow_run.id, "flow_run_name": flow_run.name, "flow_run_url": flow_run_page(),
            "deployment_id": deployment_id()}.items() if value},
    }
    evidence_metrics, series = facts.evidence_metrics()
    metrics.update(evidence_metrics)
    series.update(facts.system_series)
    clusters = facts.clusters.assign(uncertainty_bits=cluster_reliability.uncertainty, eci=eci)
    location = {"output_table": request.resolved_output_table, "run_key": request.run_key,
                "rows": int(sizes.sum()), "database": mask_url(request.database_url)}
    with run_writer(tracking_uri, request.experiment) as writer:
        run_id = writer.start_run(flow_run.name, params=params, metrics=metrics, tags=tags, series=series)
        writer.log_dataset(run_id, SourceTable(database=request.database_url, table=request.table,
                                               feature_columns=tuple(facts.feature_columns or request.base_columns),
                                               n_rows=facts.n_objects,
                                               n_rows_read=facts.n_rows_read))
        writer.log_table(run_id, clusters, "eci_per_cluster.csv")
        if facts.evidence.profiles is not None:
            writer.log_table(run_id, facts.profiles_with_stability(), "cluster_profiles.csv")
        if facts.evidence.label_table is not None:
            writer.log_table(run_id, facts.evidence.label_table, "cluster_labels.csv")
        writer.log_dict(run_id, location, "labels_location.json")
        figures = facts.figures
        writer.log_files(run_id, figures, "figures")
        with active_run_in(tracking_uri, run_id):
            uri = log_placement_model(facts.placement, facts.input_example(), request.register_model)
        writer.finish(run_id)
        run_info = writer.client.get_run(run_id).info  # where its artifacts went, its experiment
    _record_in_labels_table(store, request, run_id)
    get_run_logger().info("Logged MLflow run %s in experiment %r at %s (%d params, %d metrics, %d figures; "
                          "labelling model %s)", run_id, request.experiment, mask_uri(tracking_uri), len(params),
                          len(metrics), len(figures), uri)
    return {"run_id": run_id, "url": run_page_url(tracking_uri, run_id, run_info.experiment_id), "model_uri": uri,
            "figures": {name: f"{run_info.artifact_uri.rstrip('/')}/figures/{name}" for name in figures},
            "metrics": metrics}


#: MLflow's limit on a param's value (characters); longer lists are cut with "…".
PARAM_VALUE_LIMIT = 6000


def column_params(facts: RunFacts) -> dict:
    """``columns_left_out`` (``name: reason; ...`` for every column not clustered on), ``categorical_columns``
    (``name: kind, L levels, n NULL, relevance r; ...``, "n NULL imputed" for NULLs missing at random) and
    ``imputed_values`` (``name: n; ...``, numeric gaps filled and text/boolean NULLs imputed)."""
    def joined(items) -> str | None:
        text = "; ".join(items)
        return None if not text else text if len(text) <= PARAM_VALUE_LIMIT else text[:PARAM_VALUE_LIMIT - 1] + "…"

    return {
        "columns_left_out": joined(f"{name}: {reason}" for name, reason in facts.left_out),
        "categorical_columns": joined(
            f"{name}: {c['kind']}, {c['levels']} levels, {c['null_rows']} NULL"
            f"{' imputed' if c['nulls'] == 'imputed' else ''}, relevance {c['relevance'] or 0:.3f}"
            for name, c in facts.categorical.items()),
        "imputed_values": joined(f"{name}: {n}" for name, n in facts.imputed_counts.items()) or "0",
    }


def _record_in_labels_table(store: LabelStore, request: ConsensusRequest, run_id: str) -> None:
    """Note the MLflow run in the labels table's runs table (``mlflow_run_id``); a failure is logged, not
    raised: the labels and the MLflow run both exist, only the link between them is missing."""
    from lwec_tasks.core.errors import LwecInputError
    from lwec_tasks.io.errors import DatabaseUnreachableError

    try:
        store.record_mlflow_run(request.run_key, run_id)
    except (LwecInputError, DatabaseUnreachableError) as error:
        get_run_logger().warning("MLflow run %s not recorded in table %r: %s", run_id,
                                 request.resolved_output_table, error)


def flow_run_page() -> str | None:
    """This flow run's page in the Prefect UI, or None when no UI address is known (a temporary server)."""
    url = flow_run.ui_url
    return url if url and url.startswith(("http://", "https://")) else None
