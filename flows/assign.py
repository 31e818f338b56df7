"""Labelling new rows with a logged consensus model, without rerunning the consensus.

    load model (MLflow URI) → read and check the table's rows → place them → write labels → summary

Each consensus run logs an MLflow model (``runs:/<run id>/model``) holding the
base clusterings' centres and the consensus state
(:class:`~lwec_tasks.core.placement.Placement`). This flow applies it to the rows
of a table and writes their cluster ids through the same idempotent sink as
the consensus flow (table ``<table>_lwec_labels`` by default, one run key per
model and source table: a rerun replaces its rows). Every input is checked
before anything is written. The model is looked up in the MLflow store of
``$MLFLOW_TRACKING_URI`` (the default store otherwise).
"""

from __future__ import annotations

from prefect import flow, get_run_logger

from lwec_tasks.core.label_placement import LabelPlacement
from lwec_tasks.executors import open_executor
from lwec_tasks.io import check_new_table_name, default_output_table, mask_url, table_name
from lwec_tasks.io.duckdb_dialect import refuse_other_processes
from lwec_tasks.io.label_store import open_label_store
from lwec_tasks.request import non_empty_text, optional_address, optional_column
from lwec_tasks.tasks.assign import (
    assign_run_key,
    check_feature_columns,
    load_model,
    place_rows,
    read_rows_to_label,
    write_assigned_labels,
)
from lwec_tasks.tasks.cancellation import flow_run_stops
from lwec_tasks.tasks.credentials import register_block_resolvers
from lwec_tasks.tasks.error_logs import log_errors_once
from lwec_tasks.tasks.heartbeats import flow_run_heartbeats

FLOW_NAME = "lwec-assign"
log_errors_once()  # a failed run's error in its log once, one line for bad input


@flow(name=FLOW_NAME, description="Label the rows of a table with a logged LWEA/LWGP consensus model.")
def assign_flow(
    database_url: str,
    table: str,
    model_uri: str,
    feature_columns: list[str] | None = None,
    id_column: str | None = None,
    output_table: str | None = None,
    dask_address: str | None = None,
) -> dict:
    """Label the rows of ``table`` with the consensus model at ``model_uri``.

    Returns ``rows_labelled``, ``output_table``, ``run_key``, ``model_uri``, ``method``,
    ``n_clusters``, ``feature_columns`` and ``counts`` (rows per cluster id).

    Args:
        database_url: SQLAlchemy URL of the database holding the table (or env:VAR / block:NAME / secret:NAME).
        table: Table (or view) whose rows are labelled: table or schema.table; a name containing a dot in double
            quotes: "my.table" or analytics."my.table".
        model_uri: MLflow model URI of a consensus run's model, e.g. runs:/<run id>/model, models:/<name>/<version>
            or models:/<name>@champion (the version a quality gate promoted).
        feature_columns: The model's feature columns (any order); default the model's own. Other columns are refused.
        id_column: Column identifying each row; default the single-column primary key, else a column named id,
            else row positions.
        output_table: Table receiving the labels (table or schema.table); default <table>_lwec_labels in the
            table's schema.
        dask_address: Address of an existing Dask scheduler, e.g. tcp://10.0.0.5:8786; the rows are then read,
            placed and written by its workers (default: in this process, a thread per core).
    """
    _check_parameters(database_url, table, model_uri, id_column, dask_address)
    register_block_resolvers()  # block: and secret: URLs, resolved once by the run's labels store
    source = table_name("table", table)
    output = check_new_table_name(output_table) if output_table is not None else default_output_table(source)
    table, output_table = str(source), str(output)
    placement = load_model(model_uri)
    columns = check_feature_columns(placement, feature_columns)
    run_key = assign_run_key(placement, table)
    # nothing published after SIGINT/SIGTERM; a cancel is no crash
    with flow_run_heartbeats(), flow_run_stops(), \
            open_executor(dask_address) as executor, open_label_store(database_url, output) as store:
        rows = read_rows_to_label(executor, store, source, columns, id_column,
                                  base_columns=isinstance(placement, LabelPlacement),
                                  encoding=getattr(placement, "encoding", None))
        labels, confidence, counts = place_rows(placement, rows)
        written = write_assigned_labels(rows, source, store, run_key, placement, labels, confidence)
    get_run_logger().info("Labelled %d rows of table %r (%s) with model %s → table %r, run key %r",
                          written, table, mask_url(database_url), model_uri, output_table, run_key)
    return {
        "rows_labelled": written,
        "output_table": output_table,
        "run_key": run_key,
        "model_uri": model_uri,
        "method": placement.method,
        "n_clusters": placement.n_clusters,
        "feature_columns": list(placement.feature_columns),
        "counts": counts,
    }


def _check_parameters(database_url, table, model_uri, id_column, dask_address) -> None:
    for name, value in (("database_url", database_url), ("table", table), ("model_uri", model_uri)):
        non_empty_text(name, value)
    optional_address("dask_address", dask_address)
    refuse_other_processes(database_url, dask_address)
    optional_column("id_column", id_column)
