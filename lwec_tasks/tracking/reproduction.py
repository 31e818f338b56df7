"""Log a reproduction summary to MLflow: one parent run, one nested run per method.

Written with the same helper, default store and artifact location as
consensus runs (:mod:`lwec_tasks.tracking.runs`, :mod:`lwec_tasks.tracking.store`),
by explicit run ids, so it is safe to call from any thread.
"""

from __future__ import annotations

from lwec_tasks.tracking.runs import run_writer
from lwec_tasks.tracking.store import resolve_tracking_uri

#: Experiment reproductions go to unless told otherwise.
DEFAULT_EXPERIMENT = "lwec-reproduce"


def reproduction_metrics(summary: dict) -> dict[str, float]:
    """Metrics of one method's summary: ``<nmi|ari>_<best_k|true_k>_<mean|std>`` and ``seconds_mean``."""
    out = {}
    for metric in ("nmi", "ari"):
        for criterion in ("best_k", "true_k"):
            for stat in ("mean", "std"):
                value = summary[metric][criterion][stat]
                if value is not None:
                    out[f"{metric}_{criterion}_{stat}"] = float(value)
    out["seconds_mean"] = float(summary["seconds"]["mean"])
    return out


def reproduction_params(result: dict) -> dict[str, object]:
    """Params shared by the parent run and every method's run."""
    ks = list(result["ks"])
    contiguous = ks == list(range(min(ks), max(ks) + 1))
    return {
        "dataset": result["dataset"],
        "runs": result["runs"],
        "ensemble_size": result["ensemble_size"],
        "theta": result["theta"],
        "seed": result["seed"],
        "ks": f"{min(ks)}..{max(ks)}" if contiguous else ",".join(map(str, ks)),
    }


def log_reproduction(result: dict, tracking_uri: str | None = None, experiment: str = DEFAULT_EXPERIMENT) -> str:
    """Log ``result`` (from :func:`lwec_tasks.experiments.reproduce.reproduce`); return the parent run id.

    The parent run holds the shared params, ``methods`` and the whole result as
    ``reproduction.json``; each method gets a nested run (tag ``method``) with
    its mean/std scores as metrics. The store is
    :func:`~lwec_tasks.tracking.resolve_tracking_uri` of ``tracking_uri``
    (``env:VAR`` accepted; default ``$MLFLOW_TRACKING_URI``, else
    ``sqlite:///<cwd>/mlflow.db``). Raises :class:`~lwec_tasks.tracking.TrackingError`
    when the store cannot be reached or a write fails.
    """
    uri = resolve_tracking_uri(tracking_uri)
    shared = reproduction_params(result)
    with run_writer(uri, experiment) as writer:
        parent_id = writer.start_run(f"reproduce {result['dataset']}",
                                     params={**shared, "methods": ",".join(result["methods"])})
        for name, summary in result["methods"].items():
            writer.finish(writer.start_run(name, params={**shared, "method": name},
                                           metrics=reproduction_metrics(summary), tags={"method": name},
                                           parent_run_id=parent_id))
        writer.log_dict(parent_id, result, "reproduction.json")
        writer.finish(parent_id)
    return parent_id
