"""Flow runs named after their work: ``<table>-k<k>-<method>``, e.g. ``customers-k8-lwea``, or
``customers-kauto-lwea`` when k is chosen; the MLflow run takes the flow run's name."""

from __future__ import annotations

from prefect.runtime import flow_run

from lwec_tasks.core.defaults import is_auto
from lwec_tasks.methods import PIPELINE_METHODS


def work_name(table: str, n_clusters, method: str | None = None) -> str:
    """``<table>-k<n_clusters>-<method>`` (``kauto`` for an automatic k; ``method`` default the flow's)."""
    k = "auto" if is_auto(n_clusters) else str(n_clusters).strip()
    return f"{table}-k{k}-{(method or PIPELINE_METHODS[0]).lower()}"


def consensus_run_name() -> str:
    """The running consensus flow run's name, from its parameters (``flow_run_name`` of the flow)."""
    parameters = flow_run.parameters
    return work_name(parameters.get("table", "table"), parameters.get("n_clusters", "auto"),
                     parameters.get("method"))
