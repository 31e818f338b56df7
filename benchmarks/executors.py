"""The consensus flow in-process and on Dask: wall time, peak memory, stage times and label agreement.

    python -m benchmarks.executors --database-url URL --rows 2000000 [--workdir /tmp/lwec-scale] [--output FILE]

Run it from the project root. ``--database-url`` defaults to a SQLite file in ``--workdir``; PostgreSQL
(``postgresql+psycopg://...``) works too. The table ``blobs_<rows>`` (``id`` bigint primary key,
``f0``..``f15`` double precision, ``target`` integer; ``make_blobs(n_samples=rows, n_features=16,
centers=20, cluster_std=6, random_state=1)``) is built unless it already holds ``--rows`` rows.

The flow (``flows.consensus.consensus_flow``; ``--method`` LWGP, ``-k`` 20, ``--ensemble-size`` 10,
seed 0) runs once per mode, each in a fresh child process with its own ``PREFECT_HOME`` (a temporary
Prefect server, started before the clock starts) and the SQLite MLflow store ``<workdir>/mlflow.db``,
into an emptied labels table:

* ``in-process``: ``dask_address=None``, the stages run on a thread pool in the flow process;
* ``dask``: ``dask_address`` of a ``dask scheduler`` with two one-thread ``dask worker`` processes on
  loopback, started for this mode only;
* ``baseline`` (with ``--baseline DIR``): in-process, with the code of another checkout ``DIR`` (e.g.
  ``git worktree add /tmp/baseline <commit>``), to check that a change made the whole flow no slower.

``--modes`` picks the modes and their order (default ``in-process,dask``; ``baseline,in-process`` for a
regression check at sizes where the Dask run is not wanted).

Measured: each flow's wall time, the flow process's peak resident memory (VmHWM), the flow's stage
times (``summary["timings"]``), each Dask worker's peak resident memory, and the agreement of the two
runs' labels by id (fraction identical; ARI). Prints a markdown table (also written to ``--output``),
then one JSON line with every figure. Targets: Dask wall / in-process wall ≤ 1.3 and
Dask flow peak / in-process flow peak ≤ 0.40; in-process wall / baseline wall ≤ 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from lwec_tasks.executors.dask import WORKER_MODULE

ROOT = Path(__file__).resolve().parents[1]
MODES = ("baseline", "in-process", "dask")
STAGES = ("load", "generate", "eci", "consensus", "stable_ids", "evidence", "write", "model")
DASK_WORKERS = 2
FEATURES = [f"f{j}" for j in range(16)]
CENTERS = 20
SEED = 0
WALL_RATIO_TARGET = 1.3
PEAK_RATIO_TARGET = 0.40


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="SQLAlchemy URL of the database (default: <workdir>/blobs.db)")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--method", default="lwgp")
    parser.add_argument("-k", type=int, default=20, help="number of clusters")
    parser.add_argument("--ensemble-size", type=int, default=10, help="M, the number of base clusterings")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/lwec-scale"),
                        help="SQLite database, MLflow store, Prefect homes, Dask logs and child outputs")
    parser.add_argument("--output", type=Path, help="also write the markdown report here")
    parser.add_argument("--modes", default="in-process,dask",
                        help=f"comma-separated, in order, from {', '.join(MODES)} (default in-process,dask)")
    parser.add_argument("--baseline", type=Path, help="checkout whose code the baseline mode runs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser.parse_args()


# ----------------------------------------------------------------------------- the features table


def ensure_blobs_table(url: str, rows: int) -> str:
    """The name of the ``blobs_<rows>`` table, built unless it already holds ``rows`` rows."""
    import sqlalchemy as sa

    name = f"blobs_{rows}"
    engine = sa.create_engine(url)
    try:
        if count_rows(engine, name) != rows:
            started = time.perf_counter()
            create_blobs_table(engine, name, rows)
            log(f"built {name} ({rows} rows) in {time.perf_counter() - started:.1f} s")
    finally:
        engine.dispose()
    return name


def count_rows(engine, name: str) -> int | None:
    import sqlalchemy as sa

    if not sa.inspect(engine).has_table(name):
        return None
    with engine.connect() as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(sa.table(name))).scalar_one()


def create_blobs_table(engine, name: str, rows: int) -> None:
    import sqlalchemy as sa
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=rows, n_features=len(FEATURES), centers=CENTERS, cluster_std=6, random_state=1)
    table = sa.Table(name, sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True),
                     *(sa.Column(f, sa.Double) for f in FEATURES), sa.Column("target", sa.Integer))
    with engine.begin() as connection:
        table.drop(connection, checkfirst=True)
        table.create(connection)
        if engine.dialect.name == "postgresql":
            copy_blobs_binary(connection, table, X, y)
        else:
            insert_blobs(connection, name, X, y)


def copy_blobs_binary(connection, table, X, y) -> None:
    """PostgreSQL: one ``COPY ... FROM STDIN (FORMAT binary)``, the rows encoded by numpy, 500,000 at a time."""
    import numpy as np

    record = np.dtype([("n_fields", ">i2"), ("id_size", ">i4"), ("id", ">i8"),
                       *((name, [("size", ">i4"), ("value", ">f8")]) for name in FEATURES),
                       ("target_size", ">i4"), ("target", ">i4")])
    preparer = connection.dialect.identifier_preparer
    columns = ", ".join(preparer.quote(c.name) for c in table.columns)
    with connection.connection.driver_connection.cursor() as cursor, cursor.copy(
            f"COPY {preparer.format_table(table)} ({columns}) FROM STDIN (FORMAT binary)") as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + bytes(8))  # signature, flags, header extension length
        for start in range(0, len(X), 500_000):
            stop = min(start + 500_000, len(X))
            rows = np.empty(stop - start, dtype=record)
            rows["n_fields"], rows["id_size"], rows["id"] = 2 + len(FEATURES), 8, np.arange(start, stop)
            for j, name in enumerate(FEATURES):
                rows[name]["size"], rows[name]["value"] = 8, X[start:stop, j]
            rows["target_size"], rows["target"] = 4, y[start:stop]
            copy.write(rows.tobytes())
        copy.write(b"\xff\xff")  # end of data


def insert_blobs(connection, name: str, X, y) -> None:
    import numpy as np
    import pandas as pd

    for start in range(0, len(X), 500_000):
        stop = min(start + 500_000, len(X))
        frame = pd.DataFrame(X[start:stop], columns=FEATURES)
        frame.insert(0, "id", np.arange(start, stop))
        frame["target"] = y[start:stop]
        frame.to_sql(name, connection, index=False, if_exists="append", chunksize=100_000)


# ----------------------------------------------------------------------------- the labels table


def labels_table(features_table: str) -> str:
    return f"{features_table}_lwec_labels"


def drop_labels(url: str, labels: str) -> None:
    """Drop the labels storage (views, runs and rows tables) or a plain table of that name (a script's labels),
    so that the next run writes into an empty table."""
    import sqlalchemy as sa

    from lwec_tasks.io.names import parse_table_name
    from lwec_tasks.io.storage_setup import drop_storage

    engine = sa.create_engine(url)
    with engine.begin() as connection:
        drop_storage(connection, parse_table_name(labels))
        sa.Table(labels, sa.MetaData()).drop(connection, checkfirst=True)
    engine.dispose()


def read_labels(url: str, labels: str, run_key: str):
    """The run's (id, label) pairs, by id, as two numpy arrays."""
    import pandas as pd
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    table = sa.table(labels, sa.column("id"), sa.column("label"), sa.column("run_key"))
    query = sa.select(table.c.id, table.c.label).where(table.c.run_key == run_key).order_by(table.c.id)
    frame = pd.read_sql(query, engine)
    engine.dispose()
    return frame["id"].to_numpy(), frame["label"].to_numpy()


def label_agreement(first, second) -> dict:
    """Fraction of ids with identical labels, and the ARI of the two labellings."""
    import numpy as np

    from lwec_tasks import ari

    (ids_a, labels_a), (ids_b, labels_b) = first, second
    if not np.array_equal(ids_a, ids_b):
        raise SystemExit(f"the runs labelled different ids ({len(ids_a)} and {len(ids_b)} rows)")
    return {"identical": round(float(np.mean(labels_a == labels_b)), 6),
            "ari": round(float(ari(labels_a, labels_b)), 6)}


# ----------------------------------------------------------------------------- the child process


def run_flow_here(parameters: dict) -> dict:
    """In a fresh process: start Prefect's temporary server and the MLflow store, then time the flow."""
    import mlflow
    from prefect import flow

    from flows.consensus import consensus_flow

    @flow
    def warm_up() -> None:
        """Starts the temporary Prefect server, so that the wall time below is the flow's own."""

    warm_up()
    mlflow.MlflowClient(parameters["tracking_uri"]).search_experiments()  # creates the store's schema
    started = time.perf_counter()
    summary = consensus_flow(**parameters)
    return {"seconds": round(time.perf_counter() - started, 2), "peak_rss_mib": peak_rss_mib(),
            "timings": summary["timings"], "executor": summary.get("executor", "in-process"),
            "rows_written": summary["rows_written"],
            "nmi": summary["nmi"], "ari": summary["ari"]}


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


def run_flow_in_child(mode: str, parameters: dict, workdir: Path, code: Path = ROOT) -> dict:
    """Run the flow in a fresh ``benchmarks/executors.py --child`` process with its own PREFECT_HOME, importing
    the flow from the checkout ``code``."""
    prefect_home = workdir / f"prefect-{mode}"
    shutil.rmtree(prefect_home, ignore_errors=True)
    env = {**child_environment(), "PYTHONPATH": str(code)}
    env.pop("PREFECT_API_URL", None)  # a temporary server, never a configured one
    env.update(PREFECT_HOME=str(prefect_home), PREFECT_LOGGING_LEVEL="WARNING")
    output = workdir / f"{mode}.out"
    with output.open("w") as out:  # a file, not a pipe: a helper process may outlive a failed child
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(parameters)],
                       stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    results = [line for line in output.read_text().splitlines() if line.startswith("RESULT ")]
    if not results:
        raise SystemExit(f"the {mode} run failed (output in {output}):\n{output.read_text()[-6000:]}")
    return json.loads(results[-1].removeprefix("RESULT "))


def child_environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"}


# ----------------------------------------------------------------------------- the Dask cluster


@contextmanager
def dask_cluster(workdir: Path):
    """A ``dask scheduler`` and ``DASK_WORKERS`` one-thread ``dask worker`` processes on loopback; yields a
    connected client (its ``scheduler.address`` is the flow's ``dask_address``). The scheduler and the workers
    preload the code the tasks run (``--preload`` :data:`WORKER_MODULE`, as docs/scale.md advises: the workers
    run it, the scheduler unpickles the tasks), so their imports are done before the clock, as the in-process
    mode's are and as a long-lived cluster's are after its first run."""
    from distributed import Client

    dask = Path(sys.executable).parent / "dask"
    port = 8786 + os.getpid() % 1000
    address = f"tcp://127.0.0.1:{port}"
    env = child_environment()
    processes = [start_logged([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
                               "--preload", WORKER_MODULE],
                              workdir / "scheduler.log", env)]
    processes += [start_logged([dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--memory-limit",
                                "8GiB", "--no-dashboard", "--local-directory", str(workdir / f"worker{i}"),
                                "--preload", WORKER_MODULE],
                               workdir / f"worker{i}.log", env) for i in range(DASK_WORKERS)]
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(DASK_WORKERS, timeout=120)
            yield client
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)


def start_logged(command: list, log_file: Path, env: dict) -> subprocess.Popen:
    with log_file.open("w") as log_stream:
        return subprocess.Popen(command, stdout=log_stream, stderr=subprocess.STDOUT, env=env)


def worker_peaks_mib(client) -> list[float]:
    """Each Dask worker process's peak resident memory, in the order of the workers' addresses."""
    peaks = client.run(peak_rss_mib)
    return [peaks[address] for address in sorted(peaks)]


# ----------------------------------------------------------------------------- the report


def machine_description() -> str:
    cpu = "unknown CPU"
    with suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{cpu}, {os.cpu_count()} cores, {memory:.1f} GiB RAM; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}")


def ratios(runs: dict) -> dict:
    """Dask against in-process (wall, flow peak) and in-process against the baseline (wall), as far as run."""
    found = {}
    if {"in-process", "dask"} <= set(runs):
        local, dask = runs["in-process"], runs["dask"]
        found.update(wall=round(dask["seconds"] / local["seconds"], 3),
                     flow_peak=round(dask["peak_rss_mib"] / local["peak_rss_mib"], 3))
    if {"baseline", "in-process"} <= set(runs):
        found["against_baseline"] = round(runs["in-process"]["seconds"] / runs["baseline"]["seconds"], 3)
    return found


def agreements(labels: dict) -> dict:
    """Label agreement of each later mode with the first one run."""
    first, *others = list(labels)
    return {f"{other} vs {first}": label_agreement(labels[first], labels[other]) for other in others}


def markdown_report(results: dict) -> str:
    header = ["mode", "wall s", "flow process peak MiB",
              *(f"worker {i} peak MiB" for i in range(DASK_WORKERS)), *(f"{stage} s" for stage in STAGES)]
    lines = [f"Machine: {results['machine']}",
             f"Data: {results['rows']:,} rows × {len(FEATURES)} features (`{results['table']}`, "
             f"{results['database']}); {results['method'].upper()}, k = {results['k']}, "
             f"M = {results['ensemble_size']}, seed {SEED}",
             "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for mode, run in results["runs"].items():
        workers = run.get("worker_peak_rss_mib") or ["–"] * DASK_WORKERS
        timings = [f"{run['timings'][stage]:.2f}" if stage in run["timings"] else "–" for stage in STAGES]
        lines.append("| " + " | ".join([mode, f"{run['seconds']:.1f}", f"{run['peak_rss_mib']:.0f}",
                                        *(w if w == "–" else f"{w:.0f}" for w in workers), *timings]) + " |")
    ratio = results["ratios"]
    lines.append("")
    if "wall" in ratio:
        lines += [f"- Dask wall / in-process wall: **{ratio['wall']:.2f}** (target ≤ {WALL_RATIO_TARGET}: "
                  f"{verdict(ratio['wall'] <= WALL_RATIO_TARGET)})",
                  f"- Dask flow peak / in-process flow peak: **{ratio['flow_peak']:.2f}** "
                  f"(target ≤ {PEAK_RATIO_TARGET:.2f}: {verdict(ratio['flow_peak'] <= PEAK_RATIO_TARGET)})"]
    if "against_baseline" in ratio:
        lines.append(f"- in-process wall / baseline wall: **{ratio['against_baseline']:.2f}** (target ≤ 1: "
                     f"{verdict(ratio['against_baseline'] <= 1)})")
    for pair, agreement in results["agreement"].items():
        lines.append(f"- Labels, {pair}: {agreement['identical']:.2%} identical by id, ARI {agreement['ari']:.4f}")
    return "\n".join(lines) + "\n"


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- main


def compare_modes(database_url: str | None, rows: int, modes: list[str], workdir: Path, method: str = "lwgp",
                  k: int = CENTERS, ensemble_size: int = 10, baseline: Path | None = None) -> dict:
    """The flow on ``blobs_<rows>`` once per mode (in order), each in a fresh child process; returns every figure
    (``runs`` per mode, ``ratios``, ``agreement`` of the labels). ``database_url`` None: a SQLite file in
    ``workdir``."""
    import sqlalchemy as sa

    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    url = database_url or f"sqlite:///{workdir / 'blobs.db'}"
    table = ensure_blobs_table(url, rows)
    parameters = dict(database_url=url, table=table, n_clusters=k, label_column="target",
                      method=method, ensemble_size=ensemble_size, seed=SEED,
                      output_table=labels_table(table), experiment="benchmark-executors",
                      tracking_uri=f"sqlite:///{workdir / 'mlflow.db'}")
    runs, labels = {}, {}
    for mode in modes:
        drop_labels(url, labels_table(table))
        if mode == "dask":
            with dask_cluster(workdir) as client:
                runs[mode] = run_flow_in_child(mode, {**parameters, "run_name": mode,
                                                      "dask_address": client.scheduler.address}, workdir)
                runs[mode]["worker_peak_rss_mib"] = worker_peaks_mib(client)
        else:
            code = baseline.resolve() if mode == "baseline" else ROOT
            runs[mode] = run_flow_in_child(mode, {**parameters, "run_name": mode}, workdir, code)
        log(f"{mode}: {json.dumps(runs[mode])}")
        labels[mode] = read_labels(url, labels_table(table), mode)
    return {"machine": machine_description(), "database": sa.make_url(url).render_as_string(hide_password=True),
            "table": table, "rows": rows, "features": len(FEATURES), "method": method, "k": k,
            "ensemble_size": ensemble_size, "seed": SEED, "runs": runs, "ratios": ratios(runs),
            "agreement": agreements(labels)}


def main() -> None:
    args = parse_args()
    if args.child:
        print("RESULT " + json.dumps(run_flow_here(json.loads(args.child))), flush=True)
        return
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or ("baseline" in modes and args.baseline is None):
        raise SystemExit(f"--modes takes {', '.join(MODES)} (baseline needs --baseline DIR); got {args.modes!r}")
    results = compare_modes(args.database_url, args.rows, modes, args.workdir, args.method, args.k,
                            args.ensemble_size, args.baseline)
    report = markdown_report(results)
    print(report)
    if args.output:
        args.output.write_text(report)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
