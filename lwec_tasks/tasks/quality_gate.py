"""Task: the run's quality gate — promote the run (``<labels>_latest``, the model alias) or hold it — and its
events (:mod:`lwec_tasks.tasks.events`).

Without ``promote_if`` only ``lwec.consensus.completed`` is emitted: the run was written promoted. With it, the
run was written held (:func:`lwec_tasks.tasks.stages.write_label_rows`) and is judged on its MLflow metrics
(:func:`lwec_tasks.gate.judge`): when every condition holds, the run is promoted (``held`` cleared, so
``<labels>_latest`` shows it; with ``register_model`` its model version gets ``model_alias``) and
``lwec.consensus.promoted`` emitted; otherwise ``lwec.consensus.held`` is emitted and
:class:`~lwec_tasks.gate.RunHeld` raised, which fails the flow run with a message naming each failed condition
and its figure.
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from lwec_tasks.gate import RunHeld, Verdict, judge
from lwec_tasks.io.label_storage import StorageNames
from lwec_tasks.io.label_store import LabelStore
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.events import COMPLETED, HELD, PROMOTED, emit_run_event


@task(name="quality-gate", cache_policy=NO_CACHE)
def settle_run(request: ConsensusRequest, summary: dict, logged: dict, store: LabelStore) -> dict:
    """Judge the run on ``logged["metrics"]`` (what :func:`~lwec_tasks.tasks.track.log_to_mlflow` returned),
    promote or hold it in the labels ``store`` (module docstring) and return ``summary`` with ``gate``: None
    without ``promote_if``, else ``{"promote_if", "outcome": "promoted", "not_applied": [conditions over
    unmeasured metrics], "model_alias_uri": "models:/<name>@<alias>" or None}``. Raises
    :class:`RunHeld` for a held run."""
    metrics = logged.get("metrics", {})
    if request.promote_if is None:
        emit_run_event(COMPLETED, request, summary, metrics)
        return {**summary, "gate": None}
    verdict = judge(request.gate, metrics)
    log = get_run_logger()
    for condition in verdict.unmeasured:
        log.info("Quality gate: %s not applied (the run has no %s: no earlier run to compare with, or no "
                 "label_column)", condition, condition.metric)
    gate = {"promote_if": request.promote_if, "not_applied": [str(c) for c in verdict.unmeasured],
            "failed": [{"condition": str(c), "value": value} for c, value in verdict.failed]}
    if not verdict.promoted:
        emit_run_event(COMPLETED, request, summary, metrics, {**gate, "outcome": "held"})
        emit_run_event(HELD, request, summary, metrics, {**gate, "outcome": "held"})
        raise RunHeld(held_message(request, verdict, store.names))
    alias_uri = promote(request, logged, store)
    log.info("Quality gate %r passed: run key %r promoted to view %r%s", request.promote_if, request.run_key,
             str(store.names.latest), f"; {alias_uri}" if alias_uri else "")
    gate.update(outcome="promoted", model_alias_uri=alias_uri)
    emit_run_event(COMPLETED, request, summary, metrics, gate)
    emit_run_event(PROMOTED, request, summary, metrics, gate)
    return {**summary, "gate": gate}


def promote(request: ConsensusRequest, logged: dict, store: LabelStore) -> str | None:
    """Clear the run's ``held`` mark in the labels ``store``; with ``register_model``, move ``model_alias`` to the
    run's model version. Returns ``models:/<name>@<alias>``, or None without ``register_model``."""
    store.promote(request.run_key)
    if not request.register_model:
        return None
    from lwec_tasks.tracking import resolve_tracking_uri
    from lwec_tasks.tracking.aliases import move_alias

    return move_alias(resolve_tracking_uri(request.tracking_uri), request.register_model, logged["run_id"],
                      request.model_alias)


def held_message(request: ConsensusRequest, verdict: Verdict, names: StorageNames) -> str:
    """One line for a held run: each failed condition and its figure, where its labels are (``names``: the labels
    storage's), what did not move."""
    unmoved = f"view {str(names.latest)!r}"
    if request.register_model:
        unmoved += f" and alias {request.model_alias!r} of model {request.register_model!r}"
    return (f"run key {request.run_key!r} held by promote_if {request.promote_if!r}: {verdict.describe()}; its "
            f"labels are in table {request.resolved_output_table!r} under run key {request.run_key!r}, {unmoved} "
            "not moved")
