"""Tasks: label the rows of a table with a logged consensus model (no consensus is rerun).

load model → read and check the rows → place them → write the labels.
"""

from __future__ import annotations

import hashlib
import operator
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import Placement
from lwec_tasks.io.label_store import LabelStore
from lwec_tasks.io.limits import DEFAULT_CHUNK_SIZE
from lwec_tasks.io.names import TableName
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.preflight import plan_assign_read
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.read import PartitionedTable, read_partitions
from lwec_tasks.stages.write import write_labels
from lwec_tasks.tasks.retry import database_task


def assign_run_key(placement: Placement, table: str) -> str:
    """``assign-<12 hex>``: a digest of the model's content and the source table.

    The same model applied to the same table always writes under the same key
    (a rerun replaces its rows), whichever URI named the model.
    """
    digest = hashlib.sha256(f"{placement.digest()}\0{table}".encode()).hexdigest()
    return f"assign-{digest[:12]}"


def check_feature_columns(placement: Placement, feature_columns: Sequence[str] | None) -> tuple[str, ...]:
    """The model's feature columns; ``feature_columns``, when given, must be the same set (any order)."""
    if feature_columns is None:
        return placement.feature_columns
    given = [str(c) for c in feature_columns]
    if sorted(given) != sorted(placement.feature_columns) or len(set(given)) != len(given):
        raise LwecInputError(f"feature_columns {given} differ from the model's feature columns "
                             f"{list(placement.feature_columns)} (feature set {placement.fingerprint}); the model "
                             "labels rows by exactly its own features")
    return placement.feature_columns


@task(name="load-model", cache_policy=NO_CACHE)
def load_model(model_uri: str) -> Placement:
    """The :class:`Placement` logged at ``model_uri`` (in ``$MLFLOW_TRACKING_URI``'s store)."""
    from lwec_tasks.tracking import mask_uri, resolve_tracking_uri
    from lwec_tasks.tracking.model import load_placement_model

    placement = load_placement_model(model_uri)
    get_run_logger().info("Loaded model %s from %s: %s, k=%d, θ=%g, M=%d, features %s", model_uri,
                          mask_uri(resolve_tracking_uri()), placement.method.upper(), placement.n_clusters,
                          placement.theta, placement.ensemble_size, ", ".join(placement.feature_columns))
    return placement


@database_task("read-rows-to-label")
def read_rows_to_label(executor, store: LabelStore, table: TableName, feature_columns: Sequence[str],
                       id_column: str | None, base_columns: bool = False, encoding=None) -> PartitionedTable:
    """Reflect ``table`` (in ``store``'s database), check its columns and the store's output table, have the
    executor read the rows in partitions (raw feature values, in the model's column order); nothing is written.

    The checks are :func:`lwec_tasks.preflight.plan_assign_read`'s. Columns are resolved as in the consensus
    flow (:func:`~lwec_tasks.io.columns.plan_columns`: id column default the single-column primary key, else
    ``id``, else row positions). With the model's ``encoding`` (typed columns) a missing numeric value is
    filled with the run's fill value and a text or boolean value encoded with the run's levels (an unseen one,
    all zeros); without one (models of earlier releases) rows with a missing or non-finite feature are refused.
    With ``base_columns`` the ``feature_columns`` are a label model's base columns, read as labels.
    """
    started = time.perf_counter()
    log = get_run_logger()
    planned = plan_assign_read(store.engine, table, feature_columns, id_column, store.names.view, base_columns,
                               allow_missing=encoding is not None)
    rows, summaries = read_partitions(executor, store, table, planned, DEFAULT_CHUNK_SIZE, False, log,
                                      encoding=encoding, impute=True)
    n_bad = sum(s.n_nonfinite for s in summaries)
    if encoding is not None:
        imputed = sum(int(np.sum(s.nan_counts) + np.sum(s.inf_counts)) for s in summaries)
        if n_bad:
            log.info("%d row(s) of table %r have missing values: numeric gaps filled with the run's means (%d "
                     "values), NULL text/boolean values placed as the run's NULL level (unknown where the run's "
                     "NULLs fell at random; where the run had none, as unseen)", n_bad, table, imputed)
    elif n_bad:
        raise LwecInputError(
            f"{n_bad} row(s) of table {table!r} have missing or non-finite values in the feature columns "
            f"{list(planned.columns.feature_columns)}; such rows cannot be labelled — clean them first")
    log.info("Read %d rows × %d features from table %r of %s in %.2f s (%d partitions; id column: %s)", rows.n_rows,
             len(planned.columns.feature_columns), table, store.masked_url, time.perf_counter() - started,
             rows.n_partitions, planned.columns.id_column or "row position")
    return rows


@task(name="place-rows", cache_policy=NO_CACHE)
def place_rows(placement: Placement, rows: PartitionedTable) -> tuple[list, list | None, dict[int, int]]:
    """(the model's cluster id of every row, one handle of (n_p,) int64 per partition; the rows' confidences for
    the write, one handle per partition, None for a model without confidence state; rows per cluster id)."""
    started = time.perf_counter()
    session = rows.session
    placed = session.map(part.place_partition_with_confidence, rows.rows, name="place",
                         placement=session.share(placement))
    labels = session.map(operator.itemgetter(0), placed, name="placed-labels")
    confidence = session.map(operator.itemgetter(1), placed, name="placed-confidence") \
        if placement.has_confidence else None
    counts = Counter()
    for ids, n in session.gather(session.map(np.unique, labels, name="label-counts", return_counts=True)):
        counts.update(dict(zip(ids.tolist(), n.tolist())))
    seconds = time.perf_counter() - started
    get_run_logger().info("Placed %d rows in %.2f s (%.0f rows/s)", rows.n_rows, seconds,
                          rows.n_rows / max(seconds, 1e-9))
    return labels, confidence, dict(sorted(counts.items()))


@database_task("write-assigned-labels")
def write_assigned_labels(rows: PartitionedTable, table: TableName, store: LabelStore, run_key: str,
                          placement: Placement, labels: list, confidence: list | None = None) -> int:
    """Replace the rows of ``run_key`` in ``store`` (one transaction) by the partitions' ``labels`` (and each row's
    ``confidence`` beside its label: one handle per partition, or None); returns the rows labelled. Creates the
    ``<output_table>_latest`` view if missing, as the consensus flow does.
    """
    run = RunMetadata(run_key=run_key, k=placement.n_clusters, method=placement.method, theta=placement.theta,
                      ensemble_size=placement.ensemble_size, seed=placement.seed, source_table=str(table),
                      flow_run_id=flow_run.id)
    write_labels(rows, labels, store, run, get_run_logger(), confidence=confidence)
    return rows.n_rows
