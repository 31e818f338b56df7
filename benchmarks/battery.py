"""``python -m benchmarks battery --data DIR``: LWEA and LWGP on a folder of clustering benchmark data sets, scored
the way the benchmark suite scores single algorithms, beside the published anchors' scores.

**The folder**: any tree of data sets in the format of Gagolewski's *Benchmark Suite for Clustering
Algorithms*: ``NAME.data.gz`` (whitespace-separated numbers, one row per point) with ``NAME.labels0.gz``,
``NAME.labels1.gz``, … (one integer per row: reference labellings, clusters 1..k; 0 marks a noise point).
A data set is named by its path under DIR without the suffix (``fcps/atom``).

**The scoring** (the framework's): per labelling, the true k is its number of distinct non-noise labels;
LWEA and LWGP are cut at that k, scored by adjusted mutual information (scikit-learn's AMI) on the
non-noise points; the best over the labellings counts. Features are z-scored per column (lwec's default);
the base clusterings come from ``fit_base_clusterings(M, seed, generators)``; every seed is scored and the
mean and SD over seeds reported, with the seconds per seed (base clusterings + LWEA + LWGP).

**The anchors**: when an ``ANCHORS.md`` lies in DIR or a folder above it, its "Mean AMI" table (the
published single algorithms' mean AMI) is shown beside lwec's means, and its per-data-set table's best
anchor beside each data set.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

#: Seeds scored unless ``--seeds`` is given.
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
METHODS = ("LWEA", "LWGP")


@dataclass
class SetResult:
    """One data set's scores: ``scores[method]`` one AMI per seed; ``seconds`` per seed."""

    name: str
    n: int
    ks: list[int]
    scores: dict[str, list[float]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    auto_k: dict[str, list[int]] = field(default_factory=dict)


def find_sets(data: Path) -> list[str]:
    """The data set names under ``data`` (paths without ``.data.gz``, '/'-separated), sorted."""
    names = []
    for path in data.rglob("*.data.gz"):
        name = path.relative_to(data).as_posix()[: -len(".data.gz")]
        if Path(data, name + ".labels0.gz").exists():
            names.append(name)
    return sorted(names)


def load_matrix(path: Path) -> np.ndarray:
    with gzip.open(path, "rt") as handle:
        return np.loadtxt(handle, ndmin=2)


def reference_labellings(data: Path, name: str) -> list[np.ndarray]:
    """Every ``NAME.labelsJ.gz``, as int64 arrays (0 = noise, as the suite codes it)."""
    labellings, j = [], 0
    while Path(data, f"{name}.labels{j}.gz").exists():
        with gzip.open(Path(data, f"{name}.labels{j}.gz"), "rt") as handle:
            labellings.append(np.loadtxt(handle, dtype=np.int64, ndmin=1))
        j += 1
    return labellings


def true_k(labels: np.ndarray) -> int:
    """Distinct non-noise (non-zero) labels."""
    return len(np.unique(labels[labels != 0]))


def standardise(X: np.ndarray) -> np.ndarray:
    """Per-column z-scores (a constant column becomes 0)."""
    scale = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)


def score(found: np.ndarray, reference: np.ndarray) -> float:
    """AMI of ``found`` against ``reference`` on the reference's non-noise points."""
    from sklearn.metrics import adjusted_mutual_info_score

    kept = reference != 0
    return float(adjusted_mutual_info_score(reference[kept], found[kept]))


def run_set(data: str, name: str, seeds: tuple[int, ...], generators: str, ensemble_size: int,
            auto_k: bool = False) -> SetResult:
    """Score LWEA and LWGP on data set ``name`` for every seed."""
    from lwec_tasks.core.auto_k import auto_consensus
    from lwec_tasks.core.base_clusterings import fit_base_clusterings
    from lwec_tasks.core.ensemble import Ensemble
    from lwec_tasks.core.lwea import lwea
    from lwec_tasks.core.lwgp import lwgp

    X = standardise(load_matrix(Path(data, f"{name}.data.gz")))
    labellings = reference_labellings(Path(data), name)
    ks = sorted({true_k(labels) for labels in labellings})
    result = SetResult(name, len(X), [true_k(labels) for labels in labellings],
                       {method: [] for method in METHODS}, [], {method: [] for method in METHODS} if auto_k else {})
    for seed in seeds:
        started = time.perf_counter()
        base = fit_base_clusterings(X, ensemble_size, random_state=seed, generators=generators, n_jobs=1)
        ensemble = Ensemble(base.labels)
        cuts = {"LWEA": lwea(ensemble, ks), "LWGP": lwgp(ensemble, ks, random_state=seed)}
        result.seconds.append(time.perf_counter() - started)
        for method, labels in cuts.items():
            result.scores[method].append(max(score(labels[:, ks.index(true_k(ref))], ref) for ref in labellings))
        if auto_k:
            for method in METHODS:
                selection, _ = auto_consensus(ensemble, method.lower(), random_state=seed)
                result.auto_k[method].append(int(selection.k))
    return result


def parse_anchors(path: Path) -> tuple[list[dict], dict[str, dict]]:
    """The "Mean AMI" table's rows (method, kind, n, mean AMI) and the per-data-set table's best anchors
    (name → {anchor, ami}) of an ANCHORS.md; missing tables give empty results."""
    means, best = [], {}
    section = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            section = "mean" if line.startswith("## Mean AMI") else "per-set" if "Per data set" in line else None
            continue
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if section == "mean" and len(cells) >= 4 and cells[0] != "method":
            try:
                means.append({"method": cells[0], "kind": cells[1], "n": int(cells[2]), "ami": float(cells[3])})
            except ValueError:
                continue
        elif section == "per-set" and len(cells) >= 7 and cells[0] != "data set":
            try:
                best[cells[0]] = {"anchor": cells[5], "ami": float(cells[6])}
            except ValueError:
                continue
    return means, best


def find_anchors(data: Path) -> Path | None:
    """``ANCHORS.md`` in ``data`` or the nearest folder above it."""
    for folder in [data, *data.resolve().parents]:
        if (folder / "ANCHORS.md").is_file():
            return folder / "ANCHORS.md"
    return None


def seed_list(text: str) -> tuple[int, ...]:
    """``--seeds``: "0-4", "0,2,5" or a mix."""
    seeds = []
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)-(\d+)", part)
        if match:
            low, high = int(match[1]), int(match[2])
            if high < low:
                raise argparse.ArgumentTypeError(f"--seeds: range {part!r} runs backwards")
            seeds.extend(range(low, high + 1))
        elif part.isdigit():
            seeds.append(int(part))
        else:
            raise argparse.ArgumentTypeError(f"--seeds must be seeds like 0-4 or 0,1,7, got {part!r}")
    return tuple(seeds)


def _mix(text: str) -> str:
    from lwec_tasks.core.errors import LwecInputError
    from lwec_tasks.core.mixes import canonical_mix

    try:
        return canonical_mix(text)
    except LwecInputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from lwec_tasks.core.defaults import DEFAULT_ENSEMBLE_SIZE
    from lwec_tasks.core.mixes import RUN_DEFAULT_MIX

    parser.add_argument("--data", required=True, type=Path, metavar="DIR",
                        help="folder of NAME.data.gz / NAME.labels0.gz data sets (searched recursively)")
    parser.add_argument("--seeds", type=seed_list, default=DEFAULT_SEEDS, help="seeds, e.g. 0-4 (default) or 0,3")
    parser.add_argument("--generators", type=_mix, default=RUN_DEFAULT_MIX,
                        help=f"mix of base-clustering generators (default {RUN_DEFAULT_MIX}, lwec run's): a "
                             "generator, a named "
                             "mix or weights like kmeans:4,genie:3,spectral:3")
    parser.add_argument("-M", "--ensemble-size", type=int, default=DEFAULT_ENSEMBLE_SIZE,
                        help=f"base clusterings per ensemble (default {DEFAULT_ENSEMBLE_SIZE})")
    parser.add_argument("--sets", default=None, help="only data sets whose name contains this text")
    parser.add_argument("--jobs", type=int, default=1, help="data sets scored at once, each in its own process")
    parser.add_argument("--auto-k", action="store_true", help="also report the k chosen automatically")
    parser.add_argument("--output", metavar="FILE", help="also write the report (markdown) to FILE")
    parser.add_argument("--json", metavar="FILE", help="also write every score (per set and seed) as JSON")
    return parser


def run_battery(data: Path, seeds, generators: str, ensemble_size: int, only: str | None = None,
                jobs: int = 1, auto_k: bool = False) -> list[SetResult]:
    from lwec_tasks.core.errors import LwecInputError

    if not data.is_dir():
        raise LwecInputError(f"--data {str(data)!r} is not a folder")
    names = [name for name in find_sets(data) if only is None or only in name]
    if not names:
        raise LwecInputError(f"no data sets (NAME.data.gz with NAME.labels0.gz) under {str(data)!r}"
                             + (f" matching {only!r}" if only else ""))
    arguments = [(str(data), name, tuple(seeds), generators, ensemble_size, auto_k) for name in names]
    if jobs <= 1:
        return [run_set(*a) for a in arguments]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(run_set, *zip(*arguments)))


def summary(results: list[SetResult]) -> dict[str, dict[str, float]]:
    """Per method: mean AMI over data sets (of each set's mean over seeds) and mean seed SD."""
    return {method: {"ami": float(np.mean([np.mean(r.scores[method]) for r in results])),
                     "seed_sd": float(np.mean([np.std(r.scores[method]) for r in results]))}
            for method in METHODS}


def report(results: list[SetResult], generators: str, seeds, ensemble_size: int,
           anchors: Path | None) -> str:
    means, best = parse_anchors(anchors) if anchors else ([], {})
    total = summary(results)
    lines = [f"Battery: {len(results)} data sets; generators {generators}, M = {ensemble_size}, seeds "
             f"{', '.join(map(str, seeds))}; AMI at the true k, best over reference labellings, noise left out.",
             "", "| method | kind | n | mean AMI | mean seed SD |", "|---|---|---:|---:|---:|"]
    rows = [(f"{method} ({generators})", "lwec", len(results), total[method]["ami"], total[method]["seed_sd"])
            for method in METHODS]
    rows += [(m["method"], m["kind"], m["n"], m["ami"], None) for m in means if m["kind"] != "lwec"]
    for method, kind, n, ami, sd in sorted(rows, key=lambda row: -row[3]):
        lines.append(f"| {method} | {kind} | {n} | {ami:.3f} | {'' if sd is None else f'{sd:.3f}'} |")
    if anchors:
        lines += ["", f"Anchors from {anchors} (their n counts their own data sets)."]
    lines += ["", "| data set | n | k | LWEA | LWGP | best anchor | AMI | LWEA − best | s/seed |",
              "|---|---:|---|---:|---:|---|---:|---:|---:|"]
    for r in results:
        lwea_mean, anchor = float(np.mean(r.scores["LWEA"])), best.get(r.name)
        cells = [r.name, str(r.n), ",".join(map(str, r.ks))]
        cells += [f"{np.mean(r.scores[m]):.3f} ± {np.std(r.scores[m]):.3f}" for m in METHODS]
        cells += [anchor["anchor"], f"{anchor['ami']:.3f}", f"{lwea_mean - anchor['ami']:+.3f}"] if anchor \
            else ["", "", ""]
        cells.append(f"{np.mean(r.seconds):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    if results and results[0].auto_k:
        lines += ["", "Automatic k (chosen k per seed):", "", "| data set | k | LWEA | LWGP |", "|---|---|---|---|"]
        for r in results:
            lines.append(f"| {r.name} | {','.join(map(str, r.ks))} | "
                         + " | ".join(",".join(map(str, r.auto_k[m])) for m in METHODS) + " |")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    results = run_battery(args.data, args.seeds, args.generators, args.ensemble_size, args.sets, args.jobs,
                          args.auto_k)
    text = report(results, args.generators, args.seeds, args.ensemble_size, find_anchors(args.data))
    print(text, end="")
    if args.output:
        Path(args.output).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"generators": args.generators, "seeds": list(args.seeds),
                                               "results": [asdict(r) for r in results]}, indent=1))
    return 0
