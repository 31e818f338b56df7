"""The paper's studies as a Prefect flow.

    for each pool: reproduce (all methods) → θ sweep → ensemble-size sweep
    then: significance tables from the reproductions → CSV/JSON/figures → markdown artifact

The work is done by :mod:`lwec_tasks.experiments.studies` — the same functions
``lwec study`` calls, so the flow and the CLI write the same files (CSV/JSON
rows, NMI and ARI figures, significance tables). The tasks here are thin
wrappers that take file paths and plain numbers (never arrays).

**Resuming.** The per-pool tasks persist their results under
``<out_dir>/.prefect-results`` and are cached on their inputs and their source
(``INPUTS + TASK_SOURCE``). Running the flow again with the same parameters —
after a failure or an interruption hours in — serves the pools already done
from that cache and computes only the rest. A task's inputs include the pool
file's size and modification time, so a changed pool is recomputed; delete the
folder to recompute everything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE
from pydantic import Field

from lwec_tasks.core.eci import DEFAULT_THETA
from lwec_tasks.experiments.studies import (
    PAPER_SIZES,
    PAPER_THETAS,
    reproduce_to_file,
    sweep_pool,
    write_significance,
    write_sweep,
)

FLOW_NAME = "lwec-paper-studies"
#: Folder under the output directory holding the per-pool tasks' persisted results (and cache records).
RESULTS_DIR = ".prefect-results"
#: Cache key of the per-pool tasks: their inputs and their source code (not the flow run, so reruns hit it).
POOL_CACHE_POLICY = INPUTS + TASK_SOURCE


def pool_file_version(pool_path: str) -> str:
    """Size and modification time of the pool file, so a changed file gets a new cache key."""
    try:
        status = os.stat(pool_path)
    except OSError:
        return "missing"
    return f"{status.st_size}-{status.st_mtime_ns}"


@task(cache_policy=POOL_CACHE_POLICY, persist_result=True)
def reproduce_pool(pool_path: str, pool_version: str, methods: list[str], runs: int, ensemble_size: int,
                   theta: float, seed: int, ks: str, out_dir: str) -> str:
    """The comparison protocol on one pool; writes and returns ``<out>/reproduce_<name>.json``."""
    path = reproduce_to_file(pool_path, out_dir, methods=methods, runs=runs, ensemble_size=ensemble_size,
                             theta=theta, seed=seed, ks=ks)
    get_run_logger().info("%s: wrote %s", pool_path, path)
    return str(path)


@task(cache_policy=POOL_CACHE_POLICY, persist_result=True)
def sweep_theta(pool_path: str, pool_version: str, thetas: list[float], methods: list[str], runs: int,
                ensemble_size: int, seed: int, ks: str) -> list[dict]:
    """θ-sweep rows of one pool."""
    return sweep_pool("theta", pool_path, thetas, methods=methods, runs=runs, ensemble_size=ensemble_size,
                      seed=seed, ks=ks)


@task(cache_policy=POOL_CACHE_POLICY, persist_result=True)
def sweep_ensemble_size(pool_path: str, pool_version: str, sizes: list[int], methods: list[str], runs: int,
                        theta: float, seed: int, ks: str) -> list[dict]:
    """Ensemble-size-sweep rows of one pool."""
    return sweep_pool("ensemble_size", pool_path, sizes, methods=methods, runs=runs, theta=theta, seed=seed,
                      ks=ks)


@task(cache_policy=NO_CACHE)
def write_outputs(out_dir: str, theta_rows: list[dict], size_rows: list[dict], result_paths: list[str]) -> str:
    """CSV/JSON/figures for every study that ran; returns the markdown summary."""
    sections = [write_sweep(sweep, rows, out_dir).markdown
                for sweep, rows in (("theta", theta_rows), ("ensemble_size", size_rows)) if rows]
    if result_paths:
        significance = write_significance(result_paths, out_dir)
        if significance.rows:
            sections.append("Significance (t-test, p < 0.05), counts (better/comparable/worse):\n\n"
                            + significance.markdown)
    return "\n\n".join(sections) or "nothing to report"


@flow(name=FLOW_NAME, description="The LWEA paper's studies: method comparison with t-tests, θ and M sweeps.")
def paper_studies(
    pools: Annotated[list[str], Field(description="Pool files (.mat as published by the paper's authors, .npz, .csv)")],
    out_dir: Annotated[str, Field(description="Directory for CSV, JSON and figures")],
    methods: Annotated[list[str], Field(description="Methods compared (paper names)")] = [  # noqa: B006
        "LWEA", "LWGP", "EAC", "WEAC", "HBGF", "CSPA", "MCLA", "SEC", "KCC"],
    runs: Annotated[int, Field(
        ge=2, description="Runs per setting (paper: 100 for the comparison, 20 for sweeps)")] = 20,
    ensemble_size: Annotated[int, Field(ge=1, description="Ensemble size M")] = 10,
    theta: Annotated[float, Field(gt=0, description="θ for the comparison and the M sweep")] = DEFAULT_THETA,
    seed: Annotated[int, Field(description="Master seed")] = 0,
    ks: Annotated[str, Field(description="Numbers of clusters, e.g. 2..30")] = "2..30",
    compare_methods: Annotated[bool, Field(description="Run the comparison and significance tables")] = True,
    thetas: Annotated[list[float], Field(description="θ values of the sweep; empty to skip")] = list(PAPER_THETAS),  # noqa: B006
    sizes: Annotated[list[int], Field(description="Ensemble sizes of the sweep; empty to skip")] = list(PAPER_SIZES),  # noqa: B006
    sweep_methods: Annotated[list[str], Field(description="Methods in the sweeps")] = ["LWEA", "LWGP"],  # noqa: B006
) -> str:
    logger = get_run_logger()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    # Per-pool results live beside the outputs, so a rerun into the same directory resumes.
    persisted = {"result_storage": Path(out_dir, RESULTS_DIR).resolve()}
    reproduce_task = reproduce_pool.with_options(**persisted)
    theta_task = sweep_theta.with_options(**persisted)
    size_task = sweep_ensemble_size.with_options(**persisted)
    result_paths, theta_rows, size_rows = [], [], []
    for pool_path in pools:
        version = pool_file_version(pool_path)
        if compare_methods:
            result_paths.append(reproduce_task(pool_path, version, methods, runs, ensemble_size, theta, seed, ks,
                                               out_dir))
        if thetas:
            theta_rows += theta_task(pool_path, version, thetas, sweep_methods, runs, ensemble_size, seed, ks)
        if sizes:
            size_rows += size_task(pool_path, version, sizes, sweep_methods, runs, theta, seed, ks)
        logger.info("finished %s", pool_path)
    summary = write_outputs(out_dir, theta_rows, size_rows, result_paths)
    create_markdown_artifact(markdown=f"# LWEA paper studies\n\n{summary}", key="lwec-paper-studies",
                             description="Results of the paper's studies")
    return summary


if __name__ == "__main__":
    import sys

    paper_studies(pools=sys.argv[1:-1], out_dir=sys.argv[-1])
