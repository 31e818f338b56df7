"""Task: renumber a run's cluster ids to agree with the source table's latest earlier run."""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass

import numpy as np
from prefect import get_run_logger

from lwec_tasks.io import latest_earlier_run, open_engine
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.load import LoadedFeatures
from lwec_tasks.tasks.retry import database_task
from lwec_tasks.tasks.timings import record_stage_time


@dataclass(frozen=True)
class StableIds:
    """The ids a run writes.

    Attributes
    ----------
    labels : (N,) int64, the cluster id written for each object
    ids : (k,) int64, the id given to each consensus cluster 0..k−1 (``labels = ids[consensus labels]``)
    aligned_to : run key of the earlier run the ids agree with; None when there was none (or turned off)
    agreement : fraction of the objects both runs labelled that keep their earlier id; None without an earlier run
    n_shared : number of objects both runs labelled
    """

    labels: np.ndarray
    ids: np.ndarray
    aligned_to: str | None
    agreement: float | None
    n_shared: int


def matchable_ids(ids: np.ndarray, earlier_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both runs' ids (N,) and (M,) in a form the matching compares: as they are when they are numbers or
    strings; otherwise (``uuid`` values, decimals, integers beyond 64 bits) both as their canonical text,
    so equal ids stay equal and distinct ones distinct."""
    def plain(values: np.ndarray) -> bool:
        return values.dtype.kind in "iufUS" or all(type(v) is str for v in values)

    if plain(ids) and plain(earlier_ids):
        return ids, earlier_ids

    def text(value) -> str:
        if isinstance(value, decimal.Decimal):
            value = value.normalize()
        return str(value)

    return (np.array([text(v) for v in ids.tolist()], dtype=object),
            np.array([text(v) for v in earlier_ids.tolist()], dtype=object))


@database_task("stable-cluster-ids", on_completion=[record_stage_time])
def stable_cluster_ids(request: ConsensusRequest, loaded: LoadedFeatures, labels: np.ndarray, k: int) -> StableIds:
    """Renumber ``labels`` (N,) in 0..k−1 by a maximum-overlap matching with the latest earlier run.

    The earlier run is the most recent other run key of the same source table
    in the labels table. Nothing changes when ``request.stable_ids`` is off or
    there is no earlier run.
    """
    from lwec_tasks.core.renumber import align_to_previous, ids_per_cluster

    logger = get_run_logger()
    labels = np.asarray(labels, dtype=np.int64)
    unchanged = StableIds(labels, np.arange(k, dtype=np.int64), None, None, 0)
    if not request.stable_ids:
        return unchanged
    engine = open_engine(request.database_url)
    try:
        earlier = latest_earlier_run(engine, request.resolved_output_table, request.table, request.run_key)
    finally:
        engine.dispose()
    if earlier is None:
        logger.info("No earlier run of table %r in %r: cluster ids are 0..%d", request.table,
                    request.resolved_output_table, k - 1)
        return unchanged
    ids_now, ids_before = matchable_ids(loaded.features.ids, earlier.ids)
    renumbered = align_to_previous(labels, ids_now, ids_before, earlier.labels)
    ids = ids_per_cluster(renumbered.mapping, k)
    agreement = None if math.isnan(renumbered.agreement) else float(renumbered.agreement)
    logger.info(
        "Cluster ids aligned to run %r: %d of %d clusters matched; %s of the %d objects both runs labelled keep "
        "their id", earlier.run_key, renumbered.n_matched, k,
        "none" if agreement is None else f"{agreement:.1%}", renumbered.n_shared,
    )
    return StableIds(renumbered.labels, ids, earlier.run_key, agreement, renumbered.n_shared)

