"""``lwec run``: the consensus flow on a database table, from the command line.

One option per parameter of :func:`flows.consensus.consensus_flow`, generated from
:class:`~lwec_tasks.request.ConsensusRequest`. In order: the parameters, the table and the services the run
needs are checked (:func:`run_after_checks`); Prefect's API is found, or a temporary server that ends with the
command is started (:mod:`lwec_tasks.cli.prefect_server`); the flow runs with the parameters; its outcome, or
its failure, is the last thing printed. Ctrl-C (SIGINT) or SIGTERM stops the run: nothing more is published and
one line says what was (:mod:`lwec_tasks.stopping`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence

from lwec_tasks.cli.request_options import add_request_options, request_parameters
from lwec_tasks.collector import HeldCollections, collections_held_off

# Prefect reads its settings once, when it is first imported, so these must be
# in the environment before anything imports Prefect (see apply_prefect_defaults).
_PREFECT_DEFAULTS = {
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}


def apply_prefect_defaults() -> None:
    """Put this command's Prefect defaults into the environment unless already set.

    Call before the first import of Prefect (or of a module that imports it):
    Prefect fixes its settings at import time.
    """
    for name, value in _PREFECT_DEFAULTS.items():
        os.environ.setdefault(name, value)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="cluster the rows of a database table and write the labels back",
        description="Run the LWEA/LWGP consensus flow on a table; labels go to a table in the same "
                    "database, parameters/metrics/artifacts to an MLflow run. A database URL or tracking "
                    "URI that contains a password is handed to the flow as 'env:VAR' (an environment "
                    "variable of this process only), so the password is not stored with the flow run's "
                    "parameters in Prefect. Ctrl-C stops the run (exit status 130) without publishing "
                    "anything more.",
    )
    add_request_options(parser, required=("database_url", "table", "n_clusters"))
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print full tracebacks of failures (default: one line per error)")
    parser.set_defaults(handler=run_command, exit_promptly=True)


def run_command(args: argparse.Namespace) -> int:
    """Check, run the consensus flow, print where the results went. Failures reach :func:`lwec_tasks.cli.main`,
    which prints them in one line (the traceback too with ``--verbose``). Stopped by SIGINT or SIGTERM: one line
    saying what was and was not published, and exit status 130 or 143."""
    from lwec_tasks.stopping import exit_status, stop_on_signals, stop_requested, stopped_outcome

    with stop_on_signals():
        parameters = request_parameters(args)
        started = time.perf_counter()
        try:
            summary = run_checked_flow(parameters, args.verbose)
        except BaseException:
            if stop_requested() is None:
                raise
            sys.stdout.flush()
            print(f"lwec run: {stopped_outcome(unpublished(parameters))}", file=sys.stderr, flush=True)
            return exit_status()
        print_outcome(summary, parameters, seconds=time.perf_counter() - started)
    return 0


def unpublished(parameters: dict) -> str:
    """What a run of ``parameters`` publishes, for the line of a stopped run."""
    from lwec_tasks.request import ConsensusRequest

    try:
        request = ConsensusRequest(**parameters)
    except Exception:  # noqa: BLE001 - stopped before the parameters were checked
        return "its labels and MLflow run"
    return (f"labels of run key {request.run_key!r} in table {request.resolved_output_table!r} and its MLflow run")


def run_checked_flow(parameters: dict, verbose: bool = False, server=None) -> dict:
    """The consensus flow's summary, after checking everything that can be checked before it starts
    (:func:`run_after_checks`); ``server``: a temporary Prefect server already started for it."""
    apply_prefect_defaults()  # before the imports below, which import Prefect
    with collections_held_off() as held:  # until the flow's modules are imported (collect_from_here below)
        return _run_checked_flow(parameters, verbose, server, held)


def _run_checked_flow(parameters: dict, verbose: bool, server, held: HeldCollections) -> dict:
    from lwec_tasks.cli.services import check_sqlite_store, check_tracking_store
    from lwec_tasks.request import ConsensusRequest

    request = ConsensusRequest(**parameters)  # raises LwecInputError on bad parameters

    def consensus_flow():
        from flows.consensus import consensus_flow
        from lwec_tasks.tasks.track import prepare_tracking

        # MLflow's and the figures' modules too (the flow's call is quick); a Dask cluster draws the figures
        prepare_tracking(request.tracking_uri, figures_here=not request.dask_address)
        check_sqlite_store(request.tracking_uri)  # here, with MLflow imported, while a temporary server boots
        held.collect_from_here()  # the run's modules are all imported
        return consensus_flow

    return run_after_checks(consensus_flow, parameters, lambda: check_before_prefect(request), verbose,
                            check_services=[lambda: check_tracking_store(request.tracking_uri)], server=server)


def run_after_checks(load_flow: Callable[[], Callable[..., dict]], parameters: dict,
                     check_inputs: Callable[[], None], verbose: bool = False,
                     check_services: Sequence[Callable[[], None]] = (), server=None) -> dict:
    """Run the flow ``load_flow()`` with ``parameters`` once everything checkable before it has been checked.

    1. Checks: ``check_inputs`` (the table, its columns, the output table), unless the database URL names a
       Prefect block or secret, which only Prefect can read (then it runs once Prefect's API answers);
       ``check_services`` (e.g. the MLflow store); the Dask scheduler at ``parameters["dask_address"]``, if any.
    2. Prefect: without a configured Prefect API, a temporary server is started (``server``, if given, is one
       already started), which boots while ``load_flow`` imports the flow; with one, that API is asked whether
       it answers.
    3. The flow, called with ``parameters`` (passwords moved into this process's environment,
       :func:`credentials_out_of_parameters`); ``verbose`` keeps Prefect's tracebacks on the console.

    A temporary server started here is stopped when the flow is done. Returns the flow's result.
    """
    from lwec_tasks.cli.prefect_server import served_flow, start_temporary_server
    from lwec_tasks.cli.services import CHECK_TIMEOUT_SECONDS, check_prefect_api
    from lwec_tasks.tasks.heartbeats import sent_by_the_flow

    resolved_by_prefect = needs_prefect_to_resolve(parameters["database_url"])
    if not resolved_by_prefect:
        check_inputs()
    for check in check_services:
        check()
    if parameters.get("dask_address"):
        from lwec_tasks.executors.dask import check_scheduler

        check_scheduler(parameters["dask_address"], CHECK_TIMEOUT_SECONDS)
    started = server is None and start_temporary_server(register_blocks=resolved_by_prefect)
    server = server or started or None
    try:
        if server is None:
            check_prefect_api()
        flow = load_flow()
        if not verbose:
            from lwec_tasks.cli.console import hide_tracebacks_on_console

            hide_tracebacks_on_console()
        # A lasting server gets heartbeats that stop with the work; the temporary one none (it dies with us).
        with served_flow(server), sent_by_the_flow():
            if resolved_by_prefect:
                from lwec_tasks.tasks.credentials import register_block_resolvers
                register_block_resolvers()  # block: and secret: references, for the checks

                check_inputs()
            return flow(**credentials_out_of_parameters(parameters))
    finally:
        if started:
            started.stop()


def check_before_prefect(request) -> None:
    """Refuse, in seconds, a run that would fail on reading its table: a missing driver, a database that does
    not answer, a missing table or column, too few rows, an output table that is a view
    (:func:`lwec_tasks.preflight.check_consensus_request`)."""
    from lwec_tasks.preflight import check_consensus_request

    check_consensus_request(request)


def needs_prefect_to_resolve(database_url: str) -> bool:
    """Whether ``database_url`` names a Prefect block (``block:NAME``, ``secret:NAME``), read through Prefect's
    API, rather than a URL or an environment variable."""
    from lwec_tasks.io.connection import is_reference

    return is_reference(database_url) and not database_url.startswith("env:")


#: Environment variables (of this process only) through which passwords reach the flow.
_SECRET_VARIABLES = {"database_url": "LWEC_RUN_DATABASE_URL", "tracking_uri": "LWEC_RUN_TRACKING_URI"}


def credentials_out_of_parameters(parameters: dict) -> dict:
    """``parameters`` with any URL that holds a password replaced by ``env:VAR``.

    Flow parameters are stored by Prefect (and shown in its UI); the URL itself
    goes into an environment variable of this process, which the flow reads.
    """
    from lwec_tasks.io import url_has_credentials
    from lwec_tasks.io.connection import is_reference

    parameters = dict(parameters)
    for name, variable in _SECRET_VARIABLES.items():
        value = parameters.get(name)
        if value and not is_reference(value) and url_has_credentials(value):
            os.environ[variable] = value
            parameters[name] = f"env:{variable}"
    return parameters


def print_outcome(summary: dict, parameters: dict, seconds: float) -> None:
    """Tell the user where the labels and the MLflow run went."""
    from lwec_tasks.core.defaults import is_auto
    from lwec_tasks.io import latest_view_name, mask_url, table_name
    from lwec_tasks.tasks.summary import rows_phrase
    from lwec_tasks.tracking import mask_uri, resolve_tracking_uri

    tracking_uri = resolve_tracking_uri(parameters.get("tracking_uri"))
    table = summary["output_table"]
    view = latest_view_name(table_name("output_table", table))
    print()
    asked = parameters["n_clusters"]
    k = f"k=auto → {summary.get('k')}" if is_auto(asked) else f"k={asked}"
    print(f"Done in {seconds:.1f} s: {summary['n_objects']} rows → {summary['n_clusters_found']} clusters "
          f"({parameters['method'].upper()}, {k})")
    if summary.get("nmi") is not None:
        print(f"Agreement with {parameters['label_column']!r}: NMI {summary['nmi']:.4f}, ARI {summary['ari']:.4f}")
    print(f"Labels:  table {table!r} in {mask_url(parameters['database_url'])}, "
          f"run key {summary['run_key']!r} ({rows_phrase(summary['rows_written'], summary['n_objects'])})")
    print(f"         {label_query(parameters['database_url'], table, summary['run_key'])};")
    print(f"         the latest run of each source table: view {str(view)!r}")
    if summary.get("ids_aligned_to"):
        agreement = summary.get("id_agreement")
        print(f"         cluster ids aligned to run {summary['ids_aligned_to']!r}"
              + ("" if agreement is None else f" ({agreement:.1%} of shared rows keep their id)"))
    print(f"MLflow:  run {summary['mlflow_run_id']} in experiment {summary['mlflow_experiment']!r} "
          f"at {mask_uri(tracking_uri)}")
    local = tracking_uri.startswith(("sqlite:", "file:")) or ":" not in tracking_uri.split("/", 1)[0]
    if local or tracking_uri.startswith(("http://", "https://")):
        # Only these stores answer promptly; others could block in MLflow's retries.
        link = _run_page(tracking_uri, summary["mlflow_run_id"])
        if local and link:
            print(f"         browse: mlflow ui --backend-store-uri {mask_uri(tracking_uri)}  then open {link}")
        elif link:
            print(f"         browse: {link}")
    if summary.get("model_uri"):
        print(f"Model:   {summary['model_uri']}  (label new rows: lwec assign --model-uri {summary['model_uri']} ...)")
    gate = summary.get("gate")
    if gate:
        moved = f"view {str(view)!r}" + (f" and {gate['model_alias_uri']}" if gate.get("model_alias_uri") else "")
        skipped = f"; not applied (not measured): {', '.join(gate['not_applied'])}" if gate.get("not_applied") else ""
        print(f"Gate:    promote_if {gate['promote_if']!r} met: promoted to {moved}{skipped}")
    if summary.get("figures"):
        print("Figures:")
        for name, uri in summary["figures"].items():
            print(f"         {name}: {_local_path(uri)}")


def _local_path(uri: str) -> str:
    """A file: artifact URI as a plain path; other URIs as they are."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def label_query(database_url: str, table: str, run_key: str) -> str:
    """``SELECT id, label FROM <table> WHERE run_key = <run_key>``, quoted for the database's dialect."""
    import sqlalchemy as sa

    from lwec_tasks.io.connection import resolve_database_url

    labels = sa.table(table, sa.column("id"), sa.column("label"), sa.column("run_key"))
    statement = sa.select(labels.c.id, labels.c.label).where(labels.c.run_key == run_key)
    try:
        dialect = sa.make_url(resolve_database_url(database_url)).get_dialect()()
    except Exception:  # noqa: BLE001 - fall back to generic SQL quoting
        dialect = sa.engine.default.DefaultDialect()
    compiled = statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True})
    return " ".join(str(compiled).split())


def _run_page(tracking_uri: str, run_id: str) -> str:
    from lwec_tasks.tracking import run_page_url

    try:
        return run_page_url(tracking_uri, run_id)
    except Exception:  # noqa: BLE001 - the link is a convenience
        return ""
