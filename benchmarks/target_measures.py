"""The guard's measure functions that need no database: each takes a :class:`~benchmarks.target_table.Context`
and returns :class:`~benchmarks.target_table.Measured`, reusing the benchmark modules.

Measurements several targets read (the pools' consensus steps, the battery's scores, the mixed tables) run once
per guard run through :meth:`Context.once`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.target_table import Context, Measured

ROOT = Path(__file__).resolve().parents[1]
#: The pools the consensus steps are timed on, and the cases timed (name, warm repeats).
STEP_POOLS = ("LR", "PD")
STEP_CASES = (("project-eci", 5), ("project-lwea", 3), ("project-lwgp", 3), ("project-lwgp-k10", 3))
#: The published single algorithms the battery's mean AMI is held to (ANCHORS.md; BENCHMARKS.md).
BATTERY_ANCHORS = {"GIc": 0.785, "Genie G0.3": 0.788}
BATTERY_BAR = max(BATTERY_ANCHORS.values())
LIBRARY_ROWS, LIBRARY_PAIRS = 100_000, 12
DEMO_RUNS = 3


def cache_dir() -> Path:
    """Built ensembles kept between guard runs: ``$TMPDIR/lwec_targets_cache``."""
    return Path(tempfile.gettempdir()) / "lwec_targets_cache"


def battery_dir() -> Path:
    """``$LWEC_BATTERY_DIR``, else ``../shared/data/battery`` next to the project."""
    return Path(os.environ.get("LWEC_BATTERY_DIR") or ROOT.parent / "shared" / "data" / "battery")


# ------------------------------------------------------------------------------------- consensus steps (runner)

def run_case(context: Context, display: str, spec: str, name: str, repeats: int, workdir: Path) -> dict:
    """One case of :mod:`benchmarks.cases` in its own process (:func:`benchmarks.runner.run`): its figures, or
    ``{"error": last line}``; labels saved in ``workdir`` (``labels_path``)."""
    from benchmarks.runner import Case, run

    case = Case(display, spec, name, name, repeats)
    context.log(f"# case {name} on {display}")
    run(case, workdir, dict(os.environ))
    return {**case.result, "labels_path": case.labels_path}


def pool_steps(context: Context) -> dict[str, dict[str, dict]]:
    """pool → case name → figures (``warm_s``, ``cold_s``, ``peak_mb``) of :data:`STEP_CASES` on each of
    :data:`STEP_POOLS`."""
    def measure() -> dict:
        found: dict[str, dict] = {}
        with tempfile.TemporaryDirectory(prefix="lwec-targets-") as workdir:
            for pool in STEP_POOLS:
                for name, repeats in STEP_CASES:
                    result = run_case(context, pool, f"pool:{pool}", name, repeats, Path(workdir))
                    if "error" in result:
                        raise RuntimeError(f"{pool} {name}: {result['error']}")
                    found.setdefault(pool, {})[name] = result
        return found

    return context.once("pool-steps", measure)


def step_figure(case: str, key: str = "warm_s"):
    """A measure: ``key`` of ``case`` on each of the step pools."""
    def measure(context: Context) -> Measured:
        steps = pool_steps(context)
        return Measured({pool: steps[pool][case][key] for pool in STEP_POOLS})
    return measure


def lwea_cuts_against_the_dense_reference(context: Context) -> Measured:
    """Cuts k = 2..30 of LWEA that differ from the dense reference's (N × N co-association), per step pool."""
    from benchmarks.runner import Case, compare

    values = {}
    with tempfile.TemporaryDirectory(prefix="lwec-targets-") as workdir:
        for pool in STEP_POOLS:
            ours, reference = (run_case(context, pool, f"pool:{pool}", name, 0, Path(workdir))
                               for name in ("project-lwea", "reference-lwea"))
            for result in (ours, reference):
                if "error" in result:
                    raise RuntimeError(f"{pool}: {result['error']}")
            text = compare(Case(pool, "", "", "project-lwea", 0, labels_path=ours["labels_path"]),
                           Case(pool, "", "", "reference-lwea", 0, labels_path=reference["labels_path"]))
            same, total = map(int, re.search(r"(\d+)/(\d+)", text).groups())
            values[pool] = float(total - same)
    return Measured(values, "cuts differing of 29")


def base_clusterings_20k(context: Context) -> Measured:
    with tempfile.TemporaryDirectory(prefix="lwec-targets-") as workdir:
        result = run_case(context, "blobs N=20,000 d=16", "-", "generate", 0, Path(workdir))
    if "error" in result:
        raise RuntimeError(result["error"])
    return Measured({"": result["cold_s"]})


def scale_case_10m(context: Context) -> dict:
    """ECI + LWGP k = 10 on the synthetic 10,000,000-object ensemble, M = 10 (one warm repeat)."""
    def measure() -> dict:
        with tempfile.TemporaryDirectory(prefix="lwec-targets-") as workdir:
            result = run_case(context, "synthetic N=10,000,000", "synthetic:10000000", "project-scale", 1,
                              Path(workdir))
        if "error" in result:
            raise RuntimeError(result["error"])
        return result
    return context.once("scale-10m", measure)


def eci_lwgp_10m_seconds(context: Context) -> Measured:
    result = scale_case_10m(context)
    return Measured({"": result["warm_s"]}, f"cold {result['cold_s']:.1f} s")


def eci_lwgp_10m_memory(context: Context) -> Measured:
    return Measured({"": scale_case_10m(context)["peak_mb"]})


def lwea_300k(context: Context) -> Measured:
    """Exact LWEA k = 10 on 300,000 synthetic objects (~300,000 microclusters): its process's peak memory."""
    from benchmarks.runner import HUGE_LWEA_SPEC

    with tempfile.TemporaryDirectory(prefix="lwec-targets-") as workdir:
        result = run_case(context, "synthetic N=300,000", HUGE_LWEA_SPEC, "lwea-at-scale", 0, Path(workdir))
    if "error" in result:
        return Measured({"refused": float("nan")}, result["error"][:120])
    return Measured({"": result["peak_mb"]}, f"{result['cold_s']:.0f} s, {result['microclusters']:,} microclusters")


# ------------------------------------------------------------------------------------------ library at 100k rows

def library_100k(context: Context) -> dict:
    """:func:`benchmarks.lwea_scale.alternated_pairs` at 100,000 rows, 12 pairs, in a fresh process."""
    def measure() -> dict:
        from benchmarks.lwea_scale import build_ensemble, pairs_in_child

        context.log(f"# LWEA and LWGP alternated on {LIBRARY_ROWS:,} rows, {LIBRARY_PAIRS} pairs")
        build_ensemble(cache_dir(), LIBRARY_ROWS)
        return pairs_in_child(cache_dir(), LIBRARY_ROWS, LIBRARY_PAIRS)
    return context.once("library-100k", measure)


def library_100k_ratio(context: Context) -> Measured:
    found = library_100k(context)
    return Measured({"": found["ratio"]}, f"LWEA {found['lwea_s']:.2f} s, LWGP {found['lwgp_s']:.2f} s, "
                                          f"{found['microclusters']:,} microclusters")


def library_100k_memory(context: Context) -> Measured:
    return Measured({"": library_100k(context)["peak_mb"]})


# ------------------------------------------------------------------------------------------------ the paper

def paper_pools(context: Context) -> Measured:
    """Cells of the paper's Tables (10 pools × LWEA, LWGP, EAC × NMI, ARI × best-k, true-k) outside their band."""
    from benchmarks import paper_pools as module
    from benchmarks.data import pools_dir

    context.log("# the paper's protocol on the ten pools (20 runs each)")
    cells = module.measure(pools_dir(), jobs=2)
    outside = [cell for cell in cells if not cell.within]
    usual = [cell for cell in cells if (cell.pool, cell.method, cell.metric, cell.criterion)
             not in module.KNOWN_DIFFERENCES]
    worst = max(usual, key=lambda cell: cell.difference)
    note = (f"of {len(cells)}; largest difference {worst.difference:.3f}: {worst.pool} {worst.method} "
            f"{worst.metric.upper()} {worst.criterion.replace('_', '-')}")
    if outside:
        note += "; outside: " + ", ".join(f"{c.pool} {c.method} {c.metric} {c.criterion}" for c in outside[:4])
    return Measured({"": float(len(outside))}, note)


# ------------------------------------------------------------------------------------------------ the battery

def battery_scores(context: Context, mix: str) -> list:
    """The battery's dev half scored with ``mix`` (seeds 0–4, M = 10, two processes): ``SetResult`` per set."""
    def measure() -> list:
        from benchmarks.battery import DEFAULT_SEEDS, run_battery
        from lwec_tasks.core.defaults import DEFAULT_ENSEMBLE_SIZE

        context.log(f"# battery, generators {mix}")
        return run_battery(battery_dir(), DEFAULT_SEEDS, mix, DEFAULT_ENSEMBLE_SIZE, jobs=2)
    return context.once(f"battery:{mix}", measure)


def run_default_mix() -> str:
    from lwec_tasks.core.mixes import RUN_DEFAULT_MIX, canonical_mix

    return canonical_mix(RUN_DEFAULT_MIX)


def battery_dev_half(context: Context) -> Measured:
    from benchmarks.battery import summary

    found = summary(battery_scores(context, run_default_mix()))
    return Measured({method: found[method]["ami"] for method in found}, f"run default {run_default_mix()}")


def battery_seed_sd(context: Context) -> Measured:
    from benchmarks.battery import summary

    found = summary(battery_scores(context, run_default_mix()))
    return Measured({method: found[method]["seed_sd"] for method in found})


def battery_held_out(context: Context) -> Measured:
    """Leave one data set out over the candidate mixes (:data:`benchmarks.battery_choice.CANDIDATE_MIXES` and the
    run default): the held-out mean AMI of each method."""
    from benchmarks.battery_choice import CANDIDATE_MIXES, candidate, leave_one_out
    from lwec_tasks.core.mixes import canonical_mix

    mixes = list(dict.fromkeys([run_default_mix(), *(canonical_mix(mix) for mix in CANDIDATE_MIXES)]))
    result = leave_one_out([candidate(mix, battery_scores(context, mix)) for mix in mixes])
    chosen = sorted(set(result["chosen_per_set"].values()), key=list(result["chosen_per_set"].values()).count)
    return Measured(dict(result["held_out"]), f"{len(mixes)} mixes; most chosen {chosen[-1]}")


# ----------------------------------------------------------------------------------------- mixed-type tables

def mixed_tables(context: Context) -> list[dict]:
    """The held-out mixed tables of :mod:`benchmarks.mixed_types`: a run's clustering (``"run"``) beside the
    baselines."""
    def measure() -> list[dict]:
        from benchmarks import mixed_types

        context.log("# mixed-type tables, held out")
        with contextlib.redirect_stdout(io.StringIO()):  # the module prints a JSON line per table
            return mixed_types.evaluate("held_out", {}, seed=0, jobs=1)
    return context.once("mixed-tables", measure)


def mixed_structured_nmi(context: Context) -> Measured:
    rows = [row for row in mixed_tables(context) if row["family"] == "structured"]
    worst = min(rows, key=lambda row: row["run"])
    return Measured({"lowest": worst["run"]},
                    f"{worst['table']}, whose Bayes classifier reaches {worst['bayes']:.3f}; {len(rows)} tables")


def mixed_structured_against_competent(context: Context) -> Measured:
    rows = [row for row in mixed_tables(context) if row["family"] == "structured"]
    gaps = {row["table"]: row["run"] - max(row["competent_plain"], row["competent_scaled"]) for row in rows}
    worst = min(gaps, key=gaps.get)
    return Measured({"lowest": gaps[worst]}, worst)


def mixed_unstructured(context: Context) -> Measured:
    rows = [row for row in mixed_tables(context) if row["family"] == "unstructured"]
    gaps = {row["table"]: row["run"] - row["numeric_only"] for row in rows}
    worst = min(gaps, key=gaps.get)
    return Measured({"lowest": gaps[worst]}, worst)


# ------------------------------------------------------------------------------------------------ lwec demo

def demo_seconds(context: Context) -> Measured:
    """``python -m lwec_tasks demo`` start to exit in a fresh folder, one ``PREFECT_HOME`` kept: one run to warm
    it (not counted), then the median of :data:`DEMO_RUNS`."""
    seconds = []
    with tempfile.TemporaryDirectory(prefix="lwec-targets-demo-") as folder:
        env = {**os.environ, "PREFECT_HOME": str(Path(folder, "prefect")), "PYTHONPATH": str(ROOT)}
        for key in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI"):
            env.pop(key, None)
        for run in range(DEMO_RUNS + 1):
            context.log(f"# lwec demo, run {run + 1} of {DEMO_RUNS + 1}{' (warm-up)' if run == 0 else ''}")
            started = time.perf_counter()
            completed = subprocess.run([sys.executable, "-m", "lwec_tasks", "demo"], cwd=folder, env=env,
                                       capture_output=True, text=True)
            if completed.returncode != 0:
                raise RuntimeError((completed.stderr.strip().splitlines() or ["lwec demo failed"])[-1])
            if run:
                seconds.append(time.perf_counter() - started)
    return Measured({"": statistics.median(seconds)}, "runs " + ", ".join(f"{s:.1f}" for s in seconds))


# --------------------------------------------------------------------------------- automatic k, held out

def auto_k_held_out(context: Context) -> dict[str, dict[str, float]]:
    """``python -m benchmarks.auto_k_datasets --seeds 3`` (eight data sets the criterion never saw, the whole
    flow): per method, the mean over data sets of NMI(auto k) − NMI(true k) and the worst data set's."""
    def measure() -> dict:
        with tempfile.TemporaryDirectory(prefix="lwec-targets-") as folder:
            output = Path(folder, "auto_k.json")
            context.log("# automatic k on eight held-out data sets, the whole flow, seeds 0-2")
            completed = subprocess.run([sys.executable, "-m", "benchmarks.auto_k_datasets", "--seeds", "3",
                                        "--json", str(output)], cwd=ROOT, capture_output=True, text=True,
                                       env={**os.environ, "PYTHONPATH": str(ROOT)})
            if completed.returncode != 0:
                raise RuntimeError((completed.stderr.strip().splitlines() or ["failed"])[-1])
            rows = json.loads(output.read_text())
        found = {}
        for method in ("LWEA", "LWGP"):
            per_set: dict[str, list[float]] = {}
            for row in rows:
                if row["method"] == method:
                    per_set.setdefault(row["data set"], []).append(row["difference"])
            means = {name: statistics.mean(values) for name, values in per_set.items()}
            worst = min(means, key=means.get)
            found[method] = {"mean": statistics.mean(means.values()), "worst": means[worst], "worst_set": worst}
        return found
    return context.once("auto-k-held-out", measure)


def auto_k_held_out_mean(context: Context) -> Measured:
    found = auto_k_held_out(context)
    return Measured({method: figures["mean"] for method, figures in found.items()})


def auto_k_held_out_worst(context: Context) -> Measured:
    found = auto_k_held_out(context)
    return Measured({method: figures["worst"] for method, figures in found.items()},
                    ", ".join(sorted({figures["worst_set"] for figures in found.values()})))
