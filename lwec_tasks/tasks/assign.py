"""Tasks: label the rows of a table with a logged consensus model (no consensus is rerun).

load model → read and check the rows → place them → write the labels.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import Placement
from lwec_tasks.io import (
    LabelRows,
    check_label_table,
    ensure_latest_view,
    id_key_type,
    mask_url,
    open_engine,
    read_rows,
    write_labels,
)
from lwec_tasks.io.features import prepare_features
from lwec_tasks.preflight import plan_assign_read
from lwec_tasks.tasks.retry import database_task


@dataclass(frozen=True)
class RowsToLabel:
    """The rows read for labelling: raw (unstandardised) features in the model's column order, and their ids.

    ``id_type`` is the SQL type of the source's id column (None: row positions).
    """

    X: np.ndarray
    ids: np.ndarray
    id_column: str | None
    id_type: sa.types.TypeEngine | None


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
        raise LwecInputError(
            f"feature_columns {given} differ from the model's feature columns {list(placement.feature_columns)} "
            f"(feature set {placement.fingerprint}); the model labels rows by exactly its own features"
        )
    return placement.feature_columns


@task(name="load-model", cache_policy=NO_CACHE)
def load_model(model_uri: str) -> Placement:
    """The :class:`Placement` logged at ``model_uri`` (in ``$MLFLOW_TRACKING_URI``'s store)."""
    from lwec_tasks.tracking import mask_uri, resolve_tracking_uri
    from lwec_tasks.tracking.model import load_placement_model

    placement = load_placement_model(model_uri)
    get_run_logger().info(
        "Loaded model %s from %s: %s, k=%d, θ=%g, M=%d, features %s",
        model_uri, mask_uri(resolve_tracking_uri()), placement.method.upper(), placement.n_clusters,
        placement.theta, placement.ensemble_size, ", ".join(placement.feature_columns),
    )
    return placement


@database_task("read-rows-to-label")
def read_rows_to_label(database_url: str, table: str, feature_columns: Sequence[str], id_column: str | None,
                       output_table: str) -> RowsToLabel:
    """Reflect ``table``, check its columns and ``output_table``, read the rows; nothing is written.

    The checks are :func:`lwec_tasks.preflight.plan_assign_read`'s. Columns are
    resolved as in the consensus flow (:func:`~lwec_tasks.io.columns.plan_columns`:
    id column default the single-column primary key, else ``id``, else row positions).
    """
    started = time.perf_counter()
    engine = open_engine(database_url)
    try:
        planned = plan_assign_read(engine, table, feature_columns, id_column, output_table)
        plan = planned.columns
        order_by = plan.id_column or list(plan.columns_to_read)
        frame = read_rows(engine, planned.source, plan.columns_to_read, order_by=order_by,
                          exact_columns=[plan.id_column] if plan.id_column else [])
        if frame.empty:
            raise LwecInputError(f"table {table!r} is empty (no rows to label)")
        # No minimum row count (n_clusters=0) and no standardisation: the model standardises as its run did.
        features = prepare_features(frame, plan, n_clusters=0, standardize=False, drop_nonfinite=True, table=table)
        if features.n_rows_dropped:
            raise LwecInputError(
                f"{features.n_rows_dropped} row(s) of table {table!r} have missing or non-finite values in the "
                f"feature columns {list(plan.feature_columns)}; such rows cannot be labelled — clean them first"
            )
        id_type = id_key_type(features.ids, planned.id_type) if plan.id_column else None
        if plan.id_column and planned.source.kinds.get(plan.id_column) == "untyped":
            check_label_table(engine, output_table, table, id_type=id_type, id_column=plan.id_column)
    finally:
        engine.dispose()
    get_run_logger().info(
        "Read %d rows × %d features from table %r of %s in %.2f s (id column: %s)",
        len(features.ids), len(plan.feature_columns), table, mask_url(database_url),
        time.perf_counter() - started, plan.id_column or "row position",
    )
    return RowsToLabel(features.X, features.ids, plan.id_column, id_type)


@task(name="place-rows", cache_policy=NO_CACHE)
def place_rows(placement: Placement, rows: RowsToLabel) -> np.ndarray:
    """The model's cluster id of every row, (N,) int64."""
    started = time.perf_counter()
    labels = placement.predict(rows.X)
    seconds = time.perf_counter() - started
    get_run_logger().info("Placed %d rows in %.2f s (%.0f rows/s)", len(labels), seconds,
                          len(labels) / max(seconds, 1e-9))
    return labels


@database_task("write-assigned-labels")
def write_assigned_labels(database_url: str, table: str, output_table: str, run_key: str, placement: Placement,
                          rows: RowsToLabel, labels: np.ndarray) -> int:
    """Replace the rows of ``run_key`` in ``output_table`` (one transaction); returns rows written.

    Creates the ``<output_table>_latest`` view if missing, as the consensus flow does.
    """
    label_rows = LabelRows(
        run_key=run_key, ids=rows.ids, labels=labels, k=placement.n_clusters, method=placement.method,
        theta=placement.theta, ensemble_size=placement.ensemble_size, seed=placement.seed,
        source_table=table, flow_run_id=flow_run.id,
    )
    engine = open_engine(database_url)
    try:
        written = write_labels(engine, output_table, label_rows, id_type=rows.id_type)
        ensure_latest_view(engine, output_table)  # as the consensus flow: the latest run per source table
    finally:
        engine.dispose()
    get_run_logger().info("Wrote %d labels to table %r of %s (run key %r, earlier rows of this key replaced)",
                          written, output_table, mask_url(database_url), run_key)
    return written
