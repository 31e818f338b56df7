"""Prefect events of a consensus run, for automations: ``lwec.consensus.completed``, then for a gated run
``lwec.consensus.promoted`` or ``lwec.consensus.held``.

Each event's resource is the run (``lwec.run.<labels table>.<run key>``); its related resources are the source
table (role ``source-table``, id ``lwec.table.<table>``), the labels table (role ``labels-table``) and the MLflow
run (role ``mlflow-run``); inside a flow run Prefect adds the flow run, flow and deployment. The payload holds
the run's headline metrics (:data:`HEADLINE_METRICS`, None where not measured), ``run_key``, ``output_table``,
``rows_written``, ``mlflow_run_id``, ``model_uri`` and, for a gated run, ``promote_if`` and ``failed`` (each
failed condition with the run's figure).
"""

from __future__ import annotations

from prefect import get_run_logger
from prefect.events import emit_event

from lwec_tasks.request import ConsensusRequest

COMPLETED, PROMOTED, HELD = "lwec.consensus.completed", "lwec.consensus.promoted", "lwec.consensus.held"

#: MLflow metrics carried in every event's payload.
HEADLINE_METRICS = ("k", "n_clusters_found", "confidence_mean", "pac", "jaccard_previous_mean",
                    "id_agreement_with_previous_run", "nmi", "ari", "largest_cluster_fraction")


def run_resource(request: ConsensusRequest) -> dict[str, str]:
    """The event resource naming the run: its labels table and run key."""
    return {"prefect.resource.id": f"lwec.run.{request.resolved_output_table}.{request.run_key}",
            "prefect.resource.name": request.run_key}


def related_resources(request: ConsensusRequest, summary: dict) -> list[dict[str, str]]:
    """The source table, the labels table and (when logged) the MLflow run, as related resources."""
    related = [
        {"prefect.resource.id": f"lwec.table.{request.table}", "prefect.resource.role": "source-table",
         "prefect.resource.name": request.table},
        {"prefect.resource.id": f"lwec.table.{request.resolved_output_table}",
         "prefect.resource.role": "labels-table", "prefect.resource.name": request.resolved_output_table},
    ]
    if summary.get("mlflow_run_id"):
        related.append({"prefect.resource.id": f"mlflow.run.{summary['mlflow_run_id']}",
                        "prefect.resource.role": "mlflow-run", "prefect.resource.name": summary["mlflow_run_id"]})
    return related


def run_payload(request: ConsensusRequest, summary: dict, metrics: dict, gate: dict | None = None) -> dict:
    """The payload of the run's events (module docstring); ``gate``: ``{"promote_if", "failed"}`` or None."""
    payload = {"run_key": request.run_key, "output_table": request.resolved_output_table,
               "source_table": request.table, "rows_written": summary.get("rows_written"),
               "n_objects": summary.get("n_objects"), "mlflow_run_id": summary.get("mlflow_run_id"),
               "model_uri": summary.get("model_uri"),
               "metrics": {name: _number(metrics.get(name)) for name in HEADLINE_METRICS}}
    if gate is not None:
        payload.update(gate)
    return payload


def emit_run_event(event: str, request: ConsensusRequest, summary: dict, metrics: dict,
                   gate: dict | None = None) -> None:
    """Emit ``event`` for the run (:func:`run_resource`, :func:`related_resources`, :func:`run_payload`); an
    event that cannot be sent is logged, never raised: the run's outcome stands without it."""
    try:
        emit_event(event=event, resource=run_resource(request), related=related_resources(request, summary),
                   payload=run_payload(request, summary, metrics, gate))
    except Exception as error:  # noqa: BLE001 - events are a notification, not the run's result
        get_run_logger().warning("Prefect event %s not emitted: %s", event, error)


def _number(value):
    return None if value is None else float(value)
