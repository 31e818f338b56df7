"""A served deployment's flow run against the competent one-model script, on the same PostgreSQL table.

    python -m benchmarks.served --database-url postgresql+psycopg://lwec:lwec@127.0.0.1:5432/lwec_bench \\
        --rows 1000000 --repeats 3

A ``prefect server start`` (own home, free loopback port) and ``deployments/serve.py`` (the project's way to
serve its deployments: a ``lwec-warm-process`` worker on a work pool of its own) run for the whole benchmark.
Each repeat runs, one after the other, the competent script (:mod:`benchmarks.competent_script`, a fresh
process timed from start to exit) and one flow run of ``lwec-consensus/on-demand`` with the parameters of
``python -m benchmarks competent`` (LWGP, k = 20, M = 10, seed 0, the feature columns given), started with
:func:`prefect.deployments.run_deployment` and timed from that call until the flow run is final: the worker's
poll, the flow run's process (forked from the warm process), the flow run and its final state. Also reported:
the flow run's own start-to-end time as Prefect recorded it. Medians over the repeats; ratios are served /
script of the same repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.competent import ENSEMBLE_SIZE, METHOD, SEED, K, ensure_table, prefect_server, run_script
from benchmarks.competent_script import FEATURES
from benchmarks.executors import ROOT, child_environment, drop_labels, log

DEPLOYMENT = "lwec-consensus/on-demand"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--database-url", default=os.environ.get("LWEC_TEST_POSTGRES_URL"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    return parser


def wait_for_deployment(api_url: str, serving: subprocess.Popen, log_file: Path, timeout: float = 300) -> None:
    request = urllib.request.Request(f"{api_url}/deployments/name/{DEPLOYMENT}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if serving.poll() is not None:
            raise SystemExit(f"serve.py exited ({serving.returncode}):\n{log_file.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise SystemExit(f"{DEPLOYMENT} was not served within {timeout:.0f} s")


def served_run(output_table: str, table: str) -> dict:
    """One flow run of the deployment, from the request until it is final."""
    from prefect.deployments import run_deployment

    parameters = {"table": table, "n_clusters": K, "method": METHOD, "ensemble_size": ENSEMBLE_SIZE, "seed": SEED,
                  "feature_columns": list(FEATURES), "output_table": output_table, "run_name": output_table,
                  "experiment": "lwec-bench-served"}
    started = time.perf_counter()
    flow_run = run_deployment(DEPLOYMENT, parameters=parameters, timeout=None, poll_interval=0.1)
    seconds = time.perf_counter() - started
    flow_seconds = (flow_run.end_time - flow_run.start_time).total_seconds() if flow_run.end_time else None
    waited = (flow_run.start_time - flow_run.created).total_seconds() if flow_run.start_time else None
    return {"seconds": round(seconds, 2), "flow_run_seconds": flow_seconds and round(flow_seconds, 2),
            "created_to_start": waited and round(waited, 2), "state": flow_run.state.type.value}


def measure(database_url: str, rows: int = 1_000_000, repeats: int = 3) -> dict:
    """Serve the deployment and alternate ``repeats`` pairs (script, served flow run) on ``blobs_<rows>``.

    Returns ``rows``, ``pairs`` (each: the script's seconds, the served run's figures, their ratio) and the
    medians ``median_script``, ``median_served``, ``median_flow_run`` and ``median_ratio``.
    """
    table = ensure_table(database_url, rows)
    workdir = Path(tempfile.mkdtemp(prefix="lwec-served-"))
    pairs = []
    saved = {key: os.environ.get(key) for key in ("PREFECT_API_URL", "PREFECT_HOME")}
    with prefect_server(workdir) as (api_url, _):
        env = {**child_environment(), "PREFECT_API_URL": api_url, "PREFECT_HOME": str(workdir / "prefect-server"),
               "MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'mlflow.db'}"}
        os.environ.update(PREFECT_API_URL=api_url, PREFECT_HOME=env["PREFECT_HOME"])
        log_file = workdir / "serve.log"
        with log_file.open("w") as out:
            serving = subprocess.Popen([sys.executable, str(ROOT / "deployments" / "serve.py"), "--database-url",
                                        database_url, "--table", table, "--n-clusters", str(K)],
                                       stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
        try:
            wait_for_deployment(api_url, serving, log_file)
            log("# warm-up run (numba's cache, the MLflow store)")
            served_run("served_warmup", table)
            drop_labels(database_url, "served_warmup")
            for repeat in range(repeats):
                output = f"served_script_{repeat}"
                script = run_script(database_url, table, output, workdir)
                drop_labels(database_url, output)
                output = f"served_lwec_{repeat}"
                served = served_run(output, table)
                drop_labels(database_url, output)
                pair = {"script": script["seconds"], **served, "ratio": round(served["seconds"] / script["seconds"], 2)}
                log(f"# repeat {repeat + 1}: {json.dumps(pair)}")
                pairs.append(pair)
        finally:
            serving.terminate()
            serving.wait(timeout=60)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return {"rows": rows, "pairs": pairs,
            "median_script": statistics.median(p["script"] for p in pairs),
            "median_served": statistics.median(p["seconds"] for p in pairs),
            "median_flow_run": statistics.median(p["flow_run_seconds"] for p in pairs),
            "median_ratio": statistics.median(p["ratio"] for p in pairs)}


def main(args) -> int:
    if not args.database_url:
        raise SystemExit("--database-url (or LWEC_TEST_POSTGRES_URL) is needed")
    summary = measure(args.database_url, args.rows, args.repeats)
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0 if all(p["state"] == "COMPLETED" for p in summary["pairs"]) else 1


if __name__ == "__main__":
    sys.exit(main(add_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0])).parse_args()))
