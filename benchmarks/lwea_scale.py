"""LWEA at scale: the linkage from cluster counts against the dense condensed matrix, and against LWGP.

``python -m benchmarks.lwea_scale [--rows 25000,40000,100000] [--repeats 3] [--cache DIR]``
``python -m benchmarks.lwea_scale --rows 100000 --pairs 12``: in one process, LWEA and LWGP alternated on one built
``Ensemble`` (JSON: medians and the median of the pair ratios, the process's peak RSS).

The ensemble: ``make_blobs(n, 16, centers=20, cluster_std=6, random_state=1)``, z-scored, ten k-means base
clusterings (seed 0), built once and cached; smaller cases take its first rows. Each measurement runs in a
fresh process (peak RSS is the child's own): ``counts`` is ``lwea(ensemble, 20)``, ``dense`` the same cut on
the dense path's linkage (``benchmarks/dense_linkage.py``; skipped where its condensed matrix would not fit),
``lwgp`` is ``lwgp(ensemble, 20, random_state=0)``. Methods alternate within each repeat; medians are printed
with the ratios counts / lwgp and dense / counts.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CENTERS, FEATURES, STD = 20, 16, 6.0
METHODS = ("counts", "dense", "lwgp")


def ensemble_path(cache: Path, n_rows: int) -> Path:
    return cache / f"lwea_scale_blobs_{n_rows}.npz"


def build_ensemble(cache: Path, n_rows: int) -> Path:
    """The cached (labels, truth) of ``n_rows`` blob rows; built on first use."""
    path = ensemble_path(cache, n_rows)
    if not path.exists():
        from sklearn.datasets import make_blobs
        from sklearn.preprocessing import StandardScaler

        from lwec_tasks import generate_base_clusterings

        features, truth = make_blobs(n_rows, FEATURES, centers=CENTERS, cluster_std=STD, random_state=1)
        labels = generate_base_clusterings(StandardScaler().fit_transform(features), n_clusterings=10,
                                           random_state=0)
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, labels=labels, truth=truth)
    return path


def measure(method: str, path: Path, n_rows: int) -> dict:
    """One measurement in this process: seconds, CPU seconds, NMI against the blobs, peak RSS (MB)."""
    from lwec_tasks import Ensemble, lwea, lwgp, nmi
    from lwec_tasks.core.dendrogram_cut import MicroclusterDendrogram
    from lwec_tasks.core.eci import ensemble_eci
    from lwec_tasks.core.errors import LwecMemoryError

    data = np.load(path)
    labels, truth = data["labels"][:n_rows], data["truth"][:n_rows]
    # Compile the kernels on a small ensemble first: the figures are for the work, not numba's start-up.
    warm = labels[:500]
    lwea(warm, 3), lwgp(warm, 3, random_state=0)
    started, cpu = time.perf_counter(), time.process_time()
    try:
        if method == "counts":
            result = lwea(labels, CENTERS)
        elif method == "lwgp":
            result = lwgp(labels, CENTERS, random_state=0)
        else:
            from benchmarks.dense_linkage import microcluster_distances, weighted_average_linkage

            ensemble = Ensemble(labels)
            weights = ensemble_eci(ensemble, 0.4)
            codes = ensemble.microcluster_codes
            tree = weighted_average_linkage(microcluster_distances(codes, weights, ensemble.n_columns),
                                            ensemble.microcluster_sizes)
            intra = 1.0 - weights[codes].sum(axis=1) / ensemble.n_columns
            result = MicroclusterDendrogram(tree, intra, ensemble.microcluster_of,
                                            ensemble.microcluster_sizes).cut(CENTERS)
    except LwecMemoryError as error:
        return {"method": method, "refused": str(error)}
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"method": method, "seconds": seconds, "cpu": cpu, "nmi": nmi(result, truth),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "microclusters": int(Ensemble(labels).n_microclusters)}


def alternated_pairs(path: Path, n_rows: int, pairs: int) -> dict:
    """In this process: ``lwea(ensemble, 20)`` and ``lwgp(ensemble, 20)`` alternated ``pairs`` times on one built
    ``Ensemble`` of the first ``n_rows`` rows (kernels compiled first). Returns the median seconds of each, the
    median of the pair ratios LWEA / LWGP, the microclusters and the process's peak RSS (MB)."""
    from lwec_tasks import Ensemble, lwea, lwgp

    labels = np.load(path)["labels"][:n_rows]
    lwea(labels[:500], 3), lwgp(labels[:500], 3, random_state=0)
    ensemble = Ensemble(labels)
    seconds = {"lwea": [], "lwgp": []}
    for _ in range(pairs):
        for method, function in (("lwea", lambda: lwea(ensemble, CENTERS)),
                                 ("lwgp", lambda: lwgp(ensemble, CENTERS, random_state=0))):
            started = time.perf_counter()
            function()
            seconds[method].append(time.perf_counter() - started)
    ratios = [a / b for a, b in zip(seconds["lwea"], seconds["lwgp"])]
    return {"rows": n_rows, "pairs": pairs, "microclusters": int(ensemble.n_microclusters),
            "lwea_s": statistics.median(seconds["lwea"]), "lwgp_s": statistics.median(seconds["lwgp"]),
            "ratio": statistics.median(ratios),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def pairs_in_child(cache: Path, n_rows: int, pairs: int) -> dict:
    """:func:`alternated_pairs` in a fresh process (the ensemble built and cached first)."""
    build_ensemble(cache, n_rows)
    output = subprocess.run([sys.executable, "-m", "benchmarks.lwea_scale", "--rows", str(n_rows), "--pairs",
                             str(pairs), "--cache", str(cache)], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[1])
    return json.loads(output.stdout.strip().splitlines()[-1])


def run_child(method: str, path: Path, n_rows: int) -> dict:
    output = subprocess.run([sys.executable, "-m", "benchmarks.lwea_scale", "--child", method, str(path), str(n_rows)],
                            capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="25000,40000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path(".lwea_scale_cache"))
    parser.add_argument("--pairs", type=int, default=None, metavar="N",
                        help="instead: LWEA and LWGP alternated N times in one process on the largest --rows")
    parser.add_argument("--child", nargs=3, metavar=("METHOD", "PATH", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        method, path, rows = args.child
        print(json.dumps(measure(method, Path(path), int(rows))))
        return 0
    sizes = [int(r) for r in args.rows.split(",")]
    path = build_ensemble(args.cache, max(sizes))
    if args.pairs:
        print(json.dumps(alternated_pairs(path, max(sizes), args.pairs)))
        return 0
    print("| rows | microclusters | LWEA counts s (CPU s) | dense s (CPU s) | LWGP s (CPU s) | counts / LWGP "
          "| dense / counts | NMI counts | NMI dense | NMI LWGP | peak MB counts | dense | LWGP |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for rows in sizes:
        results = {method: [] for method in METHODS}
        for repeat in range(args.repeats):
            order = METHODS if repeat % 2 == 0 else METHODS[::-1]
            for method in order:
                results[method].append(run_child(method, path, rows))
        print(_row(rows, results), flush=True)
    return 0


def _median(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs if key in run]
    return statistics.median(values) if values else None


def _row(rows: int, results: dict) -> str:
    def cell(method, key, pattern="{:.2f}"):
        value = _median(results[method], key)
        return pattern.format(value) if value is not None else "refused"

    def timing(method):
        seconds, cpu = _median(results[method], "seconds"), _median(results[method], "cpu")
        return f"{seconds:.2f} ({cpu:.2f})" if seconds is not None else "refused (memory)"

    counts, dense, lwgp = (_median(results[m], "seconds") for m in METHODS)
    ratio_lwgp = f"{counts / lwgp:.2f}×" if counts and lwgp else "–"
    ratio_dense = f"{dense / counts:.2f}×" if counts and dense else "–"
    micro = results["counts"][0].get("microclusters", "?")
    return (f"| {rows:,} | {micro:,} | {timing('counts')} | {timing('dense')} | {timing('lwgp')} | {ratio_lwgp} | "
            f"{ratio_dense} | {cell('counts', 'nmi', '{:.4f}')} | {cell('dense', 'nmi', '{:.4f}')} | "
            f"{cell('lwgp', 'nmi', '{:.4f}')} | {cell('counts', 'peak_mb', '{:.0f}')} | "
            f"{cell('dense', 'peak_mb', '{:.0f}')} | {cell('lwgp', 'peak_mb', '{:.0f}')} |")


if __name__ == "__main__":
    sys.exit(main())
