"""Task: read and check the feature table."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa
from prefect import get_run_logger

from lwec_tasks.io import check_label_table, id_key_type, mask_url, open_engine, read_rows
from lwec_tasks.io.columns import ColumnPlan, unique_integer_columns
from lwec_tasks.io.features import PreparedFeatures, prepare_features
from lwec_tasks.preflight import plan_consensus_read
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.retry import database_task
from lwec_tasks.tasks.timings import record_stage_time


class FeatureMatrix:
    """Holds the (N, d) feature matrix until the base clusterings take it.

    Prefect keeps every task's result alive until the flow run ends; handing the
    matrix over through :meth:`take` lets its memory go once it is used.
    """

    def __init__(self, X: np.ndarray):
        self._X: np.ndarray | None = X
        self.shape = X.shape

    def take(self) -> np.ndarray:
        """The matrix; this holder no longer refers to it afterwards."""
        if self._X is None:
            raise RuntimeError("the feature matrix was already handed to the base clusterings")
        X, self._X = self._X, None
        return X


@dataclass(frozen=True)
class LoadedFeatures:
    """The prepared features plus what the write-back needs about the source.

    ``features.X`` is None: the (N, d) matrix is in ``matrix`` until taken.
    ``id_type`` is the SQL type of the source's id column (None: row positions).
    """

    features: PreparedFeatures
    id_column: str | None
    id_type: sa.types.TypeEngine | None
    matrix: FeatureMatrix


@database_task("load-features", on_completion=[record_stage_time])
def load_features(request: ConsensusRequest) -> LoadedFeatures:
    """Reflect the source table, check every column and the output table, read and prepare the rows.

    The checks are :func:`lwec_tasks.preflight.plan_consensus_read`'s (the
    command line runs them before Prefect starts). Nothing is written. Raises
    :class:`~lwec_tasks.core.errors.LwecInputError` on bad input (or a refusal
    by the database) and :class:`~lwec_tasks.io.DatabaseUnreachableError`
    (retried) when the database does not answer. Logs the columns clustered on,
    those left out and why, and warns about feature columns that look like keys.
    """
    logger = get_run_logger()
    started = time.perf_counter()
    engine = open_engine(request.database_url)
    try:
        planned = plan_consensus_read(engine, request)
        plan = planned.columns
        # Without an id column, sort by every column read so that the row positions
        # used as ids do not depend on the database's (undefined) row order.
        order_by = plan.id_column or list(plan.columns_to_read)
        frame = read_rows(engine, planned.source, plan.columns_to_read, order_by=order_by,
                          chunk_size=request.chunk_size, exact_columns=[plan.id_column] if plan.id_column else [])
        key_like = _key_like(plan, frame)
        features = prepare_features(
            frame,
            plan,
            n_clusters=2 if request.auto_k else request.n_clusters,  # auto: the smallest k searched
            standardize=request.standardize,
            drop_nonfinite=request.drop_nonfinite,
            table=request.table,
        )
        del frame
        # Settled here, before any computation: a column without a usable declared type
        # (SQLite `create table t (id, ...)`) gets one inferred from its values, and the
        # labels table's ids must be of the same kind.
        id_type = id_key_type(features.ids, planned.id_type) if plan.id_column else None
        if plan.id_column and planned.source.kinds.get(plan.id_column) == "untyped":
            check_label_table(engine, planned.output_table, request.table, id_type=id_type, id_column=plan.id_column)
    finally:
        engine.dispose()
    seconds = time.perf_counter() - started
    logger.info("Table %r: %s", request.table, plan.describe())
    for name, why in key_like.items():
        logger.warning(
            "Feature column %r of table %r looks like a key (%s), not a measurement: clustering on it groups rows "
            "by their key; leave it out (feature_columns=%r) or pass id_column=%r",
            name, request.table, why, [c for c in plan.feature_columns if c != name] or None, name,
        )
    if plan.label_like_features:
        logger.warning(
            "Feature column(s) %s of table %r are named like a ground truth or target; if they hold labels, "
            "pass label_column=%r (CLI: --label-column) so they are used for NMI/ARI, not clustered on",
            plan.label_like_features, request.table, plan.label_like_features[0],
        )
    if not plan.id_column:
        logger.warning(
            "Table %r has no id column (no single-column primary key, no column named 'id'): ids in the "
            "labels table are row positions after sorting the rows by %s; pass id_column to key them by a column",
            request.table, ", ".join(plan.columns_to_read),
        )
    logger.info(
        "Loaded %d rows × %d features from table %r of %s in %.2f s (%.0f rows/s; id column: %s, "
        "ground truth: %s%s)",
        features.n_rows_read, len(plan.feature_columns), request.table, mask_url(request.database_url), seconds,
        features.n_rows_read / max(seconds, 1e-9),
        plan.id_column or "row position", plan.label_column or "none",
        f"; dropped {features.n_rows_dropped} rows with non-finite features" if features.n_rows_dropped else "",
    )
    matrix = FeatureMatrix(features.X)
    return LoadedFeatures(dataclasses.replace(features, X=None), plan.id_column, id_type, matrix)


def _key_like(plan: ColumnPlan, frame) -> dict[str, str]:
    """Feature columns that look like keys → why: named like one, or integers distinct in every row."""
    unique = set(unique_integer_columns(frame, plan.feature_columns))
    reasons = {}
    for name in plan.feature_columns:
        why = [w for w, hit in (("named like a key", name in plan.key_like_features),
                                (f"an integer with a distinct value in each of the {len(frame)} rows",
                                 name in unique)) if hit]
        if why:
            reasons[name] = " and ".join(why)
    return reasons
