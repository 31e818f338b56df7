"""Task: log the run to MLflow (params, metrics, tables, figures, tags)."""

from __future__ import annotations

from prefect import get_run_logger
from prefect.runtime import flow_run

from lwec_tasks.core.consensus import Consensus
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.cluster import BaseEnsemble, ClusterReliability
from lwec_tasks.tasks.load import LoadedFeatures
from lwec_tasks.tasks.model import LabellingModel
from lwec_tasks.tasks.record import run_record
from lwec_tasks.tasks.renumber import StableIds
from lwec_tasks.tasks.retry import tracking_task
from lwec_tasks.tasks.timings import stage_timings
from lwec_tasks.tracking import log_run, mask_uri, model_uri, resolve_tracking_uri, run_page_url, tracking_client


@tracking_task("log-to-mlflow")
def log_to_mlflow(request: ConsensusRequest, loaded: LoadedFeatures, base: BaseEnsemble,
                  reliability: ClusterReliability, result: Consensus, stable: StableIds, model: LabellingModel) -> dict:
    """Log the run as one MLflow run, with the source table as its dataset input.

    Raises :class:`~lwec_tasks.tracking.TrackingError` (retried only when
    ``retryable``, see :func:`~lwec_tasks.tasks.retry.retry_if_tracking_unreachable`)
    when the store is down or refuses a write. Returns ``{"run_id", "url" (its
    page in the MLflow UI), "model_uri" (the labelling model), "figures"
    (artifact URI of each figure)}``.
    """
    tracking_uri = resolve_tracking_uri(request.tracking_uri)
    record = run_record(request, loaded, base, reliability, result, stable, model, stage_timings(flow_run.id), {
        "flow_run_id": flow_run.id, "flow_run_name": flow_run.name, "flow_run_url": flow_run_page(),
        "deployment_id": _deployment_id(),
    })
    run_id = log_run(record, tracking_uri=tracking_uri, experiment=request.experiment, run_name=flow_run.name)
    get_run_logger().info(
        "Logged MLflow run %s in experiment %r at %s (%d params, %d metrics, %d figures)",
        run_id, request.experiment, mask_uri(tracking_uri), len(record.params), len(record.metrics),
        len(record.figures),
    )
    return {"run_id": run_id, "url": run_page_url(tracking_uri, run_id), "model_uri": model_uri(run_id),
            "figures": figure_uris(tracking_uri, run_id, record.figures)}


def figure_uris(tracking_uri: str, run_id: str, figures: dict) -> dict[str, str]:
    """Artifact name → URI of each figure logged under ``figures/`` of run ``run_id``."""
    root = tracking_client(tracking_uri).get_run(run_id).info.artifact_uri.rstrip("/")
    return {name: f"{root}/figures/{name}" for name in figures}


def _deployment_id() -> str | None:
    from prefect.runtime import deployment

    return deployment.id


def flow_run_page() -> str | None:
    """This flow run's page in the Prefect UI, or None when no UI address is known (a temporary server)."""
    url = flow_run.ui_url
    return url if url and url.startswith(("http://", "https://")) else None
