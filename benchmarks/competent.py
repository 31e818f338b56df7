"""``python -m benchmarks competent``: the whole ``lwec run`` process against a competent one-model script, in one run.

    python -m benchmarks competent --database-url postgresql+psycopg://lwec:lwec@127.0.0.1:5432/lwec_bench \\
        --rows 1000000,10000000 --settings temporary,server-up --repeats 1 --json competent.json

**The table** ``blobs_<N>``: ``make_blobs(n_samples=N, n_features=16, centers=20, cluster_std=6,
random_state=1)`` as ``id`` bigint primary key, ``f0``..``f15`` double precision and the true label
``target`` (the table of ``benchmarks/executors.py``, built by its ``ensure_blobs_table``: one binary ``COPY`` on
PostgreSQL, 500,000 rows at a time). It is reused when it holds N rows and the marker row in
``lwec_bench_tables`` records the same spec; otherwise it is (re)built, marked and ``VACUUM ANALYZE``d, so the
first process to read it (the script) does not pay for the new rows' hint bits or meet autovacuum.

**The runs**, each a fresh process timed from start to exit, into a fresh labels table:

* ``script`` — :mod:`benchmarks.competent_script` (ADBC Arrow read, z-score, one scikit-learn
  ``KMeans(20, n_init=3)`` fitted on a seeded 100,000-row sample, ``predict`` in 1M-row chunks,
  ADBC ingestion of (id, label), primary key added after the load);
* ``lwec temporary`` — ``python -m lwec_tasks run`` (LWGP, k = 20, M = 10, seed 0, ``--features
  f0,...,f15``, no ``--label-column``: lwec neither reads nor uses ``target``) without
  ``PREFECT_API_URL`` and with a fresh ``PREFECT_HOME``: a first CLI run, in which lwec starts (and
  creates the database of) Prefect's temporary server, a child process of lwec;
* ``lwec server-up`` — the same command with ``PREFECT_API_URL`` pointing at a ``prefect server start``
  started once before the first run (own ``PREFECT_HOME``, a free port, ``/api/health`` awaited)
  and stopped at the end, as deployed and scheduled runs have it.

Before the first measured run, one unmeasured ``lwec run`` on a 5,000-row table of the same spec
loads numba's compiled kernels into its on-disk cache (``--no-warm-up`` skips it), so no measured
run pays compilation.

**Measured** for each run: wall time of the process from ``Popen`` to exit; peak memory of the
process tree (sum of the RSS of the process and all its descendants, sampled every 50 ms with psutil:
it includes the temporary Prefect server), and the main process's peak RSS (its ``VmHWM``, read at the
same polls); in the server-up setting, the already-running server's peak RSS during the run (not part
of the lwec tree); the machine's busy CPU-seconds while the process ran (``/proc/stat`` through psutil: the
process tree, PostgreSQL, the server already up) and that divided by the cores, the shortest wall time the
same work could take; NMI against ``target`` (scikit-learn ``normalized_mutual_info_score``, arithmetic
normalisation) of the labels read back from the run's table by id; the stage breakdown (the script's
own step times; lwec's ``time_<stage>_s`` metrics from its MLflow run in a temporary SQLite store),
and "rest" = wall − sum of stages (interpreter start, imports, Prefect, MLflow logging). With
``--repeats R`` every run is repeated R times (interleaved) and the medians are reported; every
repeat is in the JSON file. Ratios are lwec / script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from benchmarks.competent_script import FEATURES, adbc_connect, quote
from benchmarks.executors import (
    CENTERS,
    ROOT,
    STAGES,
    child_environment,
    count_rows,
    create_blobs_table,
    drop_labels,
    log,
    machine_description,
)

SETTINGS = ("temporary", "server-up", "temporary-warm")
DEFAULT_SETTINGS = ("temporary", "server-up")
SCRIPT = "script"
SCRIPT_STAGES = ("read", "standardise", "fit", "predict", "write")
METHOD, K, ENSEMBLE_SIZE, SEED = "lwgp", CENTERS, 10, 0
EXPERIMENT = "lwec-bench-competent"
MARKER_TABLE = "lwec_bench_tables"
WARM_UP_ROWS = 5_000
POLL_SECONDS = 0.05
MIB = 2**20


def run_label(setting: str, generators: str = "kmeans") -> str:
    return f"lwec {setting}" if generators == "kmeans" else f"lwec {setting} [{generators}]"


def _generators(text: str) -> str:
    from lwec_tasks.core.errors import LwecInputError
    from lwec_tasks.core.mixes import canonical_mix

    try:
        return canonical_mix(text)
    except LwecInputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# ----------------------------------------------------------------------------- options


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--database-url", required=True,
                        help="SQLAlchemy URL of the database for the table and the labels (PostgreSQL; SQLite works "
                             "for small checks)")
    parser.add_argument("--rows", type=row_counts, default=[1_000_000], metavar="N[,N...]",
                        help="table sizes, comma-separated; 1M and 10k style suffixes allowed (default 1000000)")
    parser.add_argument("--settings", type=settings_list, default=list(DEFAULT_SETTINGS), metavar="S[,S...]",
                        help=f"lwec settings, comma-separated, from {', '.join(SETTINGS)} (default: "
                             f"{','.join(DEFAULT_SETTINGS)})")
    parser.add_argument("--repeats", type=positive, default=1, help="runs of each process per size (default 1)")
    parser.add_argument("--json", metavar="FILE", help="write every figure to FILE (JSON)")
    parser.add_argument("--output", metavar="FILE", help="also write the printed report (markdown) to FILE")
    parser.add_argument("--workdir", metavar="DIR",
                        help="MLflow store, Prefect homes and process logs (default: a temporary directory, removed)")
    parser.add_argument("--generators", type=_generators, action="append", metavar="MIX",
                        help="base-clustering mix of the lwec runs (lwec run --generators); repeat the option to "
                             "time several mixes in the same run (default: kmeans, the paper's)")
    parser.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                        help="skip the unmeasured lwec run that fills numba's cache")
    return parser


def row_counts(text: str) -> list[int]:
    """``--rows``: comma-separated sizes of at least 1,000, with ``_`` separators and ``k``/``M`` suffixes."""
    sizes = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        scale = {"k": 1_000, "m": 1_000_000}.get(part[-1].lower(), 1)
        digits = part[:-1] if scale != 1 else part
        try:
            value = int(float(digits.replace("_", "")) * scale)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected sizes like 1000000 or 1M, got {part!r}") from None
        if value < 1_000:
            raise argparse.ArgumentTypeError(f"expected at least 1,000 rows, got {part!r}")
        sizes.append(value)
    if not sizes:
        raise argparse.ArgumentTypeError("expected at least one size")
    return sizes


def settings_list(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [s for s in chosen if s not in SETTINGS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"settings are {', '.join(SETTINGS)}; got {text!r}")
    return chosen


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


# ----------------------------------------------------------------------------- the table


def table_spec(rows: int) -> str:
    """The marker text of a ``blobs_<rows>`` table: everything its contents depend on."""
    return (f"make_blobs(n_samples={rows}, n_features={len(FEATURES)}, centers={CENTERS}, cluster_std=6, "
            f"random_state=1); id bigint primary key = row position, f0..f{len(FEATURES) - 1} double, target")


def ensure_table(url: str, rows: int) -> str:
    """The name of ``blobs_<rows>``, reused if it holds ``rows`` rows and carries the spec's marker, else built."""
    import sqlalchemy as sa

    name = f"blobs_{rows}"
    engine = sa.create_engine(url)
    marker = sa.Table(MARKER_TABLE, sa.MetaData(), sa.Column("table_name", sa.String(200), primary_key=True),
                      sa.Column("spec", sa.Text, nullable=False))
    try:
        marker.create(engine, checkfirst=True)
        with engine.connect() as connection:
            spec = connection.execute(sa.select(marker.c.spec).where(marker.c.table_name == name)).scalar()
        if spec == table_spec(rows) and count_rows(engine, name) == rows:
            return name
        log(f"# building {name} ({rows:,} rows × {len(FEATURES)} features)")
        started = time.perf_counter()
        create_blobs_table(engine, name, rows)
        settle_table(engine, name)
        with engine.begin() as connection:
            connection.execute(sa.delete(marker).where(marker.c.table_name == name))
            connection.execute(sa.insert(marker).values(table_name=name, spec=table_spec(rows)))
        log(f"#   built in {time.perf_counter() - started:.1f} s")
    finally:
        engine.dispose()
    return name


def settle_table(engine, name: str) -> None:
    """``VACUUM ANALYZE`` a freshly built PostgreSQL table (elsewhere nothing), as autovacuum leaves a table
    that has been in use: the first process to read a new table otherwise pays for setting its rows' hint bits
    and competes with autovacuum, and that is the script, measured first."""
    if engine.dialect.name != "postgresql":
        return
    quoted = engine.dialect.identifier_preparer.quote(name)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql(f"VACUUM ANALYZE {quoted}")


# ----------------------------------------------------------------------------- one measured process


def busy_cpu_seconds() -> float:
    """CPU-seconds the whole machine has spent busy since boot (every core; idle and I/O wait left out)."""
    import psutil

    times = psutil.cpu_times()
    guest = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)  # already counted in user
    return sum(times) - times.idle - getattr(times, "iowait", 0.0) - guest


def tree_rss(process) -> int:
    """Bytes resident in ``process`` (a psutil.Process) and all its descendants; 0 for one that is gone."""
    import psutil

    total = 0
    try:
        members = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in members:
        with suppress(psutil.Error):
            total += member.memory_info().rss
    return total


def high_water_mark(pid: int) -> int:
    """Bytes of ``pid``'s peak resident memory so far (``VmHWM``, which starts afresh at exec, unlike
    ``ru_maxrss``, which keeps the high-water mark of the process that forked it); 0 if unreadable."""
    with suppress(OSError, ValueError), open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def measure_process(command: list[str], env: dict, cwd: Path, log_file: Path, watch=None) -> dict:
    """Run ``command`` to its exit; its wall time, peak tree RSS, main-process peak, exit code and the
    machine's busy CPU-seconds meanwhile (``cpu_seconds``: the process tree, PostgreSQL, a Prefect server already
    up, and this harness's polling).

    Every ``POLL_SECONDS``: the sum of the RSS of the process and all its descendants (its peak is the
    tree peak), and the main process's ``VmHWM`` (its exact peak, up to growth in the last interval before
    exit). ``watch`` (a psutil.Process outside the tree, e.g. a Prefect server already running) is
    sampled too.
    """
    import psutil

    tree_peak = main_peak = watched_peak = 0
    with log_file.open("w") as out:
        started, started_at, cpu_before = time.perf_counter(), time.time(), busy_cpu_seconds()
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    root = psutil.Process(child.pid)
    while True:
        main_peak = max(main_peak, high_water_mark(child.pid))
        tree_peak = max(tree_peak, tree_rss(root))
        if watch is not None:
            watched_peak = max(watched_peak, tree_rss(watch))
        pid, status = os.waitpid(child.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(POLL_SECONDS)
    seconds, cpu_seconds = time.perf_counter() - started, busy_cpu_seconds() - cpu_before
    child.returncode = os.waitstatus_to_exitcode(status)
    result = {"seconds": round(seconds, 3), "cpu_seconds": round(cpu_seconds, 2), "returncode": child.returncode,
              "started_at": started_at,
              "tree_peak_mib": round(max(tree_peak, main_peak) / MIB, 1), "main_peak_mib": round(main_peak / MIB, 1)}
    if watch is not None:
        result["server_peak_mib"] = round(watched_peak / MIB, 1)
    return result


def last_lines(path: Path, count: int = 15) -> str:
    with suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-count:])
    return ""


# ----------------------------------------------------------------------------- the Prefect server


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def prefect_environment(home: Path, api_url: str | None) -> dict:
    env = {**child_environment(), "PREFECT_HOME": str(home), "PREFECT_UI_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    env.pop("MLFLOW_TRACKING_URI", None)  # lwec gets --tracking-uri
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


@contextmanager
def prefect_server(workdir: Path, timeout: float = 180) -> Iterator[tuple[str, object]]:
    """``prefect server start`` on a free loopback port with its own home; yields (API URL, psutil.Process)."""
    import psutil

    home = workdir / "prefect-server"
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    log_file = home / "server.log"
    with log_file.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                   "--port", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                  env=prefect_environment(home, None), cwd=home)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if server.poll() is not None:
                raise SystemExit(f"prefect server start exited ({server.returncode}):\n{last_lines(log_file)}")
            with suppress(OSError):
                if urllib.request.urlopen(f"{api_url}/health", timeout=2).status == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"the Prefect server did not answer within {timeout:.0f} s:\n{last_lines(log_file)}")
            time.sleep(1)
        log(f"# Prefect server up at {api_url}")
        yield api_url, psutil.Process(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# ----------------------------------------------------------------------------- the two kinds of run


def script_command(url: str, table: str, output_table: str) -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks" / "competent_script.py"), url, table, output_table]


def lwec_command(url: str, table: str, output_table: str, tracking_uri: str, run_key: str,
                 generators: str | None = "kmeans", method: str = METHOD) -> list[str]:
    """The ``lwec run`` command line; ``generators`` None leaves the mix to the run (its default by table size)."""
    mix = [] if generators is None else ["--generators", generators]
    return [sys.executable, "-m", "lwec_tasks", "run", "--database-url", url, "--table", table,
            "-k", str(K), "--method", method, "-M", str(ENSEMBLE_SIZE), "--seed", str(SEED),
            "--features", ",".join(FEATURES), "--output-table", output_table, "--run-name", run_key,
            "--experiment", EXPERIMENT, "--tracking-uri", tracking_uri, *mix]


def run_script(url: str, table: str, output_table: str, workdir: Path) -> dict:
    log_file = workdir / f"{output_table}.log"
    env = {**child_environment()}
    measured = measure_process(script_command(url, table, output_table), env, workdir, log_file)
    found = [line for line in log_file.read_text().splitlines() if line.startswith("RESULT ")]
    if measured["returncode"] != 0 or not found:
        return {**measured, "error": last_lines(log_file, 5) or "failed"}
    return {**measured, "stages": json.loads(found[-1][len("RESULT "):])["seconds"]}


def run_lwec(url: str, table: str, output_table: str, workdir: Path, tracking_uri: str, setting: str,
             api_url: str | None = None, server=None, generators: str | None = "kmeans",
             method: str = METHOD) -> dict:
    """One ``lwec run`` process (``method``, default LWGP; ``generators`` None: the run's default mix):
    ``temporary`` with a fresh ``PREFECT_HOME`` and no
    ``PREFECT_API_URL``, ``temporary-warm`` with the ``PREFECT_HOME`` of the warm-up (its server database already
    made), ``server-up`` with ``PREFECT_API_URL`` = ``api_url``."""
    run_key = output_table
    if setting == "server-up":
        env = prefect_environment(workdir / "prefect-server", api_url)
    else:
        home = workdir / ("prefect-home-warm" if setting == "temporary-warm" else f"prefect-home-{output_table}")
        if setting == "temporary":
            shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True, exist_ok=True)
        env = prefect_environment(home, None)
    log_file = workdir / f"{output_table}.log"
    measured = measure_process(lwec_command(url, table, output_table, tracking_uri, run_key, generators, method),
                               env, workdir, log_file, watch=server)
    if measured["returncode"] != 0:
        return {**measured, "error": last_lines(log_file, 5) or "failed"}
    text = log_file.read_text(errors="replace")
    stages, mlflow_seconds, run_id = mlflow_stage_times(tracking_uri, run_key)
    phases = flow_phases(text, measured["started_at"], measured["seconds"])
    return {**measured, "stages": stages, "mlflow_seconds": mlflow_seconds, "mlflow_run_id": run_id, **phases}


#: Prefect's console lines that open and close the flow run: ``HH:MM:SS.mmm | LEVEL | Flow run 'name' - ...``.
_FLOW_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d\.\d+) \| \w+ +\| Flow run '[^']*' - "
                        r"(Beginning flow run|Finished in state)", re.MULTILINE)


def flow_phases(log_text: str, started_at: float, seconds: float) -> dict:
    """Seconds before the flow run began (interpreter, imports, checks, Prefect server or API) and after it
    finished (temporary server stopped, outcome printed, exit), from Prefect's console timestamps (local time)
    and the process's start (epoch seconds); {} when the log has no such lines."""
    from datetime import datetime

    marks = {}
    for match in _FLOW_LINE.finditer(log_text):
        hours, minutes, secs, what = match.groups()
        marks.setdefault(what, int(hours) * 3600 + int(minutes) * 60 + float(secs))
    if len(marks) < 2:
        return {}
    start = datetime.fromtimestamp(started_at)
    start_of_day = start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6
    begun = (marks["Beginning flow run"] - start_of_day) % 86400
    finished = (marks["Finished in state"] - start_of_day) % 86400
    return {"before_flow_seconds": round(begun, 3), "flow_seconds": round(finished - begun, 3),
            "after_flow_seconds": round(seconds - finished, 3)}


def mlflow_stage_times(tracking_uri: str, run_key: str) -> tuple[dict, float | None, str | None]:
    """The ``time_<stage>_s`` metrics of the MLflow run tagged ``lwec.run_key = run_key``, by stage; the seconds
    from the MLflow run's creation to its end (the logging of params, figures and model); its id."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = [] if experiment is None else client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.`lwec.run_key` = '{run_key}'")
    if not runs:
        return {}, None, None
    info, metrics = runs[0].info, runs[0].data.metrics
    stages = {stage: round(metrics[f"time_{stage}_s"], 3) for stage in STAGES if f"time_{stage}_s" in metrics}
    logging = (info.end_time - info.start_time) / 1000 if info.end_time and info.start_time else None
    return stages, logging, info.run_id


# ----------------------------------------------------------------------------- NMI from the tables


def read_column(url: str, table: str, column: str):
    """(ids, values) of ``table`` in id order, read through ADBC."""
    import numpy as np

    connection = adbc_connect(url)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id, {quote(column)} FROM {quote(table)} ORDER BY id")
            arrow = cursor.fetch_arrow_table()
    finally:
        connection.close()
    return np.asarray(arrow.column(0).to_numpy()), np.asarray(arrow.column(1).to_numpy())


def nmi_against(truth, labels) -> float:
    """NMI of ``labels`` (ids, labels) against ``truth`` (ids, target); both must cover the same ids."""
    import numpy as np
    from sklearn.metrics import normalized_mutual_info_score

    (truth_ids, target), (label_ids, predicted) = truth, labels
    if not np.array_equal(truth_ids, label_ids):
        raise ValueError(f"the labels cover {len(label_ids):,} ids, not the table's {len(truth_ids):,}")
    return round(float(normalized_mutual_info_score(target, predicted)), 6)


# ----------------------------------------------------------------------------- summary and report


def median_run(repeats: list[dict]) -> dict:
    """The medians of a run's repeats (errors left out): whole seconds, peaks, NMI and each stage."""
    good = [r for r in repeats if "error" not in r]
    if not good:
        return {"error": repeats[-1].get("error", "failed") if repeats else "not run"}
    keys = ("seconds", "cpu_seconds", "tree_peak_mib", "main_peak_mib", "server_peak_mib", "nmi", "mlflow_seconds",
            "before_flow_seconds", "flow_seconds", "after_flow_seconds")
    summary = {key: statistics.median(r[key] for r in good) for key in keys
               if all(r.get(key) is not None for r in good)}
    stage_names = [s for s in good[0].get("stages", {}) if all(s in r.get("stages", {}) for r in good)]
    summary["stages"] = {s: statistics.median(r["stages"][s] for r in good) for s in stage_names}
    accounted = sum(summary["stages"].values()) + summary.get("mlflow_seconds", 0)
    summary["rest"] = summary["seconds"] - accounted
    if "flow_seconds" in summary:  # the flow's own time not in a stage nor in MLflow logging
        summary["rest_of_flow"] = summary["flow_seconds"] - accounted
    summary["repeats"] = len(good)
    return summary


def ratios(lwec: dict, script: dict) -> dict | None:
    """lwec / script: wall time, tree peak, main-process peak and NMI (None if either run failed)."""
    if "error" in lwec or "error" in script:
        return None
    return {"seconds": lwec["seconds"] / script["seconds"],
            "cpu": lwec["cpu_seconds"] / script["cpu_seconds"] if script.get("cpu_seconds") else None,
            "tree_peak": lwec["tree_peak_mib"] / script["tree_peak_mib"],
            "main_peak": lwec["main_peak_mib"] / script["main_peak_mib"],
            "nmi": lwec["nmi"] / script["nmi"] if script.get("nmi") else None}


def summarise(rows: int, runs: dict[str, list[dict]]) -> dict:
    medians = {name: median_run(repeats) for name, repeats in runs.items()}
    found = {name: ratios(medians[name], medians[SCRIPT]) for name in medians
             if name != SCRIPT and SCRIPT in medians}
    return {"rows": rows, "medians": medians, "ratios": found}


def _number(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def cpu_floor(cpu_seconds: float | None) -> float | None:
    """The shortest wall time ``cpu_seconds`` of the machine's busy time can take on its cores (all of them
    busy)."""
    return None if cpu_seconds is None else cpu_seconds / os.cpu_count()


def report(summaries: list[dict], repeats: int) -> str:
    """The markdown tables: the whole processes with the ratios, then the stage breakdown of each."""
    what = f"median of {repeats}" if repeats > 1 else "one run each"
    lines = [f"Whole processes ({what}); ratios lwec / script. *CPU s*: the machine's busy CPU-seconds while the "
             "process ran (its processes, PostgreSQL's, a Prefect server already up); *CPU floor*: CPU s / cores, "
             "the shortest time that work could take on this machine:", "",
             "| N | process | wall s | CPU s | CPU floor s | tree peak MiB | main peak MiB | server MiB | NMI "
             "| time × | CPU × | tree peak × | main peak × | NMI × |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for summary in summaries:
        for name, run in summary["medians"].items():
            if "error" in run:
                lines.append(f"| {summary['rows']:,} | {name} | error: {' '.join(run['error'].split())[-200:]} "
                             f"||||||||||||")
                continue
            ratio = summary["ratios"].get(name) or {}
            lines.append(
                f"| {summary['rows']:,} | {name} | {_number(run['seconds'])} | {_number(run.get('cpu_seconds'))} | "
                f"{_number(cpu_floor(run.get('cpu_seconds')))} | {_number(run['tree_peak_mib'], 0)} | "
                f"{_number(run['main_peak_mib'], 0)} | {_number(run.get('server_peak_mib'), 0)} | "
                f"{_number(run.get('nmi'), 4)} | {_number(ratio.get('seconds'), 2)} | {_number(ratio.get('cpu'), 2)} | "
                f"{_number(ratio.get('tree_peak'), 2)} | {_number(ratio.get('main_peak'), 2)} | "
                f"{_number(ratio.get('nmi'), 3)} |")
    lines += ["", "Stages of the script (s); rest = interpreter start and imports:", "",
              "| N | " + " | ".join(SCRIPT_STAGES) + " | rest | wall |",
              "|---:|" + "---:|" * (len(SCRIPT_STAGES) + 2)]
    for summary in summaries:
        run = summary["medians"].get(SCRIPT, {})
        if "error" not in run and run:
            lines.append(f"| {summary['rows']:,} | "
                         + " | ".join(_number(run["stages"].get(s), 2) for s in SCRIPT_STAGES)
                         + f" | {_number(run['rest'], 2)} | {_number(run['seconds'], 1)} |")
    lines += ["", "Stages of lwec (s): *before flow* = interpreter, imports, checks, Prefect server start or API "
                  "(from Prefect's log; less the load and generate stages when the command did them before the flow "
                  "run began); "
                  "stages = MLflow `time_<stage>_s`; *MLflow* = the MLflow run's creation to "
                  "end; *rest of flow* = flow run − stages − MLflow (Prefect task runs, summary); *after flow* = "
                  "temporary server stopped, outcome printed, exit:", "",
              "| N | setting | before flow | " + " | ".join(STAGES) + " | MLflow | rest of flow | after flow | wall |",
              "|---:|---|---:|" + "---:|" * (len(STAGES) + 4)]
    for summary in summaries:
        for name, run in summary["medians"].items():
            if name == SCRIPT or "error" in run:
                continue
            lines.append(f"| {summary['rows']:,} | {name.removeprefix('lwec ')} | "
                         f"{_number(run.get('before_flow_seconds'), 2)} | "
                         + " | ".join(_number(run["stages"].get(s), 2) for s in STAGES)
                         + f" | {_number(run.get('mlflow_seconds'), 2)} | {_number(run.get('rest_of_flow'), 2)} | "
                         f"{_number(run.get('after_flow_seconds'), 2)} | {_number(run['seconds'], 1)} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main


def measure_size(url: str, rows: int, settings: list[str], repeats: int, workdir: Path, tracking_uri: str,
                 server: tuple | None, mixes: tuple[str, ...] = ("kmeans",)) -> dict[str, list[dict]]:
    table = ensure_table(url, rows)
    truth = read_column(url, table, "target")
    # run name -> (setting, mix, short name for its labels table)
    plan = {run_label(s, mix): (s, mix, re.sub(r"[^a-z]+", "_", run_label(s)) + (f"_mix{i}" if i else ""))
            for i, mix in enumerate(mixes) for s in settings}
    runs: dict[str, list[dict]] = {SCRIPT: [], **{name: [] for name in plan}}
    for repeat in range(repeats):
        for name in runs:
            slug = re.sub(r"[^a-z]+", "_", name) if name == SCRIPT else plan[name][2]
            output_table = f"{table}_{slug}_{repeat}"
            drop_labels(url, output_table)
            log(f"# {rows:,} rows, {name}, repeat {repeat + 1}/{repeats}")
            if name == SCRIPT:
                result = run_script(url, table, output_table, workdir)
            else:
                setting, mix, _ = plan[name]
                api_url, process = server if setting == "server-up" else (None, None)
                result = run_lwec(url, table, output_table, workdir, tracking_uri, setting, api_url, process, mix)
            if "error" not in result:
                result["nmi"] = nmi_against(truth, read_column(url, output_table, "label"))
            drop_labels(url, output_table)
            log(f"#   {json.dumps(result)}")
            runs[name].append(result)
    return runs


def warm_up(url: str, workdir: Path, tracking_uri: str) -> None:
    """One unmeasured ``lwec run`` on a small table, so that numba's on-disk cache holds every kernel."""
    table = ensure_table(url, WARM_UP_ROWS)
    output_table = f"{table}_warm_up"
    log("# warm-up: one lwec run on a 5,000-row table (fills numba's cache; not measured)")
    result = run_lwec(url, table, output_table, workdir, tracking_uri, "temporary-warm")
    drop_labels(url, output_table)
    if "error" in result:
        raise SystemExit(f"the warm-up lwec run failed:\n{result['error']}")


def main(args) -> int:
    import sqlalchemy as sa

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lwec-bench-competent-") as scratch:
        workdir = Path(args.workdir or scratch).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        tracking_uri = f"sqlite:///{workdir / 'mlflow.db'}"
        if args.warm_up:
            warm_up(args.database_url, workdir, tracking_uri)
        with contextmanager_if("server-up" in args.settings, lambda: prefect_server(workdir)) as server:
            mixes = tuple(dict.fromkeys(args.generators or ["kmeans"]))
            all_runs = {rows: measure_size(args.database_url, rows, args.settings, args.repeats, workdir,
                                           tracking_uri, server, mixes) for rows in args.rows}
    summaries = [summarise(rows, runs) for rows, runs in all_runs.items()]
    text = report(summaries, args.repeats)
    header = (f"Machine: {machine_description()}\nDatabase: "
              f"{sa.make_url(args.database_url).render_as_string(hide_password=True)}; lwec {METHOD.upper()}, "
              f"k = {K}, M = {ENSEMBLE_SIZE}, seed {SEED}; script KMeans(k = {K}, n_init = 3) on 100,000 rows\n")
    print(header + "\n" + text)
    if args.output:
        Path(args.output).write_text(header + "\n" + text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "machine": machine_description(),
            "database": sa.make_url(args.database_url).render_as_string(hide_password=True),
            "method": METHOD, "k": K, "ensemble_size": ENSEMBLE_SIZE, "seed": SEED, "settings": args.settings,
            "repeats": args.repeats, "seconds": round(time.perf_counter() - started, 1),
            "sizes": [{**summary, "runs": all_runs[summary["rows"]]} for summary in summaries]}, indent=1) + "\n")
    failed = any("error" in run for summary in summaries for run in summary["medians"].values())
    return 1 if failed else 0


@contextmanager
def contextmanager_if(condition: bool, make):
    """``make()``'s context when ``condition`` holds, else one that yields None."""
    if condition:
        with make() as value:
            yield value
    else:
        yield None


if __name__ == "__main__":
    sys.exit(main(add_arguments(argparse.ArgumentParser(prog="python -m benchmarks.competent",
                                                        description=__doc__.split("\n\n")[0])).parse_args()))
