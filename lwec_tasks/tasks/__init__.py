"""Prefect tasks of the consensus pipeline: thin wrappers over the library.

load → generate base clusterings → ECI → consensus (LWEA | LWGP) → stable cluster ids → write labels
→ log to MLflow → summary.
Importing this package registers the ``block:`` and ``secret:`` database URL references.
"""

from lwec_tasks.tasks import credentials  # noqa: F401 - registers the Prefect block URL resolvers
from lwec_tasks.tasks.cluster import ClusterReliability, cluster_reliability, consensus_labels, generate_ensemble
from lwec_tasks.tasks.load import LoadedFeatures, load_features
from lwec_tasks.tasks.model import labelling_model
from lwec_tasks.tasks.renumber import StableIds, stable_cluster_ids
from lwec_tasks.tasks.sink import write_label_rows
from lwec_tasks.tasks.summary import publish_summary
from lwec_tasks.tasks.track import log_to_mlflow

__all__ = [
    "ClusterReliability",
    "LoadedFeatures",
    "StableIds",
    "cluster_reliability",
    "consensus_labels",
    "generate_ensemble",
    "labelling_model",
    "load_features",
    "log_to_mlflow",
    "publish_summary",
    "stable_cluster_ids",
    "write_label_rows",
]
