"""Serve the consensus flow's deployments from this process (no work pool needed).

    python deployments/serve.py --database-url sqlite:///$PWD/lwec_demo.db --table digits \
        --n-clusters 10 --label-column target

registers two deployments of flow ``lwec-consensus`` with the Prefect API in
``PREFECT_API_URL`` and runs their flow runs until stopped (Ctrl-C):

* ``lwec-consensus/nightly`` — on a cron schedule (default 02:00 every day) with
  the table given here as its parameters;
* ``lwec-consensus/on-demand`` — no schedule; each run's parameters come from
  the Prefect UI form ("Run" → "Custom run") or ``prefect deployment run``.

MLflow runs go to ``$MLFLOW_TRACKING_URI`` (set it: the default is a SQLite
file in the working directory of this process).
"""

from __future__ import annotations

import argparse

from prefect import serve
from prefect.schedules import Cron

from flows.consensus import consensus_flow

NIGHTLY_CRON = "0 2 * * *"


def build_deployments(nightly_parameters: dict, cron: str = NIGHTLY_CRON, timezone: str = "UTC") -> list:
    """The scheduled and the on-demand deployment, ready for :func:`prefect.serve`."""
    nightly = consensus_flow.to_deployment(
        name="nightly",
        schedule=Cron(cron, timezone=timezone),
        parameters=nightly_parameters,
        description="Scheduled LWEA consensus of one table; labels replace the previous night's (same run key).",
        tags=["lwec", "scheduled"],
    )
    on_demand = consensus_flow.to_deployment(
        name="on-demand",
        description="Consensus clustering of any table; fill in the form in the Prefect UI.",
        tags=["lwec", "on-demand"],
    )
    return [nightly, on_demand]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve lwec's Prefect deployments.")
    parser.add_argument("--database-url", default="env:LWEC_DATABASE_URL",
                        help="nightly run's database URL (default: read from $LWEC_DATABASE_URL at run time)")
    parser.add_argument("--table", default="digits", help="nightly run's table (default digits)")
    parser.add_argument("--n-clusters", type=int, default=10, help="nightly run's k (default 10)")
    parser.add_argument("--label-column", default=None, help="nightly run's ground-truth column")
    parser.add_argument("--method", choices=("lwea", "lwgp"), default="lwea")
    parser.add_argument("--experiment", default="lwec-nightly")
    parser.add_argument("--cron", default=NIGHTLY_CRON, help=f"schedule (default {NIGHTLY_CRON!r})")
    parser.add_argument("--timezone", default="UTC")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    parameters = {
        "database_url": args.database_url,
        "table": args.table,
        "n_clusters": args.n_clusters,
        "label_column": args.label_column,
        "method": args.method,
        "experiment": args.experiment,
        "run_name": "nightly",
    }
    # Keep the deployments active when this process stops, so the schedule resumes with the next serve.
    serve(*build_deployments(parameters, args.cron, args.timezone), pause_on_shutdown=False)


if __name__ == "__main__":
    main()
