"""LWEA, LWGP and EAC on the authors' pools are within 0.03 of the paper's Tables.

The project's one comparison with the paper's Tables (../shared/data/paper_scores.csv).
20 runs per pool (the paper: 100), M = 10, θ = 0.4, ks = 2..30, seed 0 — the
same settings as the table in REPRODUCTION.md. The ten pools run once, in two
worker processes with one thread each, and every (pool, method, metric,
criterion) cell is its own test case.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from helpers.pools import pools_dir
from helpers.workers import computed_once

pytestmark = pytest.mark.pools

POOLS = ("VS", "Semeion", "SPF", "MF", "IS", "MNIST", "ODR", "LS", "PD", "LR")
METHODS = ("LWEA", "LWGP", "EAC")
CELLS = [(m, c) for m in ("nmi", "ari") for c in ("best_k", "true_k")]
TOLERANCE = 0.03

# Cells that differ by more than the tolerance, why (see REPRODUCTION.md), and
# the band they are checked against instead.
KNOWN_DIFFERENCES: dict[tuple[str, str, str, str], tuple[float, str]] = {
    ("LR", "EAC", "nmi", "best_k"): (
        0.07,
        "EAC on LR keeps improving past k = 30 (its best-k is always 30 here); the paper's "
        "0.431 is reached near k = 100, so its EAC best-k was likely searched over a wider range",
    ),
}


def _single_thread() -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    try:
        import numba

        numba.set_num_threads(1)
    except (ImportError, ValueError):
        pass


def _reproduce_one(path: str) -> dict:
    from lwec_tasks.experiments.pools import load_pool
    from lwec_tasks.experiments.reproduce import reproduce

    # The Tables' cells are best-k and true-k only; automatic k is checked on its own (tests/core/test_auto_k.py).
    return reproduce(load_pool(path), runs=20, ensemble_size=10, theta=0.4, seed=0,
                     methods=METHODS, ks=range(2, 31), auto_k=False)


def _reproduce_all(paths: list[str]) -> dict[str, dict]:
    # Largest pools first so the two workers finish together.
    order = sorted(paths, key=lambda p: -Path(p).stat().st_size)
    # "spawn": forking a process that already runs OpenMP (scikit-learn, numba) is unsafe.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context, initializer=_single_thread) as executor:
        results = dict(zip(order, executor.map(_reproduce_one, order)))
    return {r["dataset"]: r for r in results.values()}


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> dict[str, dict]:
    directory = pools_dir()
    if directory is None or not all((directory / f"bc_pool_{p}.mat").exists() for p in POOLS):
        pytest.skip("the authors' pools are absent: set LWEC_POOLS_DIR or put bc_pool_*.mat in "
                    "../shared/data/pools")
    paths = [str(directory / f"bc_pool_{p}.mat") for p in POOLS]
    return computed_once(tmp_path_factory, "pools-reproduction", lambda: _reproduce_all(paths))


@pytest.fixture(scope="module")
def paper() -> dict:
    from lwec_tasks.experiments.paper_tables import load_paper_scores

    directory = pools_dir()
    path = directory.parent / "paper_scores.csv" if directory else None
    if path is None or not path.exists():
        pytest.skip("paper_scores.csv not found next to the pools folder")
    return load_paper_scores(path)


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("metric", "criterion"), CELLS)
def test_within_tolerance_of_the_paper(ours, paper, pool, method, metric, criterion):
    mean = ours[pool]["methods"][method][metric][criterion]["mean"]
    published = paper[(pool, method, metric)][criterion]["mean"]
    bound, _reason = KNOWN_DIFFERENCES.get((pool, method, metric, criterion), (TOLERANCE, ""))
    assert abs(mean - published) <= bound, f"{pool} {method} {metric} {criterion}: {mean:.3f} vs {published:.3f}"


def test_known_differences_still_differ(ours, paper):
    """A known difference that disappeared should be removed from the list (and REPRODUCTION.md)."""
    for (pool, method, metric, criterion) in KNOWN_DIFFERENCES:
        mean = ours[pool]["methods"][method][metric][criterion]["mean"]
        published = paper[(pool, method, metric)][criterion]["mean"]
        assert abs(mean - published) > TOLERANCE, (pool, method, metric, criterion)
