"""The consensus clustering flow: a database table in, labels table and MLflow run out.

    load features → base clusterings → ECI → LWEA | LWGP (k given or chosen) → stable cluster ids
    → write labels → log to MLflow (figures, labelling model) → summary

Every parameter is checked before anything runs (:class:`ConsensusRequest`);
the labels are written before MLflow is contacted, so an unreachable tracking
store fails the run without losing the labels. Prefect records each stage's time.
"""

from __future__ import annotations

from typing import Annotated, Literal

from prefect import allow_failure, flow, get_run_logger
from prefect.runtime import flow_run
from pydantic import Field

from lwec_tasks.core.base_clusterings import DEFAULT_ENSEMBLE_SIZE
from lwec_tasks.core.eci import DEFAULT_THETA
from lwec_tasks.io import mask_url
from lwec_tasks.io.source import DEFAULT_CHUNK_SIZE
from lwec_tasks.methods import PIPELINE_METHODS, PipelineMethod
from lwec_tasks.request import ConsensusRequest, document_parameters
from lwec_tasks.tasks import (
    cluster_reliability,
    consensus_labels,
    generate_ensemble,
    labelling_model,
    load_features,
    log_to_mlflow,
    publish_summary,
    stable_cluster_ids,
    write_label_rows,
)
from lwec_tasks.tasks.distributed import consensus_on_dask

FLOW_NAME = "lwec-consensus"


@flow(name=FLOW_NAME, description="Locally weighted ensemble clustering of a database table (LWEA or LWGP).")
@document_parameters(ConsensusRequest)
def consensus_flow(
    database_url: str,
    table: str,
    n_clusters: Annotated[int, Field(ge=2)] | Literal["auto"],
    feature_columns: list[str] | None = None,
    id_column: str | None = None,
    label_column: str | None = None,
    method: PipelineMethod = PIPELINE_METHODS[0],
    ensemble_size: Annotated[int, Field(ge=1)] = DEFAULT_ENSEMBLE_SIZE,
    theta: Annotated[float, Field(gt=0)] = DEFAULT_THETA,
    seed: Annotated[int | None, Field(ge=0)] = 0,
    experiment: str = "lwec",
    output_table: str | None = None,
    standardize: bool = True,
    drop_nonfinite: bool = False,
    run_name: str | None = None,
    stable_ids: bool = True,
    keep_runs: Annotated[int | None, Field(ge=1)] = 30,
    register_model: str | None = None,
    tracking_uri: str | None = None,
    chunk_size: Annotated[int, Field(ge=1)] = DEFAULT_CHUNK_SIZE,
    dask_address: str | None = None,
) -> dict:
    """Cluster the rows of ``table`` by locally weighted ensemble clustering.

    Returns the run summary (see :func:`lwec_tasks.tasks.summary.publish_summary`).
    """
    # Exactly the parameters above, checked once; {date} in run_name is the scheduled start's date.
    request = ConsensusRequest(**locals()).scheduled_at(flow_run.scheduled_start_time)
    get_run_logger().info("%s consensus of table %r (%s) into %s clusters; labels → %r (run key %r)",
                          request.method.upper(), table, mask_url(database_url), request.n_clusters,
                          request.resolved_output_table, request.run_key)
    if request.dask_address:
        return consensus_on_dask(request)  # the same stages, the heavy ones on the Dask cluster's workers
    loaded = load_features(request)
    base = generate_ensemble(loaded.matrix, ensemble_size, seed)
    reliability = cluster_reliability(base.ensemble, theta)
    result = consensus_labels(base.ensemble, method, request.n_clusters, theta, seed)
    stable = stable_cluster_ids(request, loaded, result.labels, result.k)
    written = write_label_rows(request, loaded, stable.labels, result.k)
    model = labelling_model(request, loaded, base, reliability, result, stable)
    tracked = log_to_mlflow(request, loaded, base, reliability, result, stable, model, return_state=True)
    return publish_summary(request, loaded, result, stable, written, allow_failure(tracked))
