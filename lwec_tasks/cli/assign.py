"""``lwec assign``: label the rows of a table with a logged consensus model.

One option per parameter of :func:`flows.assign.assign_flow`. The model is
looked up in the MLflow store of ``$MLFLOW_TRACKING_URI`` (or ``--tracking-uri``).
Without ``PREFECT_API_URL`` the flow runs against a temporary local Prefect
server started for this process. The table and the Prefect API are checked
before the flow starts, and a failure is the last line printed.
"""

from __future__ import annotations

import argparse
import os
import time

from lwec_tasks.cli import csv_list


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "assign",
        help="label the rows of a table with a consensus run's logged model (no consensus rerun)",
        description="Place the rows of a table into the clusters of an earlier consensus run, using the MLflow "
                    "model that run logged (runs:/<run id>/model, models:/<name>/<version>, or "
                    "models:/<name>@champion: the version a quality gate promoted), and write their cluster ids "
                    "to a labels table in the same database (rerunning replaces the rows).",
    )
    parser.add_argument("--database-url", required=True,
                        help="SQLAlchemy URL of the database holding the table (or env:VAR / block:NAME)")
    parser.add_argument("--table", required=True, help="table (or view) whose rows are labelled")
    parser.add_argument("--model-uri", required=True,
                        help="MLflow model URI, e.g. runs:/<run id>/model, models:/<name>/<version> or "
                             "models:/<name>@champion (the promoted version)")
    parser.add_argument("--feature-columns", "--features", dest="feature_columns", type=csv_list, default=None,
                        help="the model's feature columns, comma-separated (default: the model's own)")
    parser.add_argument("--id-column", default=None,
                        help="column identifying each row (default: the single-column primary key, else 'id', "
                             "else row positions)")
    parser.add_argument("--output-table", default=None,
                        help="table receiving the labels (default: <table>_lwec_labels)")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow store holding the model (default: $MLFLOW_TRACKING_URI, else ./mlflow.db)")
    parser.add_argument("--dask-address", default=None, metavar="ADDRESS",
                        help="an existing Dask scheduler, e.g. tcp://10.0.0.5:8786: its workers read, place and write "
                             "the rows (default: in this process, a thread per core)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print full tracebacks of failures (default: one line per error)")
    parser.set_defaults(handler=assign_command, exit_promptly=True)


def assign_command(args: argparse.Namespace) -> int:
    """Check, run the assign flow, print where the labels went. Failures reach :func:`lwec_tasks.cli.main`,
    which prints them in one line (the traceback too with ``--verbose``)."""
    from lwec_tasks.cli.run import apply_prefect_defaults

    apply_prefect_defaults()  # before anything imports Prefect
    parameters = {name: getattr(args, name) for name in
                  ("database_url", "table", "model_uri", "feature_columns", "id_column", "output_table",
                   "dask_address")}
    if args.tracking_uri:
        os.environ["MLFLOW_TRACKING_URI"] = args.tracking_uri
    started = time.perf_counter()
    summary = run_checked_assign(parameters, verbose=args.verbose)
    print_outcome(summary, parameters, time.perf_counter() - started)
    return 0


def run_checked_assign(parameters: dict, verbose: bool = False) -> dict:
    """The assign flow's summary, after the checks :func:`lwec_tasks.cli.run.run_checked_flow` makes: the table
    (a missing driver, a database that does not answer, a missing table or column, an output table that is a
    view: :func:`lwec_tasks.preflight.check_assign_request`) before Prefect is imported, then the Dask scheduler
    and the Prefect API; a temporary Prefect server is stopped when done."""
    from lwec_tasks.cli.run import run_after_checks
    from lwec_tasks.preflight import check_assign_request

    def assign_flow():
        from flows.assign import assign_flow

        return assign_flow

    table_parameters = {name: value for name, value in parameters.items() if name != "dask_address"}
    return run_after_checks(assign_flow, parameters, lambda: check_assign_request(**table_parameters), verbose)


def print_outcome(summary: dict, parameters: dict, seconds: float) -> None:
    from lwec_tasks.cli.run import label_query
    from lwec_tasks.io import mask_url

    counts = ", ".join(f"{cluster}: {count}" for cluster, count in summary["counts"].items())
    print()
    print(f"Done in {seconds:.1f} s: {summary['rows_labelled']} rows labelled by {summary['model_uri']} "
          f"({summary['method'].upper()}, k={summary['n_clusters']}); rows per cluster id: {counts}")
    print(f"Labels:  table {summary['output_table']!r} in {mask_url(parameters['database_url'])}, "
          f"run key {summary['run_key']!r}")
    print(f"         {label_query(parameters['database_url'], summary['output_table'], summary['run_key'])};")
