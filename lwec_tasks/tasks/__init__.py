"""Prefect tasks of the consensus pipeline: thin wrappers over the stages (:mod:`lwec_tasks.stages`).

load → generate base clusterings → ECI → consensus (LWEA | LWGP) → stable cluster ids → write labels
→ labelling model → log to MLflow → summary; the same tasks on either executor.
Importing this package registers the ``block:`` and ``secret:`` database URL references.
"""

from lwec_tasks.tasks import credentials  # noqa: F401 - registers the Prefect block URL resolvers
from lwec_tasks.tasks.stages import (
    ClusterReliability,
    build_labelling_model,
    cluster_reliability,
    consensus,
    generate_ensemble,
    load_features,
    stable_cluster_ids,
    write_label_rows,
)
from lwec_tasks.tasks.summary import publish_summary
from lwec_tasks.tasks.track import RunFacts, log_to_mlflow

__all__ = [
    "ClusterReliability",
    "RunFacts",
    "build_labelling_model",
    "cluster_reliability",
    "consensus",
    "generate_ensemble",
    "load_features",
    "log_to_mlflow",
    "publish_summary",
    "stable_cluster_ids",
    "write_label_rows",
]
