"""What a run records in MLflow: params, metrics, tags, tables and figures; agreement with ground truth."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lwec_tasks.core.consensus import Consensus
from lwec_tasks.io import mask_url
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.cluster import BaseEnsemble, ClusterReliability
from lwec_tasks.tasks.load import LoadedFeatures
from lwec_tasks.tasks.model import LabellingModel
from lwec_tasks.tasks.renumber import StableIds
from lwec_tasks.tracking import RunRecord, SourceTable
from lwec_tasks.tracking.figures import consensus_figures


def agreement_with_truth(truth: np.ndarray | None, labels: np.ndarray) -> dict[str, float]:
    """NMI (max normalisation, as in the paper) and ARI against ground truth, on rows where it is known."""
    if truth is None:
        return {}
    from lwec_tasks.core.metrics import ari, nmi

    known = pd.notna(truth)
    if known.sum() < 2:
        return {}
    codes, _ = pd.factorize(pd.Series(truth[known]))
    predicted = np.asarray(labels)[known]
    return {"nmi": float(nmi(codes, predicted, normalization="max")), "ari": float(ari(codes, predicted))}


def run_record(
    request: ConsensusRequest,
    loaded: LoadedFeatures,
    base: BaseEnsemble,
    reliability: ClusterReliability,
    result: Consensus,
    stable: StableIds,
    model: LabellingModel,
    timings: dict[str, float],
    flow_run: dict[str, str | None],
) -> RunRecord:
    """Collect the params, metrics, tags, tables, figures and labelling model of one run for MLflow.

    ``result`` is the consensus, ``stable`` the ids written for it and ``model``
    the labelling model (logged as the MLflow model ``model``); ``timings``
    maps stage → seconds; ``flow_run`` holds the Prefect ids and links tagged
    on the run. The source table (database reference masked, table, feature
    columns, rows) becomes the run's dataset input.
    """
    features, id_column, ensemble = loaded.features, loaded.id_column, base.ensemble
    labels = stable.labels
    quality = agreement_with_truth(features.truth, labels)
    sizes = np.bincount(np.asarray(labels, dtype=np.int64))
    params = {
        "method": request.method,
        "theta": request.theta,
        "ensemble_size": request.ensemble_size,
        "n_clusters": request.n_clusters,
        "k": result.k,
        "k_criterion": result.selection.criterion if result.selection is not None else None,
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
        "stable_ids": request.stable_ids,
        "keep_runs": request.keep_runs,
        "ids_aligned_to": stable.aligned_to,
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
        "k": result.k,
        "id_agreement_with_previous_run": stable.agreement,
        "objects_shared_with_previous_run": stable.n_shared if stable.aligned_to else None,
        "model_labels_given_back": model.labels_given_back,
    }
    tags = {
        "lwec.run_key": request.run_key,
        "lwec.method": request.method,
        **({"lwec.aligned_to_run_key": stable.aligned_to} if stable.aligned_to else {}),
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
    return RunRecord(params, metrics, tags, label_table, clusters, consensus_figures(
        request.method, request.theta, eci, np.bincount(labels), base.sample_rows, labels[base.sample], result.k,
        result.linkage, result.selection),
                     model=model.placement, model_input_example=model.input_example,
                     register_model_name=request.register_model, source=source_table(request, loaded))


def source_table(request: ConsensusRequest, loaded: LoadedFeatures) -> SourceTable:
    """The table the run clustered: database as given (masked when logged), table, feature columns, rows."""
    features = loaded.features
    return SourceTable(database=request.database_url, table=request.table,
                       feature_columns=tuple(features.feature_columns), n_rows=len(features.ids),
                       n_rows_read=features.n_rows_read)

