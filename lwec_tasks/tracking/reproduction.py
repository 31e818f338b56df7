"""Log a reproduction summary to MLflow: one parent run, one nested run per method.

Uses :class:`mlflow.MlflowClient` with explicit run ids (no global active run),
so it is safe to call from any thread.
"""

from __future__ import annotations

import os

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"


def _metrics(summary: dict) -> dict[str, float]:
    out = {}
    for metric in ("nmi", "ari"):
        for criterion in ("best_k", "true_k"):
            for stat in ("mean", "std"):
                value = summary[metric][criterion][stat]
                if value is not None:
                    out[f"{metric}_{criterion}_{stat}"] = float(value)
    out["seconds_mean"] = float(summary["seconds"]["mean"])
    return out


def log_reproduction(result: dict, tracking_uri: str | None = None, experiment: str = "lwec-reproduce") -> str:
    """Log ``result`` (from :func:`lwec_tasks.experiments.reproduce.reproduce`); return the parent run id.

    The tracking URI is ``tracking_uri``, else ``$MLFLOW_TRACKING_URI``, else
    ``sqlite:///mlflow.db`` (set explicitly so a stray ``./mlruns`` is never used).
    """
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    shared = {
        "dataset": result["dataset"],
        "runs": result["runs"],
        "ensemble_size": result["ensemble_size"],
        "theta": result["theta"],
        "seed": result["seed"],
        "ks": f"{min(result['ks'])}..{max(result['ks'])}" if result["ks"] == list(
            range(min(result["ks"]), max(result["ks"]) + 1)
        ) else ",".join(map(str, result["ks"])),
    }
    parent = client.create_run(experiment_id, run_name=f"reproduce {result['dataset']}")
    parent_id = parent.info.run_id
    params = [Param(k, str(v)) for k, v in shared.items()]
    params.append(Param("methods", ",".join(result["methods"])))
    client.log_batch(parent_id, params=params)
    for name, summary in result["methods"].items():
        child = client.create_run(
            experiment_id, run_name=name, tags={"mlflow.parentRunId": parent_id, "method": name}
        )
        child_id = child.info.run_id
        metrics = [Metric(k, v, 0, 0) for k, v in _metrics(summary).items()]
        client.log_batch(
            child_id,
            metrics=metrics,
            params=[Param(k, str(v)) for k, v in shared.items()] + [Param("method", name)],
        )
        client.set_terminated(child_id)
    client.log_dict(parent_id, result, "reproduction.json")
    client.set_terminated(parent_id)
    return parent_id
