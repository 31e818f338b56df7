"""``deployments/serve.py`` serving the project's deployments on a test Prefect server, for a ``blobs`` table in a
temporary SQLite database with an MLflow store beside it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from helpers.blobs import BLOBS_TABLE, write_blobs_table
from helpers.pipeline import PROJECT_ROOT, client_for, start

SERVE_SCRIPT = PROJECT_ROOT / "deployments" / "serve.py"
#: The deployments serve.py registers (and ``prefect deploy`` of deployments/prefect.yaml).
SERVED_DEPLOYMENTS = ("lwec-consensus/nightly", "lwec-consensus/on-demand", "lwec-assign/assign")


class BlobsWorkspace(NamedTuple):
    """A SQLite database holding the ``blobs`` table, the frame written to it, and an MLflow tracking URI."""

    database: str
    frame: pd.DataFrame
    tracking_uri: str


def blobs_workspace(directory: Path) -> BlobsWorkspace:
    """Write ``blobs_frame()`` as table ``blobs`` of ``<directory>/features.db``; MLflow goes to ``mlflow.db`` there."""
    database = f"sqlite:///{directory / 'features.db'}"
    return BlobsWorkspace(database, write_blobs_table(database), f"sqlite:///{directory / 'mlflow.db'}")


def start_serving(api_env: dict, workspace: BlobsWorkspace, directory: Path,
                  *extra_args: str) -> tuple[subprocess.Popen, Path]:
    """Start ``deployments/serve.py`` for the workspace's ``blobs`` table (k = 3, label column ``target``,
    then ``extra_args``) with the Prefect environment ``api_env`` and the workspace's MLflow store, in
    ``directory``; returns (process, log file ``<directory>/serve.log``)."""
    log = directory / "serve.log"
    args = [sys.executable, str(SERVE_SCRIPT), "--database-url", workspace.database, "--table", BLOBS_TABLE,
            "--n-clusters", "3", "--label-column", "target", *extra_args]
    env = {**api_env, "MLFLOW_TRACKING_URI": workspace.tracking_uri}
    return start(args, env, log, directory), log


def forget_served(api_url: str, work_pool: str | None = None) -> None:
    """Delete the served deployments (with their scheduled runs) and ``work_pool``, where they exist: the shared
    test server is left without them, so the next test waits for its own."""
    from prefect.exceptions import ObjectNotFound

    with client_for(api_url) as client:
        for name in SERVED_DEPLOYMENTS:
            with contextlib.suppress(ObjectNotFound):
                client.delete_deployment(client.read_deployment_by_name(name).id)
        if work_pool is not None:
            with contextlib.suppress(ObjectNotFound):
                client.delete_work_pool(work_pool)
