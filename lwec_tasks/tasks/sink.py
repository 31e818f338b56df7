"""Tasks: write labels back to the database, log the run to MLflow."""

from __future__ import annotations

import sqlalchemy as sa
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from lwec_tasks.io import LabelRows, mask_url, open_engine, write_labels
from lwec_tasks.tasks.retry import DB_RETRIES, DB_RETRY_DELAYS, retry_if_unreachable
from lwec_tasks.tracking import RunRecord, log_run, mask_uri

#: Attempts after the first for MLflow logging, and the wait before it.
TRACKING_RETRIES = 1
TRACKING_RETRY_DELAY = 3


@task(
    name="write-labels",
    retries=DB_RETRIES,
    retry_delay_seconds=DB_RETRY_DELAYS,
    retry_condition_fn=retry_if_unreachable,
    cache_policy=NO_CACHE,
)
def write_label_rows(database_url: str, output_table: str, rows: LabelRows,
                     id_type: sa.types.TypeEngine | None) -> int:
    """Replace this run's rows of ``output_table`` in one transaction; returns rows written."""
    engine = open_engine(database_url)
    try:
        written = write_labels(engine, output_table, rows, id_type=id_type)
    finally:
        engine.dispose()
    get_run_logger().info(
        "Wrote %d labels to table %r of %s (run key %r; earlier rows of this key replaced)",
        written, output_table, mask_url(database_url), rows.run_key,
    )
    return written


@task(
    name="log-to-mlflow",
    retries=TRACKING_RETRIES,
    retry_delay_seconds=TRACKING_RETRY_DELAY,
    cache_policy=NO_CACHE,
)
def log_to_mlflow(record: RunRecord, tracking_uri: str, experiment: str, run_name: str | None) -> str:
    """Log params, metrics, labels, ECI table and figures as one MLflow run; returns its run id."""
    run_id = log_run(record, tracking_uri=tracking_uri, experiment=experiment, run_name=run_name)
    get_run_logger().info(
        "Logged MLflow run %s in experiment %r at %s (%d params, %d metrics, %d figures)",
        run_id, experiment, mask_uri(tracking_uri), len(record.params), len(record.metrics), len(record.figures),
    )
    return run_id
