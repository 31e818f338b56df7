"""The paper's reproduction on the authors' ten pools, compared cell by cell with the published Tables.

    python -m benchmarks.paper_pools [--jobs 2]

The protocol of REPRODUCTION.md's table: 20 runs per pool, M = 10, θ = 0.4, k = 2..30, seed 0, methods
LWEA, LWGP and EAC (``lwec_tasks.experiments.reproduce``; automatic k left out). Every (pool, method,
metric, criterion) cell's mean is compared with ``paper_scores.csv`` (next to the pools folder): within
:data:`TOLERANCE`, or within its own band for the :data:`KNOWN_DIFFERENCES`. About 1.5 minutes on two cores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

POOLS = ("VS", "Semeion", "SPF", "MF", "IS", "MNIST", "ODR", "LS", "PD", "LR")
METHODS = ("LWEA", "LWGP", "EAC")
CELLS = tuple((metric, criterion) for metric in ("nmi", "ari") for criterion in ("best_k", "true_k"))
TOLERANCE = 0.03
#: Cells known to differ by more than the tolerance (REPRODUCTION.md says why), each with its own band.
KNOWN_DIFFERENCES: dict[tuple[str, str, str, str], float] = {
    # EAC on LR keeps improving past k = 30; the paper's best-k was likely searched over a wider range.
    ("LR", "EAC", "nmi", "best_k"): 0.07,
}


@dataclass(frozen=True)
class CellComparison:
    """One cell: our mean, the paper's, and the band it must lie within."""

    pool: str
    method: str
    metric: str
    criterion: str
    ours: float
    paper: float
    band: float

    @property
    def difference(self) -> float:
        return abs(self.ours - self.paper)

    @property
    def within(self) -> bool:
        return self.difference <= self.band


def paper_scores_path(pools: Path) -> Path:
    return pools.parent / "paper_scores.csv"


def missing_inputs(pools: Path | None) -> str | None:
    """Why the comparison cannot run (no pools folder, a pool or paper_scores.csv absent), or None."""
    if pools is None:
        return "the authors' pools are absent (LWEC_POOLS_DIR or ../shared/data/pools)"
    absent = [name for name in POOLS if not (pools / f"bc_pool_{name}.mat").exists()]
    if absent:
        return f"pools {', '.join(absent)} absent from {pools}"
    if not paper_scores_path(pools).exists():
        return f"{paper_scores_path(pools)} is absent"
    return None


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

    return reproduce(load_pool(path), runs=20, ensemble_size=10, theta=0.4, seed=0, methods=METHODS,
                     ks=range(2, 31), auto_k=False)


def reproduce_pools(pools: Path, jobs: int = 2) -> dict[str, dict]:
    """Pool name → the ``reproduce`` summary, the pools spread over ``jobs`` one-thread processes."""
    paths = sorted((str(pools / f"bc_pool_{name}.mat") for name in POOLS), key=lambda p: -Path(p).stat().st_size)
    # "spawn": forking a process that already runs OpenMP (scikit-learn, numba) is unsafe.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_single_thread) as executor:
        results = list(executor.map(_reproduce_one, paths))
    return {result["dataset"]: result for result in results}


def compare(ours: dict[str, dict], paper: dict) -> list[CellComparison]:
    """Every (pool, method, metric, criterion) cell against the paper's (``load_paper_scores``' mapping)."""
    cells = []
    for pool in POOLS:
        for method in METHODS:
            for metric, criterion in CELLS:
                cells.append(CellComparison(
                    pool, method, metric, criterion, ours[pool]["methods"][method][metric][criterion]["mean"],
                    paper[(pool, method, metric)][criterion]["mean"],
                    KNOWN_DIFFERENCES.get((pool, method, metric, criterion), TOLERANCE)))
    return cells


def measure(pools: Path, jobs: int = 2) -> list[CellComparison]:
    """Run the protocol on the ten pools and compare every cell with the paper."""
    from lwec_tasks.experiments.paper_tables import load_paper_scores

    return compare(reproduce_pools(pools, jobs), load_paper_scores(paper_scores_path(pools)))


def main(argv: list[str] | None = None) -> int:
    from benchmarks.data import pools_dir

    parser = argparse.ArgumentParser(prog="python -m benchmarks.paper_pools", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="pools reproduced at once (default 2)")
    args = parser.parse_args(argv)
    pools = pools_dir()
    reason = missing_inputs(pools)
    if reason:
        print(f"python -m benchmarks.paper_pools: {reason}", file=sys.stderr)
        return 2
    cells = measure(pools, args.jobs)
    for cell in cells:
        print(f"{cell.pool:8s} {cell.method:5s} {cell.metric} {cell.criterion:7s} ours {cell.ours:.3f} paper "
              f"{cell.paper:.3f} |diff| {cell.difference:.3f} {'ok' if cell.within else 'OUTSIDE ' + str(cell.band)}")
    outside = [cell for cell in cells if not cell.within]
    print(f"{len(cells) - len(outside)}/{len(cells)} cells within their band")
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
