"""Serve lwec's deployments from this process, on a warm worker it starts itself.

    python deployments/serve.py --database-url sqlite:///$PWD/lwec_demo.db --table digits \
        --n-clusters 10 --label-column target [--cron "0 2 * * *"]

registers the deployments defined in ``deployments/prefect.yaml`` (their one
definition: names, descriptions, tags, schedules, default parameters) with the
Prefect API in ``PREFECT_API_URL``, on work pool ``--work-pool`` (default
``lwec-served``, of type ``lwec-warm-process``, made when missing), and runs
their flow runs on a worker of that type in this process until stopped (Ctrl-C).
Each flow run gets a process of its own, forked from a process that imported
the flows once (:mod:`lwec_tasks.worker`), so it starts without importing
Prefect, MLflow and the numeric libraries again:

* ``lwec-consensus/nightly`` — on its cron schedule, with the yaml's parameters
  overridden by any flow parameter given here (every ``lwec run`` option works);
* ``lwec-consensus/on-demand`` — no schedule; each run's parameters come from
  the Prefect UI form ("Run" → "Custom run") or ``prefect deployment run``;
* ``lwec-assign/assign`` — no schedule; labels a table's rows with a consensus
  run's logged model (parameters from the form: database URL, table, model URI, ...).

The forms of the on-demand deployments start from the yaml's parameters, whose
``database_url`` is ``env:LWEC_DATABASE_URL``: a ``--database-url`` given here
becomes ``LWEC_DATABASE_URL`` of this process, which its flow runs inherit, so
the forms name that database without storing its URL in Prefect (a URL holding
a password reaches the nightly deployment the same way).

The worker asks the Prefect API for flow runs to start every ``--poll-seconds``
(default 1 s, or ``PREFECT_WORKER_QUERY_SECONDS`` when set; Prefect's own
default is 10 s, which a run started from the UI waits for 5 s on average).

MLflow runs go to ``$MLFLOW_TRACKING_URI``, and the assign flow reads its
models from there (set it: the default is a SQLite file in the working
directory of this process).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
if str(PROJECT_ROOT) not in sys.path:  # run as a script from anywhere in a checkout
    sys.path.insert(0, str(PROJECT_ROOT))

from prefect import get_client  # noqa: E402 - after the path set-up above
from prefect.schedules import Cron  # noqa: E402
from prefect.settings import PREFECT_WORKER_QUERY_SECONDS, temporary_settings  # noqa: E402

from flows.assign import assign_flow  # noqa: E402
from flows.consensus import consensus_flow  # noqa: E402
from lwec_tasks.cli.request_options import add_request_options, request_parameters  # noqa: E402
from lwec_tasks.io.connection import is_reference  # noqa: E402
from lwec_tasks.masking import url_has_credentials  # noqa: E402
from lwec_tasks.worker import WarmProcessWorker  # noqa: E402
from lwec_tasks.worker.pool import ensure_warm_pool  # noqa: E402

DEFINITIONS = PROJECT_ROOT / "deployments" / "prefect.yaml"
ENTRYPOINT = "flows/consensus.py:consensus_flow"
#: The environment variable the deployments' ``env:`` database URL names (a worker's, or this process's).
DATABASE_VARIABLE = "LWEC_DATABASE_URL"
#: Seconds between the worker's queries for flow runs to start, unless PREFECT_WORKER_QUERY_SECONDS is set.
POLL_SECONDS = 1.0
#: The work pool the deployments are registered on and the worker polls, unless --work-pool names another.
WORK_POOL = "lwec-served"
#: The flow of each entrypoint served here.
FLOWS = {ENTRYPOINT: consensus_flow, "flows/assign.py:assign_flow": assign_flow}


def deployment_definitions(path: Path = DEFINITIONS, entrypoint: str | None = ENTRYPOINT) -> dict[str, dict]:
    """The deployments in ``prefect.yaml`` of ``entrypoint``'s flow (None: of every flow served here), by name."""
    config = yaml.safe_load(path.read_text())
    wanted = set(FLOWS) if entrypoint is None else {entrypoint}
    return {d["name"]: d for d in config["deployments"] if d.get("entrypoint") in wanted}


def build_deployments(overrides: dict, cron: str | None = None, timezone: str | None = None) -> list:
    """Every defined deployment, ready to be registered on a work pool (:func:`serve_on_warm_worker`).

    ``overrides`` replace parameters of the scheduled deployments (consensus
    flow parameters); ``cron`` and ``timezone`` replace their schedule's. Their
    flow runs start in this process's working directory: Prefect records the
    entrypoint relative to it, and a default MLflow store there is the same one
    every run uses.
    """
    deployments = []
    for name, definition in deployment_definitions(entrypoint=None).items():
        schedules = [
            Cron(cron or s["cron"], timezone=timezone or s.get("timezone", "UTC"))
            for s in definition.get("schedules") or [] if s.get("active", True)
        ]
        parameters = dict(definition.get("parameters") or {})
        flow = FLOWS[definition["entrypoint"]]
        if schedules and flow is consensus_flow:
            parameters.update(overrides)
        deployments.append(flow.to_deployment(
            name=name, description=definition.get("description"), tags=definition.get("tags"),
            schedules=schedules or None, parameters=parameters, job_variables={"working_dir": str(Path.cwd())},
        ))
    return deployments


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Serve lwec's Prefect deployments; flow parameters given here override the nightly "
                    "deployment's parameters in deployments/prefect.yaml.")
    add_request_options(parser, only_given=True)
    parser.add_argument("--cron", default=None, help="nightly schedule (default: the one in prefect.yaml)")
    parser.add_argument("--timezone", default=None, help="the schedule's time zone (default: prefect.yaml's)")
    parser.add_argument("--poll-seconds", type=float, default=None,
                        help=f"seconds between the worker's queries for flow runs to start (default "
                             f"PREFECT_WORKER_QUERY_SECONDS if set, else {POLL_SECONDS:g})")
    parser.add_argument("--work-pool", default=WORK_POOL,
                        help=f"work pool of type lwec-warm-process to register the deployments on and poll "
                             f"(made when missing; default {WORK_POOL})")
    return parser.parse_args(argv)


def database_into_environment(overrides: dict) -> dict:
    """``overrides`` after putting their ``database_url`` (a URL, not a reference) into ``$LWEC_DATABASE_URL``.

    Flow runs served from this process inherit its environment, so the on-demand forms' default
    ``env:LWEC_DATABASE_URL`` names the database given here. A URL holding a password is replaced by
    ``env:LWEC_DATABASE_URL`` in the returned overrides, so it is not stored with the nightly deployment.
    """
    url = overrides.get("database_url")
    if not url or is_reference(url):
        return overrides
    os.environ[DATABASE_VARIABLE] = url
    if url_has_credentials(url):
        return {**overrides, "database_url": f"env:{DATABASE_VARIABLE}"}
    return overrides


async def serve_on_warm_worker(deployments: list, work_pool: str, query_seconds: float) -> None:
    """Register ``deployments`` on ``work_pool`` (made when missing) and run a warm worker on it until stopped.

    The deployments stay registered when this process stops: scheduled runs wait for the next serve.
    """
    async with get_client() as client:
        await ensure_warm_pool(client, work_pool)
    for deployment in deployments:
        await deployment.aapply(work_pool_name=work_pool)
    with temporary_settings({PREFECT_WORKER_QUERY_SECONDS: query_seconds}):
        await WarmProcessWorker(work_pool_name=work_pool).start()


def main(argv=None) -> None:
    args = parse_args(argv)
    overrides = database_into_environment(request_parameters(args))
    deployments = build_deployments(overrides, args.cron, args.timezone)
    try:
        asyncio.run(serve_on_warm_worker(deployments, args.work_pool, poll_seconds(args.poll_seconds)))
    except KeyboardInterrupt:
        print("serve.py stopped; the deployments stay registered on work pool "
              f"{args.work_pool!r}", file=sys.stderr)
        raise SystemExit(130) from None


def poll_seconds(given: float | None) -> float:
    """``given``, else ``PREFECT_WORKER_QUERY_SECONDS`` when set, else :data:`POLL_SECONDS`."""
    if given is not None:
        return given
    return float(os.environ.get("PREFECT_WORKER_QUERY_SECONDS") or POLL_SECONDS)


if __name__ == "__main__":
    main()
