"""Prefect tasks of the consensus pipeline: thin wrappers over the library.

load → generate base clusterings → ECI → consensus (LWEA | LWGP) → write labels → log to MLflow.
"""

from lwec_tasks.tasks.cluster import ClusterReliability, cluster_reliability, consensus_labels, generate_ensemble
from lwec_tasks.tasks.load import LoadedFeatures, load_features
from lwec_tasks.request import METHODS, ConsensusRequest, Method
from lwec_tasks.tasks.sink import log_to_mlflow, write_label_rows

__all__ = [
    "METHODS",
    "ClusterReliability",
    "ConsensusRequest",
    "LoadedFeatures",
    "Method",
    "cluster_reliability",
    "consensus_labels",
    "generate_ensemble",
    "load_features",
    "log_to_mlflow",
    "write_label_rows",
]
