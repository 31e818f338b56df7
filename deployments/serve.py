"""Serve lwec's deployments from this process (no work pool needed).

    python deployments/serve.py --database-url sqlite:///$PWD/lwec_demo.db --table digits \
        --n-clusters 10 --label-column target [--cron "0 2 * * *"]

registers the deployments defined in ``deployments/prefect.yaml`` (their one
definition: names, descriptions, tags, schedules, default parameters) with the
Prefect API in ``PREFECT_API_URL`` and runs their flow runs until stopped (Ctrl-C):

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

The runner asks the Prefect API for flow runs to start every ``--poll-seconds``
(default 1 s, or ``PREFECT_RUNNER_POLL_FREQUENCY`` when set; Prefect's own
default is 10 s, which a run started from the UI waits for 5 s on average).

MLflow runs go to ``$MLFLOW_TRACKING_URI``, and the assign flow reads its
models from there (set it: the default is a SQLite file in the working
directory of this process).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]
if str(PROJECT_ROOT) not in sys.path:  # run as a script from anywhere in a checkout
    sys.path.insert(0, str(PROJECT_ROOT))

from prefect import serve  # noqa: E402 - after the path set-up above
from prefect.schedules import Cron  # noqa: E402

from flows.assign import assign_flow  # noqa: E402
from flows.consensus import consensus_flow  # noqa: E402
from lwec_tasks.cli.request_options import add_request_options, request_parameters  # noqa: E402
from lwec_tasks.io.connection import is_reference  # noqa: E402
from lwec_tasks.masking import url_has_credentials  # noqa: E402

DEFINITIONS = PROJECT_ROOT / "deployments" / "prefect.yaml"
ENTRYPOINT = "flows/consensus.py:consensus_flow"
#: The environment variable the deployments' ``env:`` database URL names (a worker's, or this process's).
DATABASE_VARIABLE = "LWEC_DATABASE_URL"
#: Seconds between the runner's queries for flow runs to start, unless PREFECT_RUNNER_POLL_FREQUENCY is set.
POLL_SECONDS = 1.0
#: The flow of each entrypoint served here.
FLOWS = {ENTRYPOINT: consensus_flow, "flows/assign.py:assign_flow": assign_flow}


def deployment_definitions(path: Path = DEFINITIONS, entrypoint: str | None = ENTRYPOINT) -> dict[str, dict]:
    """The deployments in ``prefect.yaml`` of ``entrypoint``'s flow (None: of every flow served here), by name."""
    config = yaml.safe_load(path.read_text())
    wanted = set(FLOWS) if entrypoint is None else {entrypoint}
    return {d["name"]: d for d in config["deployments"] if d.get("entrypoint") in wanted}


def build_deployments(overrides: dict, cron: str | None = None, timezone: str | None = None) -> list:
    """Every defined deployment, ready for :func:`prefect.serve`.

    ``overrides`` replace parameters of the scheduled deployments (consensus
    flow parameters); ``cron`` and ``timezone`` replace their schedule's.
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
            schedules=schedules or None, parameters=parameters,
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
                        help=f"seconds between the runner's queries for flow runs to start (default "
                             f"PREFECT_RUNNER_POLL_FREQUENCY if set, else {POLL_SECONDS:g})")
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


def main(argv=None) -> None:
    args = parse_args(argv)
    overrides = database_into_environment(request_parameters(args))
    # Keep the deployments active when this process stops, so the schedule resumes with the next serve.
    serve(*build_deployments(overrides, args.cron, args.timezone), pause_on_shutdown=False,
          query_seconds=poll_seconds(args.poll_seconds))


def poll_seconds(given: float | None) -> float:
    """``given``, else ``PREFECT_RUNNER_POLL_FREQUENCY`` when set, else :data:`POLL_SECONDS`."""
    if given is not None:
        return given
    return float(os.environ.get("PREFECT_RUNNER_POLL_FREQUENCY") or POLL_SECONDS)


if __name__ == "__main__":
    main()
