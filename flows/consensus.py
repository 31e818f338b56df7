"""The consensus clustering flow: a database table in, labels table and MLflow run out.

    load features → base clusterings → ECI → LWEA | LWGP (k given or chosen) → stable cluster ids
    → row confidence, cluster profiles, consensus CDF → write labels (figures drawn meanwhile)
    → labelling model → log to MLflow (figures, model, CPU and memory) → summary → quality gate and events

Each flow run is named after its work (``customers-k8-lwea``), and so is its MLflow run. With ``promote_if``
the labels are written held and promoted (``<labels>_latest``, the model's alias) only when every condition
holds on the run's metrics; a held run ends Failed (:mod:`lwec_tasks.tasks.quality_gate`). Every run emits
Prefect events for automations (:mod:`lwec_tasks.tasks.events`).

One code path: every stage runs over partitions of the table on an executor, in this process (the
default, a thread per core) or on the Dask cluster at ``dask_address``. Every parameter is checked before
anything runs (:class:`ConsensusRequest`); the labels are written before MLflow is contacted, so an
unreachable tracking store fails the run without losing the labels. Each stage's time is measured around
its task's body (:class:`~lwec_tasks.tasks.timings.StageClock`) and handed to the MLflow run and the summary.
"""

from __future__ import annotations

from typing import Annotated, Literal

from lwec_tasks.collector import imports_without_collections

# A deployed run's process imports these first: without the collector's rounds (lwec_tasks.collector).
with imports_without_collections():
    from prefect import allow_failure, flow, get_run_logger
    from prefect.runtime import flow_run
    from pydantic import Field

    from lwec_tasks.core.base_clusterings import DEFAULT_ENSEMBLE_SIZE
    from lwec_tasks.core.eci import DEFAULT_THETA
    from lwec_tasks.core.kernel_cache import note_compiling
    from lwec_tasks.executors import open_executor
    from lwec_tasks.form_types import ClusterCount, OptionalRunCount, OptionalSeed
    from lwec_tasks.io import mask_url
    from lwec_tasks.io.label_store import open_label_store
    from lwec_tasks.io.source import DEFAULT_CHUNK_SIZE
    from lwec_tasks.methods import PIPELINE_METHODS, PipelineMethod
    from lwec_tasks.request import ConsensusRequest, document_parameters
    from lwec_tasks.stages.consensus import sample_labels
    from lwec_tasks.tasks.cancellation import flow_run_stops
    from lwec_tasks.tasks.credentials import register_block_resolvers
    from lwec_tasks.tasks.error_logs import log_errors_once
    from lwec_tasks.tasks.heartbeats import flow_run_heartbeats
    from lwec_tasks.tasks.quality_gate import settle_run
    from lwec_tasks.tasks.run_facts import RunFacts
    from lwec_tasks.tasks.run_names import consensus_run_name
    from lwec_tasks.tasks.stages import (
        build_labelling_model,
        cluster_reliability,
        consensus,
        generate_ensemble,
        load_features,
        row_evidence,
        stable_cluster_ids,
        write_label_rows,
    )
    from lwec_tasks.tasks.summary import publish_summary
    from lwec_tasks.tasks.timings import StageClock
    from lwec_tasks.tasks.track import draw_figures, log_to_mlflow, prepare_tracking
    from lwec_tasks.tracking.system_metrics import SystemSampler

FLOW_NAME = "lwec-consensus"
log_errors_once()  # a failed run's error in its log once, one line for bad input


@flow(name=FLOW_NAME, description="Locally weighted ensemble clustering of a database table (LWEA or LWGP).",
      flow_run_name=consensus_run_name)
@document_parameters(ConsensusRequest)
def consensus_flow(
    database_url: str,
    table: str,
    n_clusters: ClusterCount,
    feature_columns: list[str] | None = None,
    id_column: str | None = None,
    label_column: str | None = None,
    method: PipelineMethod = PIPELINE_METHODS[0],
    ensemble_size: Annotated[int, Field(ge=1)] = DEFAULT_ENSEMBLE_SIZE,
    generators: str | None = None,
    theta: Annotated[float, Field(gt=0)] = DEFAULT_THETA,
    seed: OptionalSeed = 0,
    experiment: str = "lwec",
    output_table: str | None = None,
    standardize: bool = True,
    drop_nonfinite: bool = False,
    run_name: str | None = None,
    stable_ids: bool = True,
    keep_runs: OptionalRunCount = 30,
    register_model: str | None = None,
    promote_if: str | None = None,
    model_alias: str = "champion",
    tracking_uri: str | None = None,
    chunk_size: Annotated[int, Field(ge=1)] = DEFAULT_CHUNK_SIZE,
    dask_address: str | None = None,
    base_columns: list[str] | None = None,
    missing_labels: Literal["error", "own_cluster"] = "error",
) -> dict:
    """Cluster the rows of ``table`` by locally weighted ensemble clustering.

    Returns the run summary (see :func:`lwec_tasks.tasks.summary.publish_summary`) with ``gate`` (see
    :func:`lwec_tasks.tasks.quality_gate.settle_run`). With ``base_columns`` the ensemble is those label columns
    (no base clusterings are generated, no features read). A run held by ``promote_if`` raises
    :class:`~lwec_tasks.gate.RunHeld`: the flow run ends Failed.
    """
    # Exactly the parameters above, checked once; {date} in run_name is the scheduled start's date.
    request = ConsensusRequest(**locals()).scheduled_at(flow_run.scheduled_start_time)
    get_run_logger().info("%s consensus of table %r (%s) into %s clusters; labels → %r",
                          request.method.upper(), table, mask_url(database_url), request.n_clusters,
                          request.resolved_output_table)
    note_compiling(get_run_logger())  # after an install the kernels compile in the first run: said, not silent
    register_block_resolvers()  # block: and secret: URLs, resolved once by the run's labels store
    with flow_run_heartbeats(), flow_run_stops():  # nothing published after SIGINT/SIGTERM; a cancel is no crash
        return run_stages(request)


def with_generators(request: ConsensusRequest, n_rows: int, weighted_categories: tuple[str, ...] = ()
                    ) -> ConsensusRequest:
    """``request`` with its mix filled in for a table of ``n_rows`` rows whose text or boolean columns
    ``weighted_categories`` move the rows, when none was given
    (:meth:`~lwec_tasks.request.ConsensusRequest.for_rows`), logged with the run key it gives."""
    resolved = request.for_rows(n_rows, bool(weighted_categories))
    if request.base_columns is not None:
        how = "the table's label columns"
    elif request.generators is not None:
        how = resolved.generators
    elif weighted_categories:
        how = f"{resolved.generators} (the default where text or boolean columns move the rows: " \
              f"{', '.join(weighted_categories)})"
    else:
        how = f"{resolved.generators} (the default for {n_rows:,} rows)"
    get_run_logger().info("Run key %r; base clusterings: %s", resolved.run_key, how)
    return resolved


def run_stages(request: ConsensusRequest) -> dict:
    """The flow's tasks for a checked ``request``, in order; returns the run summary. The run's labels store
    (:func:`~lwec_tasks.io.label_store.open_label_store`) is open from the first stage until the gate has promoted
    or held the run."""
    clock = StageClock()  # each stage's seconds, added by its task (lwec_tasks.tasks.timings)
    with open_label_store(request.database_url, request.output_name) as store:
        with SystemSampler() as system, open_executor(request.dask_address) as executor:
            table = load_features(executor, request, store, clock=clock)
            request = with_generators(request, table.n_rows,
                                      table.encoding.weighted_categories if table.encoding is not None else ())
            ensemble = generate_ensemble(table, request, clock=clock)
            ensemble, reliability = cluster_reliability(table, ensemble, request.theta, clock=clock)
            labels = consensus(table, ensemble, reliability, request, clock=clock)
            labels, stable = stable_cluster_ids(table, labels, request, store, clock=clock)
            evidence = row_evidence(table, ensemble, labels, request.seed, request.method, request.theta, clock=clock)
            shown = sample_labels(table, labels, ensemble.sample)
            prepare_tracking(request.tracking_uri, figures_here=executor.runs_here)
            # The figures are drawn while the labels are written; MLflow is contacted after.
            writing = write_label_rows.submit(table, labels, request, store, evidence.confidence, clock=clock)
            try:
                figures = draw_figures(executor, request, reliability, ensemble, labels, shown, evidence)
            finally:
                writing.wait()
            written = writing.result()
            model = build_labelling_model(table, ensemble, labels, reliability, request, evidence, clock=clock)
            system.stop()
            facts = RunFacts.of(executor, table, ensemble, labels, stable, model, figures, evidence,
                                system.series())
        timings = clock.seconds()
        tracked = log_to_mlflow(request, facts, reliability, store, timings, return_state=True)
        summary = publish_summary(request, facts, written, allow_failure(tracked), timings)
        return settle_run(request, summary, tracked.result(), store)
