"""What a run reports: stage timings, quality metrics, the MLflow record, the Prefect artifact."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.io.features import PreparedFeatures
from lwec_tasks.io import mask_url
from lwec_tasks.tasks.cluster import ClusterReliability
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tracking import RunRecord, cluster_size_figure, eci_figure

#: Key of the run-summary artifact in the Prefect UI.
SUMMARY_ARTIFACT_KEY = "lwec-consensus-summary"


@dataclass
class StageTimer:
    """Wall-clock seconds per pipeline stage, logged as each stage ends."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str):
        started = time.perf_counter()
        yield
        self.seconds[name] = time.perf_counter() - started
        get_run_logger().info("Stage %s took %.2f s", name, self.seconds[name])


def agreement_with_truth(truth: np.ndarray | None, labels: np.ndarray) -> dict[str, float]:
    """NMI (max normalisation, as in the paper) and ARI against ground truth, on rows where it is known."""
    if truth is None:
        return {}
    from lwec_tasks import ari, nmi

    known = pd.notna(truth)
    if known.sum() < 2:
        return {}
    codes, _ = pd.factorize(pd.Series(truth[known]))
    predicted = np.asarray(labels)[known]
    return {"nmi": float(nmi(codes, predicted, normalization="max")), "ari": float(ari(codes, predicted))}


def run_record(
    request: ConsensusRequest,
    features: PreparedFeatures,
    id_column: str | None,
    ensemble: Ensemble,
    reliability: ClusterReliability,
    labels: np.ndarray,
    quality: dict[str, float],
    timings: dict[str, float],
    flow_run: dict[str, str],
) -> RunRecord:
    """Collect the params, metrics, tags, tables and figures of one run for MLflow."""
    sizes = np.bincount(np.asarray(labels, dtype=np.int64))
    params = {
        "method": request.method,
        "theta": request.theta,
        "ensemble_size": request.ensemble_size,
        "n_clusters": request.n_clusters,
        "seed": request.seed,
        "table": request.table,
        "database": mask_url(request.database_url),
        "output_table": request.resolved_output_table,
        "run_key": request.run_key,
        "id_column": id_column,
        "label_column": request.label_column,
        "feature_count": len(features.feature_columns),
        "feature_columns": ",".join(features.feature_columns),
        "n_objects": len(features.ids),
        "standardize": request.standardize,
        "drop_nonfinite": request.drop_nonfinite,
    }
    eci = reliability.eci
    metrics = {
        **quality,
        **{f"time_{stage}_s": seconds for stage, seconds in timings.items()},
        "eci_mean": float(eci.mean()),
        "eci_median": float(np.median(eci)),
        "eci_min": float(eci.min()),
        "eci_max": float(eci.max()),
        "uncertainty_mean_bits": float(reliability.uncertainty.mean()),
        "n_base_clusters": ensemble.n_clusters_total,
        "n_microclusters": ensemble.n_microclusters,
        "n_clusters_found": int((sizes > 0).sum()),
        "largest_cluster_fraction": float(sizes.max() / sizes.sum()),
        "n_rows_read": features.n_rows_read,
        "n_rows_dropped": features.n_rows_dropped,
    }
    tags = {
        "lwec.run_key": request.run_key,
        "lwec.method": request.method,
        **{f"prefect.{key}": value for key, value in flow_run.items() if value},
    }
    label_table = pd.DataFrame({"id": features.ids, "label": np.asarray(labels, dtype=np.int64)})
    if features.truth is not None:
        label_table["truth"] = features.truth
    clusters = pd.DataFrame({
        "cluster": np.arange(ensemble.n_clusters_total),
        "base_clustering": ensemble.cluster_column,
        "base_label": ensemble.cluster_label,
        "size": ensemble.cluster_sizes,
        "uncertainty_bits": reliability.uncertainty,
        "eci": eci,
    })
    figures = {
        "eci_distribution.png": eci_figure(eci, request.theta),
        "cluster_sizes.png": cluster_size_figure(labels, request.method),
    }
    return RunRecord(params, metrics, tags, label_table, clusters, figures)


def publish_summary(request: ConsensusRequest, summary: dict) -> None:
    """Publish :func:`summary_markdown` on the flow run's Artifacts tab."""
    create_markdown_artifact(
        markdown=summary_markdown(request, summary),
        key=SUMMARY_ARTIFACT_KEY,
        description=f"{request.method.upper()} consensus of {request.table}",
    )


def summary_markdown(request: ConsensusRequest, summary: dict) -> str:
    """A markdown table of the run's outcome; the MLflow run id links to its page in the MLflow UI."""
    rows = [
        ("Source", f"`{request.table}` in `{mask_url(request.database_url)}`"),
        ("Rows clustered", summary.get("n_objects")),
        ("Method / k / θ / M / seed",
         f"{request.method.upper()} / {request.n_clusters} / {request.theta:g} / {request.ensemble_size} / {request.seed}"),
        ("Clusters found", summary.get("n_clusters_found")),
        ("NMI / ARI", _pair(summary.get("nmi"), summary.get("ari"))),
        ("Labels table", f"`{summary.get('output_table')}` (run key `{summary.get('run_key')}`, "
                         f"{summary.get('rows_written', 0)} rows)"),
        ("MLflow run", f"[{summary['mlflow_run_id']}]({summary['mlflow_run_url']}) in experiment "
                       f"`{request.experiment}`" if summary.get("mlflow_run_url")
         else f"`{summary.get('mlflow_run_id')}` in experiment `{request.experiment}`"
         if summary.get("mlflow_run_id") else f"**not logged**: {summary.get('mlflow_error')}"),
        ("Stage times (s)", ", ".join(f"{k} {v:.2f}" for k, v in summary.get("timings", {}).items())),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    return f"# lwec consensus run\n\n| | |\n|---|---|\n{table}\n"


def _pair(a, b) -> str:
    return "n/a (no label_column)" if a is None else f"{a:.4f} / {b:.4f}"
