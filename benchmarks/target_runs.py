"""The guard's measure functions of whole runs against a database (``--database-url``): the acceptance table
``blobs_<N>`` of :mod:`benchmarks.competent` (16-d ``make_blobs``, 20 centres, built once and reused).

Each returns :class:`~benchmarks.target_table.Measured`; runs several targets read (the 1M-row runs with
their confidences, the alternated 10M-row runs) happen once per guard run through :meth:`Context.once`.
Ratios are medians over alternated repeats of the ratio within each repeat.
"""

from __future__ import annotations

import re
import statistics
import tempfile
from pathlib import Path

from benchmarks.target_table import Context, Measured

ONE_MILLION, TEN_MILLION, DASK_ROWS = 1_000_000, 10_000_000, 2_000_000
WHOLE_RUN_REPEATS = 3
SERVED_REPEATS = 5
#: The processes alternated at 10M rows: name → (method, mix), the script's entry None.
WHOLE_RUNS = {"script": None, "lwgp default": ("lwgp", "default"), "lwgp kmeans": ("lwgp", "kmeans"),
              "lwea default": ("lwea", "default")}


def workdir(context: Context, name: str) -> Path:
    """A scratch folder of this guard run."""
    base = Path(context.workdir or tempfile.mkdtemp(prefix="lwec-targets-"))
    context.workdir = str(base)
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# ----------------------------------------------------------------------------------------- 1M rows: evidence

def blobs_1m(context: Context) -> dict[str, dict]:
    """:func:`benchmarks.evidence_bar.measure` on ``blobs_1000000``: per method NMI, ROC AUC, ECE."""
    def measure() -> dict:
        from benchmarks.evidence_bar import measure as evidence

        return evidence(context.database_url, ONE_MILLION, log=context.log)
    return context.once("blobs-1m", measure)


def blobs_1m_nmi_gap(context: Context) -> Measured:
    found = blobs_1m(context)
    return Measured({"": found["lwea"]["nmi"] - found["lwgp"]["nmi"]},
                    f"NMI LWEA {found['lwea']['nmi']:.4f}, LWGP {found['lwgp']['nmi']:.4f}")


def blobs_1m_figure(key: str):
    """A measure: ``key`` ("auc", "ece") of both methods' 1M-row runs."""
    def measure(context: Context) -> Measured:
        found = blobs_1m(context)
        return Measured({method.upper(): found[method][key] for method in ("lwea", "lwgp")})
    return measure


# ------------------------------------------------------------------------------------ 10M rows: whole runs

def whole_runs_10m(context: Context) -> dict[str, list[dict]]:
    """:data:`WHOLE_RUNS` alternated :data:`WHOLE_RUN_REPEATS` times on ``blobs_10000000``, every ``lwec run`` an
    everyday CLI run (``temporary-warm``, LWGP or LWEA, k = 20, M = 10, seed 0): name → one figure dict per
    repeat (``seconds``, ``stages``, …, as :func:`benchmarks.competent.run_lwec` gives them)."""
    def measure() -> dict:
        from benchmarks import competent
        from benchmarks.executors import drop_labels
        url, folder = context.database_url, workdir(context, "whole-10m")
        tracking_uri = f"sqlite:///{folder / 'mlflow.db'}"
        table = competent.ensure_table(url, TEN_MILLION)
        competent.warm_up(url, folder, tracking_uri)
        runs: dict[str, list[dict]] = {name: [] for name in WHOLE_RUNS}
        for repeat in range(WHOLE_RUN_REPEATS):
            for name, plan in WHOLE_RUNS.items():
                output = f"{table}_guard_{re.sub(r'[^a-z]+', '_', name)}_{repeat}"
                drop_labels(url, output)
                context.log(f"# 10M rows, {name}, repeat {repeat + 1}/{WHOLE_RUN_REPEATS}")
                if plan is None:
                    result = competent.run_script(url, table, output, folder)
                else:
                    method, mix = plan
                    result = competent.run_lwec(url, table, output, folder, tracking_uri, "temporary-warm",
                                                generators=None if mix == "default" else mix,
                                                method=method)
                drop_labels(url, output)
                if "error" in result:
                    raise RuntimeError(f"{name}: {result['error'].splitlines()[-1]}")
                runs[name].append(result)
        return runs
    return context.once("whole-10m", measure)


def median_pair_ratio(runs: dict[str, list[dict]], numerator: str, denominator: str) -> tuple[float, list[float]]:
    """The median over repeats of ``numerator``'s seconds / ``denominator``'s in the same repeat, and the ratios."""
    ratios = [a["seconds"] / b["seconds"] for a, b in zip(runs[numerator], runs[denominator])]
    return statistics.median(ratios), ratios


def whole_run_ratio(numerator: str, denominator: str):
    """A measure: the median pair ratio of two of :data:`WHOLE_RUNS` at 10M rows."""
    def measure(context: Context) -> Measured:
        runs = whole_runs_10m(context)
        ratio, ratios = median_pair_ratio(runs, numerator, denominator)
        medians = {name: statistics.median(r["seconds"] for r in runs[name]) for name in (numerator, denominator)}
        return Measured({"": ratio}, f"{numerator} {medians[numerator]:.1f} s, {denominator} "
                                     f"{medians[denominator]:.1f} s; pairs " + ", ".join(f"{r:.2f}" for r in ratios))
    return measure


def evidence_share_10m(context: Context) -> Measured:
    """The evidence stage (row confidence, profiles, the co-association's CDF and the k curve) as a share of
    the whole run's wall time, median over the 10M-row runs of each method (run default mix)."""
    runs = whole_runs_10m(context)
    values = {}
    for name, method in (("lwea default", "LWEA"), ("lwgp default", "LWGP")):
        shares = [r["stages"]["evidence"] / r["seconds"] for r in runs[name] if "evidence" in r.get("stages", {})]
        if shares:
            values[method] = 100 * statistics.median(shares)
    return Measured(values)


def mixed_cost_10m(context: Context) -> Measured:
    """:func:`benchmarks.mixed_cost.measure` at 10M rows, :data:`WHOLE_RUN_REPEATS` alternated pairs: the median
    mixed run over the median numeric-only run, with the load stage of each."""
    from benchmarks import mixed_cost

    runs = context.once("mixed-10m", lambda: mixed_cost.measure(context.database_url, TEN_MILLION,
                                                                WHOLE_RUN_REPEATS, log=context.log))
    found = mixed_cost.summary(runs)
    load = found["stages"].get("load")
    return Measured({"": found["ratio"]}, f"mixed {found['mixed']:.1f} s, numeric {found['numeric']:.1f} s"
                    + (f"; load {load[0]:.1f} / {load[1]:.1f} s" if load else ""))


# ---------------------------------------------------------------------------------- 1M rows: served, auto k

def served_1m(context: Context) -> Measured:
    """``python -m benchmarks.served`` (its own process: it points Prefect's settings at the server it starts): a
    served deployment's flow run against the script, :data:`SERVED_REPEATS` alternated pairs on 1M rows."""
    import json
    import subprocess
    import sys

    from benchmarks.executors import ROOT, child_environment

    output = workdir(context, "served") / "served.json"
    context.log("# a served deployment's flow run against the script, 1M rows")
    completed = subprocess.run([sys.executable, "-m", "benchmarks.served", "--database-url", context.database_url,
                                "--rows", str(ONE_MILLION), "--repeats", str(SERVED_REPEATS), "--json", str(output)],
                               cwd=ROOT, env=child_environment(), capture_output=True, text=True)
    if completed.returncode != 0 or not output.exists():
        raise RuntimeError((completed.stderr.strip().splitlines() or ["benchmarks.served failed"])[-1])
    found = json.loads(output.read_text())
    return Measured({"": found["median_ratio"]}, f"served {found['median_served']:.2f} s, script "
                                                 f"{found['median_script']:.2f} s")


#: The line the consensus stage logs when it chooses k.
CHOSE_K = re.compile(r"Chose k=(\d+) .* in ([0-9.]+) s")


def auto_k_share_1m(context: Context) -> Measured:
    """One ``lwec run -k auto`` (LWGP, M = 10, seed 0, run default mix) on ``blobs_1000000``: the seconds the
    choice of k took (its log line) as a share of the process's wall time."""
    from benchmarks import competent
    from benchmarks.executors import drop_labels

    url, folder = context.database_url, workdir(context, "auto-k")
    table = competent.ensure_table(url, ONE_MILLION)
    output, run_key = f"{table}_guard_auto_k", "guard-auto-k"
    drop_labels(url, output)
    command = competent.lwec_command(url, table, output, f"sqlite:///{folder / 'mlflow.db'}", run_key,
                                     generators=None)
    command[command.index("-k") + 1] = "auto"
    (folder / "prefect-home").mkdir(exist_ok=True)
    # the choice's own log line is INFO: kept whatever level the calling shell sets
    env = {**competent.prefect_environment(folder / "prefect-home", None), "PREFECT_LOGGING_LEVEL": "INFO"}
    log_file = folder / "auto_k.log"
    context.log("# lwec run -k auto, 1M rows")
    measured = competent.measure_process(command, env, folder, log_file)
    drop_labels(url, output)
    if measured["returncode"] != 0:
        raise RuntimeError(competent.last_lines(log_file, 3) or "lwec run failed")
    found = CHOSE_K.search(log_file.read_text(errors="replace"))
    if not found:
        raise RuntimeError("no 'Chose k=' line in the run's log")
    k, seconds = int(found[1]), float(found[2])
    return Measured({"": 100 * seconds / measured["seconds"]}, f"k = {k} in {seconds:.2f} s of "
                                                              f"{measured['seconds']:.1f} s")


# ------------------------------------------------------------------------------------- Dask against in-process

def dask_2m(context: Context) -> list[dict]:
    """:func:`benchmarks.executors.compare_modes` on ``blobs_2000000``, :data:`WHOLE_RUN_REPEATS` times: each an
    alternated pair, the flow in-process, then on Dask (one pair's ratio moved from 1.23× to 1.44× between runs
    minutes apart)."""
    def measure() -> list[dict]:
        from benchmarks.executors import compare_modes

        pairs = []
        for repeat in range(WHOLE_RUN_REPEATS):
            context.log(f"# the flow in-process and on Dask, 2M rows, pair {repeat + 1} of {WHOLE_RUN_REPEATS}")
            pairs.append(compare_modes(context.database_url, DASK_ROWS, ["in-process", "dask"],
                                       workdir(context, "dask")))
        return pairs
    return context.once("dask-2m", measure)


def dask_wall(context: Context) -> Measured:
    """Median over the alternated pairs of Dask's wall time over in-process's."""
    pairs = dask_2m(context)
    ratios = [pair["ratios"]["wall"] for pair in pairs]
    seconds = median_per_mode(pairs, "seconds")
    return Measured({"": statistics.median(ratios)},
                    f"in-process {seconds['in-process']:.1f} s, Dask {seconds['dask']:.1f} s; pairs "
                    + ", ".join(f"{ratio:.2f}" for ratio in ratios))


def dask_peak(context: Context) -> Measured:
    """Median over the alternated pairs of the Dask flow process's peak over the in-process flow's."""
    pairs = dask_2m(context)
    peaks = median_per_mode(pairs, "peak_rss_mib")
    return Measured({"": statistics.median(pair["ratios"]["flow_peak"] for pair in pairs)},
                    f"in-process {peaks['in-process']:.0f} MiB, Dask {peaks['dask']:.0f} MiB")


def median_per_mode(pairs: list[dict], figure: str) -> dict[str, float]:
    """``figure`` of each mode's runs ("in-process", "dask"), the median over the pairs of :func:`dask_2m`."""
    return {mode: statistics.median(pair["runs"][mode][figure] for pair in pairs) for mode in ("in-process", "dask")}
