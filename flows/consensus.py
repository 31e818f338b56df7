"""The consensus clustering flow: a database table in, labels table and MLflow run out.

    load features → base clusterings → ECI → LWEA | LWGP → write labels → log to MLflow → summary

Every parameter is checked before anything runs (:class:`ConsensusRequest`);
the labels are written before MLflow is contacted, so an unreachable tracking
store fails the run without losing the labels. Prefect records each stage's time.
"""

from __future__ import annotations

from typing import Annotated

from prefect import allow_failure, flow, get_run_logger
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
    load_features,
    log_to_mlflow,
    publish_summary,
    write_label_rows,
)
from lwec_tasks.tasks.distributed import consensus_on_dask

FLOW_NAME = "lwec-consensus"


@flow(name=FLOW_NAME, description="Locally weighted ensemble clustering of a database table (LWEA or LWGP).")
@document_parameters(ConsensusRequest)
def consensus_flow(
    database_url: str,
    table: str,
    n_clusters: Annotated[int, Field(ge=2)],
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
    tracking_uri: str | None = None,
    chunk_size: Annotated[int, Field(ge=1)] = DEFAULT_CHUNK_SIZE,
    dask_address: str | None = None,
) -> dict:
    """Cluster the rows of ``table`` by locally weighted ensemble clustering.

    Returns the run summary (see :func:`lwec_tasks.tasks.summary.publish_summary`).
    """
    request = ConsensusRequest(**locals())  # exactly the parameters above, checked once
    get_run_logger().info("%s consensus of table %r (%s) into %d clusters; labels → %r", request.method.upper(),
                          table, mask_url(database_url), n_clusters, request.resolved_output_table)
    if request.dask_address:
        return consensus_on_dask(request)  # the same stages, the heavy ones on the Dask cluster's workers
    loaded = load_features(request)
    ensemble = generate_ensemble(loaded.matrix, ensemble_size, seed)
    reliability = cluster_reliability(ensemble, theta)
    labels = consensus_labels(ensemble, method, n_clusters, theta, seed)
    written = write_label_rows(request, loaded, labels)
    tracked = log_to_mlflow(request, loaded, ensemble, reliability, labels, return_state=True)
    return publish_summary(request, loaded, labels, written, allow_failure(tracked))
