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
from lwec_tasks.tasks.report import StageTimer, agreement_with_truth, publish_summary, run_record
from lwec_tasks.tracking import TrackingError, mask_uri, resolve_tracking_uri

FLOW_NAME = "lwec-consensus"


@flow(name=FLOW_NAME, description="Locally weighted ensemble clustering of a database table (LWEA or LWGP).")
def consensus_flow(
    database_url: Annotated[str, Field(
        description="SQLAlchemy URL of the database holding the table, e.g. sqlite:///features.db or "
                    "postgresql+psycopg://user:password@host/db; 'env:VAR' reads it from environment variable VAR")],
    table: Annotated[str, Field(description="Table (or view) with one row per object")],
    n_clusters: Annotated[int, Field(ge=2, description="Number of consensus clusters k")],
    feature_columns: Annotated[list[str] | None, Field(
        description="Feature columns; default: every numeric column except the id and label columns")] = None,
    id_column: Annotated[str | None, Field(
        description="Column identifying each row; default: the primary key, else a column named 'id', "
                    "else the row position after sorting the rows by all columns read")] = None,
    label_column: Annotated[str | None, Field(
        description="Ground-truth column (optional); enables NMI and ARI")] = None,
    method: Annotated[Literal["lwea", "lwgp"], Field(
        description="lwea: average link on the locally weighted co-association matrix; "
                    "lwgp: Tcut on the locally weighted bipartite graph")] = "lwea",
    ensemble_size: Annotated[int, Field(ge=1, description="Number of k-means base clusterings M")] = 10,
    theta: Annotated[float, Field(gt=0, description="ECI parameter θ > 0")] = 0.4,
    seed: Annotated[int | None, Field(ge=0, description="Random seed; empty for a fresh random run")] = 0,
    experiment: Annotated[str, Field(description="MLflow experiment name")] = "lwec",
    output_table: Annotated[str | None, Field(
        description="Labels table to create or update; default <table>_lwec_labels")] = None,
    standardize: Annotated[bool, Field(description="Standardise each feature to mean 0, variance 1")] = True,
    drop_nonfinite: Annotated[bool, Field(
        description="Drop rows with missing/NaN/infinite features instead of failing")] = False,
    run_name: Annotated[str | None, Field(
        description="Key of this run's rows in the labels table; default derived from the inputs")] = None,
    tracking_uri: Annotated[str | None, Field(
        description="MLflow tracking URI; default $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow.db; "
                    "'env:VAR' reads it from environment variable VAR")] = None,
    chunk_size: Annotated[int, Field(ge=1, description="Rows read per database round trip")] = DEFAULT_CHUNK_SIZE,
) -> dict:
    """Cluster the rows of ``table`` by locally weighted ensemble clustering.

    Returns a summary dict: ``run_key``, ``output_table``, ``rows_written``,
    ``n_objects``, ``n_clusters_found``, ``nmi``/``ari`` (None without
    ground truth), ``mlflow_run_id``, ``mlflow_experiment``,
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
        "timings": dict(timer.seconds),
    }
    record = run_record(
        request, features, loaded.id_column, ensemble, reliability, labels, quality, dict(timer.seconds),
        flow_run={"flow_run_id": flow_run.id, "flow_run_name": flow_run.name,
                  "flow_run_url": flow_run.ui_url, "deployment_id": deployment.id},
    )
    try:
        summary["mlflow_run_id"] = log_to_mlflow(record, tracking_uri, experiment, flow_run.name)
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
