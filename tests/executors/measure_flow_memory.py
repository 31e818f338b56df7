"""Peak memory of the flow process with and without Dask (the numbers in docs/scale.md).

    python tests/distributed/measure_flow_memory.py --rows 2000000 --workdir /tmp/lwec-scale

Builds a SQLite table of ``--rows`` rows × 16 features (20 Gaussian blobs, make_blobs(random_state=1,
cluster_std=6)), starts ``dask scheduler`` and two ``dask worker`` processes (one thread each) on
loopback, and runs the consensus flow (LWGP, k = 20) in a fresh process per mode: ``local`` (without
``dask_address``) and ``dask`` (with it).

Each run reports the flow process's peak resident memory (VmHWM), its wall time and stage times;
the workers' peak memory is read after the Dask run. Label agreement between the runs is computed from
the labels table. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_table(url: str, n_rows: int) -> None:
    import numpy as np
    import pandas as pd
    import sqlalchemy as sa
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=n_rows, n_features=16, centers=20, cluster_std=6, random_state=1)
    schema = sa.Table("blobs", sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True),
                      *(sa.Column(f"f{j}", sa.Float) for j in range(16)), sa.Column("target", sa.Integer))
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        schema.drop(connection, checkfirst=True)
        schema.create(connection)
    for start in range(0, n_rows, 500_000):
        stop = min(start + 500_000, n_rows)
        frame = pd.DataFrame(X[start:stop], columns=[f"f{j}" for j in range(16)])
        frame.insert(0, "id", np.arange(start, stop))
        frame["target"] = y[start:stop]
        frame.to_sql("blobs", engine, index=False, if_exists="append", chunksize=100_000)
    engine.dispose()


def run_flow(mode: str, parameters: dict) -> dict:
    """In this (fresh) process: run the flow, return peak RSS, wall time and the summary."""
    from flows.consensus import consensus_flow

    started = time.perf_counter()
    summary = consensus_flow(**parameters)
    return {"mode": mode, "seconds": round(time.perf_counter() - started, 1),
            "peak_rss_mib": peak_rss_mib(),
            "timings": summary["timings"], "nmi": summary["nmi"], "ari": summary["ari"],
            "rows_written": summary["rows_written"]}


def peak_rss_mib() -> float:
    """This process's peak resident memory: VmHWM, which (unlike ``ru_maxrss``) starts afresh at exec and so
    does not inherit the high-water mark of the process that forked it."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/lwec-scale"))
    parser.add_argument("--modes", default="local,dask")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, parameters = json.loads(args.child)
        print("RESULT " + json.dumps(run_flow(mode, parameters)), flush=True)
        return

    args.workdir.mkdir(parents=True, exist_ok=True)
    database = args.workdir / f"blobs_{args.rows}.db"
    url = f"sqlite:///{database}"
    if not database.exists():
        started = time.perf_counter()
        build_table(url, args.rows)
        print(f"built {database} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    drop_labels(url)  # every run then writes into an empty labels table
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", "PYTHONPATH": str(ROOT)}
    bin_dir = Path(sys.executable).parent
    port = 8786 + os.getpid() % 1000
    address = f"tcp://127.0.0.1:{port}"
    logs = [(args.workdir / name).open("w") for name in ("scheduler.log", "worker0.log", "worker1.log")]  # noqa: SIM115
    processes = [subprocess.Popen([bin_dir / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard"], stdout=logs[0], stderr=subprocess.STDOUT, env=env)]
    time.sleep(3)
    processes += [subprocess.Popen([bin_dir / "dask", "worker", address, "--nthreads", "1", "--nworkers", "1",
                                    "--memory-limit", "8GiB", "--no-dashboard", "--local-directory",
                                    str(args.workdir / f"worker{i}")], stdout=logs[1 + i],
                                   stderr=subprocess.STDOUT, env=env) for i in range(2)]
    results = {"rows": args.rows, "features": 16, "method": "lwgp", "k": 20, "ensemble_size": 10, "runs": []}
    try:
        for mode in args.modes.split(","):
            parameters = dict(database_url=url, table="blobs", n_clusters=20, label_column="target", method="lwgp",
                              seed=0, run_name=mode, tracking_uri=f"sqlite:///{args.workdir / 'mlflow.db'}",
                              experiment="scale")
            if mode == "dask":
                parameters["dask_address"] = address
            output = args.workdir / f"{mode}.out"
            with output.open("w") as out:  # a file, not a pipe: a helper process may outlive a failed child
                subprocess.run([sys.executable, __file__, "--child", json.dumps([mode, parameters])],
                               stdout=out, stderr=subprocess.STDOUT, env=env, cwd=args.workdir)
            lines = [line for line in output.read_text().splitlines() if line.startswith("RESULT ")]
            if not lines:
                raise SystemExit(f"{mode} failed:\n{output.read_text()[-5000:]}")
            results["runs"].append(json.loads(lines[0][len("RESULT "):]))
            print(json.dumps(results["runs"][-1]), file=sys.stderr)
            if mode == "dask":
                from distributed import Client

                with Client(address, timeout=10) as client:
                    results["dask_worker_peak_rss_mib"] = sorted(client.run(peak_rss_mib).values())
        results["agreement"] = agreement(url, [r["mode"] for r in results["runs"]])
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)
    print(json.dumps(results, indent=2))


def drop_labels(url: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as connection:
        sa.Table("blobs_lwec_labels", sa.MetaData()).drop(connection, checkfirst=True)
    engine.dispose()


def agreement(url: str, modes: list[str]) -> dict:
    import numpy as np
    import pandas as pd
    import sqlalchemy as sa

    from lwec_tasks import ari

    engine = sa.create_engine(url)
    table = sa.table("blobs_lwec_labels", sa.column("id"), sa.column("label"), sa.column("run_key"))
    labels = {mode: pd.read_sql(sa.select(table.c.label).where(table.c.run_key == mode).order_by(table.c.id),
                                engine)["label"].to_numpy() for mode in modes}
    engine.dispose()
    pairs = {}
    for i, a in enumerate(modes):
        for b in modes[i + 1:]:
            pairs[f"{a} vs {b}"] = {"ari": round(ari(labels[a], labels[b]), 6),
                                    "identical": round(float(np.mean(labels[a] == labels[b])), 6)}
    return pairs


if __name__ == "__main__":
    main()
