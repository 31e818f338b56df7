"""Task: the run's labelling model (what places a new row in this run's clusters)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from lwec_tasks.core.consensus import Consensus
from lwec_tasks.core.placement import Placement
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.cluster import BaseEnsemble, ClusterReliability
from lwec_tasks.tasks.load import LoadedFeatures
from lwec_tasks.tasks.renumber import StableIds
from lwec_tasks.tasks.timings import record_stage_time

#: Rows of the model's input example (raw feature values of sampled training rows).
INPUT_EXAMPLE_ROWS = 5


@dataclass(frozen=True)
class LabellingModel:
    """The run's labelling model and what is logged with it.

    Attributes
    ----------
    placement : maps raw feature rows to the written ids
    input_example : a few raw training rows named by the feature columns (the MLflow input example)
    labels_given_back : share of the sampled training rows given back the id the run wrote
    """

    placement: Placement
    input_example: pd.DataFrame
    labels_given_back: float


@task(name="build-labelling-model", cache_policy=NO_CACHE, on_completion=[record_stage_time])
def labelling_model(request: ConsensusRequest, loaded: LoadedFeatures, base: BaseEnsemble,
                    reliability: ClusterReliability, result: Consensus, stable: StableIds) -> LabellingModel:
    """The :class:`~lwec_tasks.core.placement.Placement` of this run, mapping raw feature rows to the written ids.

    It holds the standardisation, the M base k-means centres, the ECI and the
    consensus state (LWGP: Tcut's cluster vectors and the embedding centres;
    LWEA: each base cluster's share of every consensus cluster). It is checked
    on the run's sample of rows (:data:`~lwec_tasks.tasks.cluster.PICTURE_SAMPLE`).
    """
    from lwec_tasks.core.placement import build_placement

    placement = build_placement(
        loaded.features, base, base.ensemble, reliability.eci, stable.labels, request.method, request.theta,
        loaded.features.feature_columns, n_clusters=result.k, seed=request.seed,
    )
    rows = raw_sample_rows(placement, base)
    given_back = float(np.mean(placement.predict(rows) == stable.labels[base.sample]))
    get_run_logger().info("Labelling model built: %s placement over %d base clusterings; it gives back %.1f%% of "
                          "the run's labels on %d sampled rows", request.method.upper(), placement.ensemble_size,
                          100 * given_back, len(base.sample))
    example = pd.DataFrame(rows[:INPUT_EXAMPLE_ROWS], columns=list(placement.feature_columns))
    return LabellingModel(placement, example, given_back)


def raw_sample_rows(placement: Placement, base: BaseEnsemble) -> np.ndarray:
    """The sampled training rows (S, d) as raw feature values (the standardisation undone)."""
    rows = np.array(base.sample_rows, dtype=np.float64)
    if placement.standardisation is not None:
        rows = rows * placement.standardisation.scale + placement.standardisation.mean
    return rows
