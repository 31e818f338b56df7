"""Every figure the project has promised, as the guard measures it (:data:`TARGETS`, in the order they run:
the cheap ones first, the whole runs at 10M rows last).

Each record names its bound as promised, the measure function (:mod:`benchmarks.target_measures`, or
:mod:`benchmarks.target_runs` for whole runs against ``--database-url``), its estimated minutes on the
project's 2-core machine and what it needs. Targets sharing a measurement (``shares``) run it once.
"""

from __future__ import annotations

import socket

from benchmarks import target_measures as measures
from benchmarks import target_runs as runs
from benchmarks.target_table import Context, Need, Target, at_least, at_most

# ------------------------------------------------------------------------------------------------------ needs


def _database(context: Context) -> str | None:
    return None if context.database_url else "needs --database-url"


def _step_pools(context: Context) -> str | None:
    from benchmarks.data import pool_available

    absent = [pool for pool in measures.STEP_POOLS if not pool_available(pool)]
    return f"pool {', '.join(absent)} absent (LWEC_POOLS_DIR or ../shared/data/pools)" if absent else None


def _paper(context: Context) -> str | None:
    from benchmarks.data import pools_dir
    from benchmarks.paper_pools import missing_inputs

    return missing_inputs(pools_dir())


def _battery(context: Context) -> str | None:
    folder = measures.battery_dir()
    if not folder.is_dir() or not any(folder.rglob("*.data.gz")):
        return f"no battery data sets in {folder} (LWEC_BATTERY_DIR)"
    return None


def _free_port(context: Context) -> str | None:
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
    except OSError as error:
        return f"no free loopback port for a Prefect server: {error}"
    return None


def free_memory(gigabytes: float) -> Need:
    """Needs ``gigabytes`` of memory available now (psutil)."""
    def check(context: Context) -> str | None:
        import psutil

        available = psutil.virtual_memory().available / 2**30
        return None if available >= gigabytes else f"needs {gigabytes:g} GB free, {available:.1f} GB available"
    return Need(f"{gigabytes:g} GB free", check)


DATABASE = Need("--database-url", _database)
STEP_POOL_FILES = Need("pools LR, PD", _step_pools)
PAPER_INPUTS = Need("ten pools + paper_scores.csv", _paper)
BATTERY = Need("battery dev half", _battery)
PREFECT_SERVER = Need("a Prefect server (started on a free port)", _free_port)

SECONDS, RATIO, MB, SCORE, DIFFERENCE, PERCENT, COUNT = (
    "{:.3f} s", "{:.2f}×", "{:,.0f} MB", "{:.3f}", "{:+.3f}", "{:.1f} %", "{:.0f}")

TARGETS: list[Target] = [
    # -------------------------------------------------------------- cheap: consensus steps, library, demo
    Target("eci-pools", "ECI on the pools LR and PD (warm)", "ECI ≤ 50 ms on LR and PD", at_most(0.05),
           measures.step_figure("project-eci"), 1, (STEP_POOL_FILES,), quick=True, figure_format=SECONDS,
           shares="pool-steps"),
    Target("lwea-pools", "LWEA, all cuts k = 2..30 (warm)", "LWEA all cuts ≤ 1.0 s on LR and PD", at_most(1.0),
           measures.step_figure("project-lwea"), 1, (STEP_POOL_FILES,), quick=True, figure_format=SECONDS,
           shares="pool-steps"),
    Target("lwea-pools-memory", "LWEA's process peak on the pools", "LWEA ≤ 1.5 GB on LR and PD", at_most(1500),
           measures.step_figure("project-lwea", "peak_mb"), 1, (STEP_POOL_FILES,), quick=True, figure_format=MB,
           shares="pool-steps"),
    Target("lwgp-pools", "LWGP, all k = 2..30 (warm)", "LWGP all k ≤ 3 s on LR and PD", at_most(3.0),
           measures.step_figure("project-lwgp"), 1, (STEP_POOL_FILES,), quick=True, figure_format=SECONDS,
           shares="pool-steps"),
    Target("lwgp-pools-one-k", "LWGP, k = 10 (warm)", "LWGP one k ≤ 0.3 s on LR and PD", at_most(0.3),
           measures.step_figure("project-lwgp-k10"), 1, (STEP_POOL_FILES,), quick=True, figure_format=SECONDS,
           shares="pool-steps"),
    Target("base-clusterings-20k", "ten base clusterings of 20,000 × 16 blobs (cold)",
           "base clusterings N = 20,000, d = 16, M = 10 ≤ 10 s", at_most(10.0), measures.base_clusterings_20k,
           0.2, quick=True, figure_format=SECONDS),
    Target("mixed-structured", "held-out structured mixed tables, lowest NMI (the run's weighting)",
           "structured mixed tables NMI ≥ 0.80", at_least(0.80), measures.mixed_structured_nmi, 1,
           quick=True, figure_format=SCORE, shares="mixed-tables"),
    Target("mixed-vs-competent", "held-out structured tables, lowest NMI − the competent pipeline's best",
           "structured mixed tables not below the competent pipeline", at_least(0.0),
           measures.mixed_structured_against_competent, 1, quick=True, figure_format=DIFFERENCE,
           shares="mixed-tables"),
    Target("mixed-unstructured", "held-out unstructured tables, lowest NMI − lwec on the numerics alone",
           "unstructured mixed tables ≤ 0.02 under numerics alone", at_least(-0.02), measures.mixed_unstructured,
           1, quick=True, figure_format=DIFFERENCE, shares="mixed-tables"),
    Target("demo", "`lwec demo` start to exit, warm, median of 3", "`lwec demo` ≤ 10 s (warm)", at_most(10.0),
           measures.demo_seconds, 1, quick=True, figure_format="{:.1f} s"),
    # -------------------------------------------------------------- minutes: library, paper, battery
    Target("lwea-identical", "LWEA cuts k = 2..30 differing from the dense reference",
           "LWEA identical to the dense reference on LR and PD", at_most(0),
           measures.lwea_cuts_against_the_dense_reference, 1.5, (STEP_POOL_FILES, free_memory(8)), figure_format=COUNT),
    Target("library-100k", "LWEA / LWGP at 100k rows (82k microclusters), 12 alternated pairs",
           "LWEA ≤ 3× LWGP at 100k rows", at_most(3.0), measures.library_100k_ratio, 2, figure_format=RATIO,
           shares="library-100k"),
    Target("library-100k-memory", "peak of the process running both at 100k rows", "≤ 3 GB at 100k rows",
           at_most(3000), measures.library_100k_memory, 2, figure_format=MB, shares="library-100k"),
    Target("paper-pools", "cells of the paper's Tables (LWEA, LWGP, EAC; 10 pools; 20 runs) outside 0.03",
           "the paper's reproduction within 0.03 (known differences within their band)", at_most(0),
           measures.paper_pools, 2, (PAPER_INPUTS,), figure_format="{:.0f} cells"),
    Target("battery-dev-half", "mean AMI on the battery's dev half, run default mix, seeds 0–4",
           f"≥ max(GIc, Genie G0.3) = {measures.BATTERY_BAR:.3f}", at_least(measures.BATTERY_BAR),
           measures.battery_dev_half, 1.5, (BATTERY,), figure_format=SCORE, shares="battery"),
    Target("battery-seed-sd", "mean seed SD of AMI on the dev half, run default mix", "seed SD ≤ 0.03",
           at_most(0.03), measures.battery_seed_sd, 1.5, (BATTERY,), figure_format=SCORE, shares="battery"),
    Target("eci-lwgp-10m", "ECI + LWGP k = 10, N = 10⁷, M = 10 (warm)", "≤ 60 s at N = 10⁷", at_most(60.0),
           measures.eci_lwgp_10m_seconds, 3, (free_memory(10),), figure_format="{:.1f} s", shares="scale-10m"),
    Target("eci-lwgp-10m-memory", "ECI + LWGP at N = 10⁷: the process's peak", "≤ 6 GB at N = 10⁷",
           at_most(6000), measures.eci_lwgp_10m_memory, 3, (free_memory(10),), figure_format=MB,
           shares="scale-10m"),
    Target("lwea-300k", "exact LWEA k = 10 on 300,000 synthetic rows (~300k microclusters): peak",
           "exact LWEA at any scale: no refusal, ≤ 1 GB at 300k microclusters", at_most(1000), measures.lwea_300k,
           4, figure_format=MB),
    Target("auto-k-held-out", "NMI(auto k) − NMI(true k), mean over 8 data sets never tuned on, whole flow",
           "automatic k held out: mean within 0.01", at_least(-0.01), measures.auto_k_held_out_mean, 6,
           figure_format=DIFFERENCE, shares="auto-k-held-out"),
    Target("auto-k-held-out-worst", "the same, worst data set", "automatic k held out: no data set > 0.05 below",
           at_least(-0.05), measures.auto_k_held_out_worst, 6, figure_format=DIFFERENCE,
           shares="auto-k-held-out"),
    Target("battery-held-out", "mean AMI held out: mix chosen leaving one data set out, 24 candidate mixes",
           f"≥ max(GIc, Genie G0.3) = {measures.BATTERY_BAR:.3f} held out", at_least(measures.BATTERY_BAR),
           measures.battery_held_out, 25, (BATTERY,), figure_format=SCORE),
    # -------------------------------------------------------------- whole runs against the database
    Target("auto-k-share-1m", "choosing k in `lwec run -k auto`, 1M rows: share of the run",
           "automatic k ≤ 30 % of the flow", at_most(30.0), runs.auto_k_share_1m, 1.5, (DATABASE,),
           figure_format=PERCENT),
    Target("blobs-1m-nmi", "NMI LWEA − NMI LWGP, `lwec run` on 1M blobs", "LWEA NMI ≥ LWGP's − 0.02",
           at_least(-0.02), runs.blobs_1m_nmi_gap, 3, (DATABASE,), figure_format=DIFFERENCE, shares="blobs-1m"),
    Target("blobs-1m-auc", "row confidence ROC AUC (label agrees with its cluster's majority truth), 1M blobs",
           "ROC AUC ≥ 0.80 for both methods", at_least(0.80), runs.blobs_1m_figure("auc"), 3, (DATABASE,),
           figure_format="{:.4f}", shares="blobs-1m"),
    Target("blobs-1m-ece", "row confidence, ten-bin expected calibration error, 1M blobs",
           "ECE ≤ 0.05 for both methods", at_most(0.05), runs.blobs_1m_figure("ece"), 3, (DATABASE,),
           figure_format="{:.4f}", shares="blobs-1m"),
    Target("served-1m", "a served deployment's flow run / the competent script, 1M rows, 5 alternated pairs",
           "served flow run ≤ 2× the script", at_most(2.0), runs.served_1m, 4, (DATABASE, PREFECT_SERVER),
           figure_format=RATIO),
    Target("dask-2m", "Dask wall / in-process wall, the flow on 2M rows, median of 3 alternated pairs",
           "Dask ≤ 1.3× in-process", at_most(1.3), runs.dask_wall, 13, (DATABASE,),
           figure_format=RATIO, shares="dask-2m"),
    Target("dask-2m-memory", "Dask flow-process peak / in-process peak, 2M rows, median of 3 pairs",
           "Dask flow peak ≤ 0.40×", at_most(0.40), runs.dask_peak, 13, (DATABASE,),
           figure_format=RATIO, shares="dask-2m"),
    Target("competent-10m-default", "`lwec run` (run default mix) / the competent script, 10M rows, 3 pairs",
           "default run ≤ 1.5× the script", at_most(1.5), runs.whole_run_ratio("lwgp default", "script"), 14,
           (DATABASE,), figure_format=RATIO, shares="whole-10m"),
    Target("competent-10m-kmeans", "`lwec run --generators kmeans` / the script, 10M rows, 3 pairs",
           "`--generators kmeans` ≤ 1.25× the script", at_most(1.25), runs.whole_run_ratio("lwgp kmeans", "script"),
           14, (DATABASE,), figure_format=RATIO, shares="whole-10m"),
    Target("lwea-lwgp-10m", "whole `lwec run --method lwea` / `--method lwgp`, run default mix, 10M rows",
           "LWEA ≤ 1.5× LWGP whole run", at_most(1.5), runs.whole_run_ratio("lwea default", "lwgp default"), 14,
           (DATABASE,), figure_format=RATIO, shares="whole-10m"),
    Target("mixed-cost-10m", "`lwec run` on 12 numeric + 4 text/boolean columns / on its 12 numerics, 10M rows, "
           "3 alternated pairs", "mixed table ≤ 1.3× its numeric-only run", at_most(1.3), runs.mixed_cost_10m, 15,
           (DATABASE, PREFECT_SERVER), figure_format=RATIO),
    Target("evidence-share-10m", "evidence stage (row confidence, k curve) / whole run, 10M rows",
           "evidence within 10 % of a 10M run", at_most(10.0), runs.evidence_share_10m, 14, (DATABASE,),
           figure_format=PERCENT, shares="whole-10m"),
]
