"""The consensus clustering flow: a database table in, labels table and MLflow run out.

    load features → base clusterings → ECI → LWEA | LWGP → write labels → log to MLflow

Every parameter is checked before anything runs; the labels are written before
MLflow is contacted, so an unreachable tracking store fails the run without
losing the labels.
"""

from __future__ import annotations

from typing import Annotated, Literal

from prefect import flow, get_run_logger
from prefect.runtime import deployment, flow_run
from pydantic import Field

from lwec_tasks.io import LabelRows, mask_url
from lwec_tasks.io.source import DEFAULT_CHUNK_SIZE
from lwec_tasks.tasks import (
    ConsensusRequest,
    cluster_reliability,
    consensus_labels,
    generate_ensemble,
    load_features,
    log_to_mlflow,
    write_label_rows,
)
from lwec_tasks.request import PARAMETER_DESCRIPTIONS, document_parameters
from lwec_tasks.tasks.summary import StageTimer, agreement_with_truth, publish_summary, run_record
from lwec_tasks.tracking import TrackingError, mask_uri, resolve_tracking_uri, run_page_url

FLOW_NAME = "lwec-consensus"


@flow(name=FLOW_NAME, description="Locally weighted ensemble clustering of a database table (LWEA or LWGP).")
@document_parameters(PARAMETER_DESCRIPTIONS)
def consensus_flow(
    database_url: str,
    table: str,
    n_clusters: Annotated[int, Field(ge=2)],
    feature_columns: list[str] | None = None,
    id_column: str | None = None,
    label_column: str | None = None,
    method: Literal["lwea", "lwgp"] = "lwea",
    ensemble_size: Annotated[int, Field(ge=1)] = 10,
    theta: Annotated[float, Field(gt=0)] = 0.4,
    seed: Annotated[int | None, Field(ge=0)] = 0,
    experiment: str = "lwec",
    output_table: str | None = None,
    standardize: bool = True,
    drop_nonfinite: bool = False,
    run_name: str | None = None,
    tracking_uri: str | None = None,
    chunk_size: Annotated[int, Field(ge=1)] = DEFAULT_CHUNK_SIZE,
) -> dict:
    """Cluster the rows of ``table`` by locally weighted ensemble clustering.

    Returns a summary dict: ``run_key``, ``output_table``, ``rows_written``,
    ``n_objects``, ``n_clusters_found``, ``nmi``/``ari`` (None without
    ground truth), ``mlflow_run_id``, ``mlflow_run_url`` (its page in the MLflow UI), ``mlflow_experiment``,
    ``mlflow_tracking_uri`` (password masked), ``timings`` (seconds per stage).
    """
    logger = get_run_logger()
    request = ConsensusRequest(
        database_url=database_url, table=table, n_clusters=n_clusters, feature_columns=feature_columns,
        id_column=id_column, label_column=label_column, method=method, ensemble_size=ensemble_size,
        theta=theta, seed=seed, experiment=experiment, output_table=output_table, standardize=standardize,
        drop_nonfinite=drop_nonfinite, run_name=run_name, chunk_size=chunk_size,
    )
    tracking_uri = resolve_tracking_uri(tracking_uri)
    logger.info(
        "%s consensus of table %r (%s) into %d clusters; labels → %r, MLflow → %s",
        method.upper(), table, mask_url(database_url), n_clusters, request.resolved_output_table,
        mask_uri(tracking_uri),
    )

    timer = StageTimer()
    with timer.stage("load"):
        loaded = load_features(request)
    features = loaded.features
    with timer.stage("generate"):
        ensemble = generate_ensemble(features.X, ensemble_size, seed)
    with timer.stage("eci"):
        reliability = cluster_reliability(ensemble, theta)
    with timer.stage("consensus"):
        labels = consensus_labels(ensemble, method, n_clusters, theta, seed)
    quality = agreement_with_truth(features.truth, labels)
    if quality:
        logger.info("Agreement with %r: NMI %.4f, ARI %.4f", label_column, quality["nmi"], quality["ari"])

    rows = LabelRows(
        run_key=request.run_key, ids=features.ids, labels=labels, k=n_clusters, method=method, theta=theta,
        ensemble_size=ensemble_size, seed=seed, source_table=table, flow_run_id=flow_run.id,
    )
    with timer.stage("write"):
        written = write_label_rows(request.database_url, request.resolved_output_table, rows, loaded.id_type)

    summary = {
        "run_key": request.run_key,
        "output_table": request.resolved_output_table,
        "rows_written": written,
        "n_objects": len(features.ids),
        "n_clusters_found": int(len(set(labels.tolist()))),
        "nmi": quality.get("nmi"),
        "ari": quality.get("ari"),
        "mlflow_experiment": experiment,
        "mlflow_tracking_uri": mask_uri(tracking_uri),
        "mlflow_run_id": None,
        "mlflow_run_url": None,
        "timings": dict(timer.seconds),
    }
    record = run_record(
        request, features, loaded.id_column, ensemble, reliability, labels, quality, dict(timer.seconds),
        flow_run={"flow_run_id": flow_run.id, "flow_run_name": flow_run.name,
                  "flow_run_url": flow_run.ui_url, "deployment_id": deployment.id},
    )
    try:
        summary["mlflow_run_id"] = log_to_mlflow(record, tracking_uri, experiment, flow_run.name)
        summary["mlflow_run_url"] = run_page_url(tracking_uri, summary["mlflow_run_id"])
    except Exception as error:
        summary["mlflow_error"] = str(error)
        publish_summary(request, summary)
        raise TrackingError(
            f"labels were written to table {summary['output_table']!r} (run key {request.run_key!r}, "
            f"{written} rows), but {error}"
        ) from None
    publish_summary(request, summary)
    logger.info(
        "Done: %d labels in table %r (run key %r); MLflow run %s in experiment %r",
        written, summary["output_table"], request.run_key, summary["mlflow_run_id"], experiment,
    )
    return summary
