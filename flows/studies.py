"""The paper's studies as a Prefect flow.

    for each pool: reproduce (all methods) → θ sweep → ensemble-size sweep
    then: significance tables from the reproductions → CSV/JSON/figures → markdown artifact

Tasks take file paths and plain parameters (never arrays) and return small
JSON-able rows, so nothing large is hashed or persisted by Prefect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import Field

from lwec_tasks.experiments.pools import load_pool
from lwec_tasks.experiments.reproduce import reproduce
from lwec_tasks.experiments.studies import (
    PAPER_SIZES,
    PAPER_THETAS,
    ensemble_size_sweep,
    plot_sweep,
    significance,
    tally_markdown,
    theta_sweep,
    write_rows,
)

FLOW_NAME = "lwec-paper-studies"


@task(cache_policy=NO_CACHE)
def reproduce_pool(pool_path: str, methods: list[str], runs: int, ensemble_size: int, theta: float,
                   seed: int, ks: str, out_dir: str) -> dict:
    """The comparison protocol on one pool; also writes ``<out>/reproduce_<name>.json``."""
    pool = load_pool(pool_path)
    result = reproduce(pool, runs=runs, ensemble_size=ensemble_size, theta=theta, seed=seed,
                       methods=methods, ks=ks)
    path = Path(out_dir, f"reproduce_{pool.name}.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    get_run_logger().info("%s: wrote %s", pool.name, path)
    return result


@task(cache_policy=NO_CACHE)
def sweep_theta(pool_path: str, thetas: list[float], methods: list[str], runs: int, ensemble_size: int,
                seed: int, ks: str) -> list[dict]:
    return theta_sweep(load_pool(pool_path), thetas, methods=methods, runs=runs,
                       ensemble_size=ensemble_size, seed=seed, ks=ks)


@task(cache_policy=NO_CACHE)
def sweep_ensemble_size(pool_path: str, sizes: list[int], methods: list[str], runs: int, theta: float,
                        seed: int, ks: str) -> list[dict]:
    return ensemble_size_sweep(load_pool(pool_path), sizes, methods=methods, runs=runs, theta=theta,
                               seed=seed, ks=ks)


@task(cache_policy=NO_CACHE)
def write_outputs(out_dir: str, theta_rows: list[dict], size_rows: list[dict], results: list[dict]) -> str:
    """CSV/JSON/figures for every study that ran; returns the markdown summary."""
    sections = []
    if theta_rows:
        write_rows(theta_rows, out_dir, "theta_sweep")
        plot_sweep(theta_rows, "theta", Path(out_dir, "nmi_vs_theta.png"), log_x=True)
        sections.append(f"θ sweep: {len(theta_rows)} rows → theta_sweep.csv, nmi_vs_theta.png")
    if size_rows:
        write_rows(size_rows, out_dir, "ensemble_size_sweep")
        plot_sweep(size_rows, "ensemble_size", Path(out_dir, "nmi_vs_ensemble_size.png"))
        sections.append(f"ensemble-size sweep: {len(size_rows)} rows → ensemble_size_sweep.csv, "
                        "nmi_vs_ensemble_size.png")
    if results:
        tests, tally = significance(results)
        write_rows(tests, out_dir, "significance_tests")
        write_rows(tally, out_dir, "significance_tally")
        if tally:
            sections.append("Significance (t-test, p < 0.05), counts (better/comparable/worse):\n\n"
                            + tally_markdown(tally, "nmi") + "\n\n" + tally_markdown(tally, "ari"))
    return "\n\n".join(sections) or "nothing to report"


@flow(name=FLOW_NAME, description="The LWEA paper's studies: method comparison with t-tests, θ and M sweeps.")
def paper_studies(
    pools: Annotated[list[str], Field(description="Pool files (.mat as published by the paper's authors, .npz, .csv)")],
    out_dir: Annotated[str, Field(description="Directory for CSV, JSON and figures")],
    methods: Annotated[list[str], Field(description="Methods compared (paper names)")] = [  # noqa: B006
        "LWEA", "LWGP", "EAC", "WEAC", "HBGF", "CSPA", "MCLA", "SEC", "KCC"],
    runs: Annotated[int, Field(ge=2, description="Runs per setting (paper: 100 for the comparison, 20 for sweeps)")] = 20,
    ensemble_size: Annotated[int, Field(ge=1, description="Ensemble size M")] = 10,
    theta: Annotated[float, Field(gt=0, description="θ for the comparison and the M sweep")] = 0.4,
    seed: Annotated[int, Field(description="Master seed")] = 0,
    ks: Annotated[str, Field(description="Numbers of clusters, e.g. 2..30")] = "2..30",
    compare_methods: Annotated[bool, Field(description="Run the comparison and significance tables")] = True,
    thetas: Annotated[list[float], Field(description="θ values of the sweep; empty to skip")] = list(PAPER_THETAS),  # noqa: B006
    sizes: Annotated[list[int], Field(description="Ensemble sizes of the sweep; empty to skip")] = list(PAPER_SIZES),  # noqa: B006
    sweep_methods: Annotated[list[str], Field(description="Methods in the sweeps")] = ["LWEA", "LWGP"],  # noqa: B006
) -> str:
    logger = get_run_logger()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    results, theta_rows, size_rows = [], [], []
    for pool_path in pools:
        if compare_methods:
            results.append(reproduce_pool(pool_path, methods, runs, ensemble_size, theta, seed, ks, out_dir))
        if thetas:
            theta_rows += sweep_theta(pool_path, thetas, sweep_methods, runs, ensemble_size, seed, ks)
        if sizes:
            size_rows += sweep_ensemble_size(pool_path, sizes, sweep_methods, runs, theta, seed, ks)
        logger.info("finished %s", pool_path)
    summary = write_outputs(out_dir, theta_rows, size_rows, results)
    create_markdown_artifact(markdown=f"# LWEA paper studies\n\n{summary}", key="lwec-paper-studies",
                             description="Results of the paper's studies")
    return summary


if __name__ == "__main__":
    import sys

    paper_studies(pools=sys.argv[1:-1], out_dir=sys.argv[-1])
