"""``python -m benchmarks.mix_choice``: choose ``lwec run``'s default generator mix (possibly by table size) and
default method by leaving one table out across three families at once.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.mix_choice \\
        --rows 1000000                 # every family; the synthetic tables at 1M rows
    python -m benchmarks.mix_choice --families synthetic --shapes blobs,elongated,unequal --rows 50000 \\
        --mixes "kmeans:2,genie:1,spectral:1;kmeans;genie:1,spectral:2,gmm:1"   # the same shapes at 50k rows
    python -m benchmarks.mix_choice --no-score --rows 50000,1000000        # the choice over both sizes

**Families** (each weighted alike in the choice, :mod:`benchmarks.mix_rules`):

- ``battery`` — the clustering battery's data sets (``--battery``, default ``../shared/data/battery``; the
  development half): AMI at the true k, best over reference labellings, mean over ``--seeds`` (default 0–4), as
  ``python -m benchmarks battery`` scores them (:func:`benchmarks.battery.run_set`);
- ``pools`` — the authors' base-clustering pools (``--pools``, default ``../shared/data/pools``): the paper's
  protocol (``--pool-runs`` draws of M = 10 columns, seed 0), NMI at the true k; the base clusterings are fixed,
  so only the method is chosen there;
- ``synthetic`` — the shapes of :mod:`benchmarks.families` at each of ``--rows`` (default 1,000,000): NMI at the
  true k of the run's labels (:mod:`benchmarks.run_path`, seed 0).

**Candidates**: each mix of ``--mixes`` alone, and every "mix A up to N0 rows, mix B above" for N0 in
``--thresholds``, each with LWEA or LWGP as the method. ``--verify-rows`` then scores the chosen rule's mix, the
current default and ``kmeans`` on every shape at that size (microclusters, seconds, row-confidence ROC AUC).

Every score is appended to ``--results`` (JSON lines) as it is made and read back on the next call, so a long
run can be resumed and the choice redone without scoring (``--no-score``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from benchmarks.mix_rules import METHODS, Rule, Table, candidate_rules, family_means, leave_one_out

ROOT = Path(__file__).resolve().parents[1]
CURRENT_DEFAULT = "genie:1,spectral:2,gmm:1"
MIXES = (CURRENT_DEFAULT, "kmeans", "kmeans:2,genie:1,spectral:1", "kmeans:1,spectral:1",
         "kmeans:1,genie:1,spectral:2,gmm:1")
THRESHOLDS = (20_000, 100_000)
FAMILIES = ("battery", "pools", "synthetic")


# ------------------------------------------------------------------------------------------------ the records
def load_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def key(record: dict) -> tuple:
    return record["family"], record["name"], record["n"], record["mix"], tuple(record["seeds"])


# -------------------------------------------------------------------------------------------------- scoring
def score_battery(data: Path, mix: str, seeds: tuple[int, ...], done: set, out: Path) -> None:
    from benchmarks.battery import find_sets, load_matrix, run_set

    for name in find_sets(data):
        n = len(load_matrix(data / f"{name}.data.gz"))
        if ("battery", name, n, mix, seeds) in done:
            continue
        started = time.perf_counter()
        result = run_set(str(data), name, seeds, mix, 10)
        append_record(out, {"family": "battery", "name": name, "n": n, "mix": mix, "seeds": list(seeds),
                            "scores": {m: float(np.mean(result.scores[m])) for m in METHODS},
                            "per_seed": result.scores, "seconds": {"total": float(np.sum(result.seconds))}})
        print(f"battery {name} {mix}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)


def score_pools(directory: Path, runs: int, done: set, out: Path) -> None:
    from lwec_tasks.experiments.pools import load_pool
    from lwec_tasks.experiments.reproduce import reproduce

    for path in sorted(directory.glob("bc_pool_*.mat")):
        pool = load_pool(path)
        if ("pools", pool.name, pool.n_objects, None, (0,)) in done:
            continue
        started = time.perf_counter()
        result = reproduce(pool, runs=runs, methods="LWEA,LWGP", ks=[pool.n_classes], auto_k=False)
        scores = {m: result["methods"][m]["nmi"]["true_k"]["mean"] for m in METHODS}
        append_record(out, {"family": "pools", "name": pool.name, "n": pool.n_objects, "mix": None, "seeds": [0],
                            "runs": runs, "scores": scores,
                            "seconds": {m: result["methods"][m]["seconds"]["mean"] for m in METHODS}})
        print(f"pools {pool.name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)


def score_synthetic(shapes: list[str], n_rows: int, mixes: list[str], done: set, out: Path) -> None:
    from benchmarks.families import table
    from benchmarks.run_path import run_path

    for shape in shapes:
        missing = [mix for mix in mixes if ("synthetic", shape, n_rows, mix, (0,)) not in done]
        if not missing:
            continue
        X, y = table(shape, n_rows)
        for mix in missing:
            started = time.perf_counter()
            result = run_path(X, y, mix, seed=0)
            append_record(out, {"family": "synthetic", "name": shape, "n": n_rows, "mix": mix, "seeds": [0],
                                "scores": result.nmi, **asdict(result)})
            print(f"synthetic {shape} {n_rows:,} {mix}: {time.perf_counter() - started:.1f} s "
                  f"NMI {result.nmi['LWEA']:.4f}/{result.nmi['LWGP']:.4f}, {result.microclusters:,} microclusters",
                  file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------- choice
def tables_of(records: list[dict], rows: list[int], seeds: tuple[int, ...]) -> list[Table]:
    """The scored tables: battery sets (scored over ``seeds``), pools, synthetic shapes at each of ``rows``."""
    tables: dict[tuple, Table] = {}
    for r in records:
        if r["family"] == "synthetic" and r["n"] not in rows or r["family"] == "battery" and tuple(r["seeds"]) != seeds:
            continue
        name = f"{r['name']} {r['n']:,}" if r["family"] == "synthetic" else r["name"]
        table = tables.setdefault((r["family"], name), Table(r["family"], name, r["n"]))
        table.scores[r["mix"]] = r["scores"]
    return sorted(tables.values(), key=lambda t: (t.family, t.name))


def choice_report(result: dict, tables: list[Table], mixes: list[str]) -> str:
    families = sorted({t.family for t in tables})
    counts: dict[str, int] = {}
    for family in families:
        counts[family] = sum(t.family == family for t in tables)
    header = "| rule | " + " | ".join(f"{f} ({counts[f]})" for f in families) + " | criterion |"
    lines = ["Family means of fixed candidates (no choice involved, so these are held-out figures as they stand):",
             "", header, "|---|" + "---:|" * (len(families) + 1)]
    ranked = sorted(result["rules"], key=lambda r: -np.mean(list(family_means(r, tables).values())))
    shown = [r for r in result["rules"] if r.rows is None] + [r for r in ranked if r.rows is not None][:6]
    for rule in sorted(shown, key=lambda r: -np.mean(list(family_means(r, tables).values()))):
        means = family_means(rule, tables)
        lines.append(f"| {rule.name} | " + " | ".join(f"{means[f]:.4f}" for f in families)
                     + f" | {np.mean(list(means.values())):.4f} |")
    chosen_counts: dict[str, int] = {}
    for _, _, name in result["chosen_per_table"]:
        chosen_counts[name] = chosen_counts.get(name, 0) + 1
    held = result["held_out"]
    lines += ["", f"Leave one table out ({len(tables)} folds): held out " +
              ", ".join(f"{f} {held[f]:.4f}" for f in families) +
              f"; mean over families {np.mean(list(held.values())):.4f}.",
              "Rules chosen across the folds: " +
              "; ".join(f"{name} ×{n}" for name, n in sorted(chosen_counts.items(), key=lambda item: -item[1])),
              f"Chosen on every table: **{result['chosen'].name}** (" +
              ", ".join(f"{f} {result['tuned'][f]:.4f}" for f in families) + ")."]
    return "\n".join(lines) + "\n"


def verify_report(records: list[dict], rows: int) -> str:
    lines = [f"Synthetic shapes at {rows:,} rows (seed 0, M = 10, the run's path):", "",
             "| shape | mix | NMI LWEA | NMI LWGP | LWEA − LWGP | microclusters | base s | LWEA s | LWGP s | "
             "LWEA / LWGP | AUC LWEA | AUC LWGP |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted((r for r in records if r["family"] == "synthetic" and r["n"] == rows),
                    key=lambda r: (r["name"], r["mix"])):
        s, auc = r["seconds"], r.get("confidence_auc") or {}
        lines.append(f"| {r['name']} | {r['mix']} | {r['nmi']['LWEA']:.4f} | {r['nmi']['LWGP']:.4f} | "
                     f"{r['nmi']['LWEA'] - r['nmi']['LWGP']:+.4f} | {r['microclusters']:,} | {s['base']:.1f} | "
                     f"{s['ensemble'] + s['LWEA']:.1f} | {s['ensemble'] + s['LWGP']:.1f} | "
                     f"{(s['ensemble'] + s['LWEA']) / (s['ensemble'] + s['LWGP']):.2f} | "
                     f"{auc.get('LWEA', float('nan')):.3f} | {auc.get('LWGP', float('nan')):.3f} |")
    return "\n".join(lines) + "\n"


def summary_of(result: dict) -> dict:
    """The JSON-ready part of a :func:`~benchmarks.mix_rules.leave_one_out` result."""
    return {"held_out": result["held_out"], "chosen": result["chosen"].name, "tuned": result["tuned"],
            "chosen_per_table": result["chosen_per_table"]}


# -------------------------------------------------------------------------------------------------- command
def seed_list(text: str) -> tuple[int, ...]:
    from benchmarks.battery import seed_list as parse

    return parse(text)


def row_counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mix_choice", description=__doc__.split("\n\n")[0])
    parser.add_argument("--battery", type=Path, default=ROOT.parent / "shared/data/battery")
    parser.add_argument("--pools", type=Path, default=ROOT.parent / "shared/data/pools")
    parser.add_argument("--rows", type=row_counts, default=[1_000_000],
                        help="rows of the synthetic tables of the choice, e.g. 1000000 or 50000,1000000")
    parser.add_argument("--verify-rows", type=int, default=None, help="then score the chosen rule at this size")
    parser.add_argument("--shapes", default=None, help="comma-separated shapes (default: all)")
    parser.add_argument("--families", default=",".join(FAMILIES), help="families to score (default: all)")
    parser.add_argument("--mixes", default=";".join(MIXES), help="candidate mixes, ';'-separated")
    parser.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)), help="candidate N0s")
    parser.add_argument("--seeds", type=seed_list, default=(0, 1, 2, 3, 4), help="battery seeds (default 0-4)")
    parser.add_argument("--pool-runs", type=int, default=20, help="ensembles drawn per pool (default 20)")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks/results/mix_choice.jsonl")
    parser.add_argument("--no-score", action="store_true", help="only choose, from the scores already recorded")
    parser.add_argument("--report", type=Path, default=None, help="also write the report (markdown) here")
    parser.add_argument("--json", type=Path, default=None, help="also write the choice (JSON) here")
    return parser


def main(argv: list[str] | None = None) -> int:
    from benchmarks.families import SHAPES

    args = build_parser().parse_args(argv)
    mixes = [m.strip() for m in args.mixes.split(";") if m.strip()]
    shapes = list(SHAPES) if args.shapes is None else [s.strip() for s in args.shapes.split(",")]
    families = [f.strip() for f in args.families.split(",")]
    if not args.no_score:
        done = {key(r) for r in load_records(args.results)}
        if "pools" in families:
            score_pools(args.pools, args.pool_runs, done, args.results)
        if "battery" in families:
            for mix in mixes:
                score_battery(args.battery, mix, args.seeds, done, args.results)
        if "synthetic" in families:
            for n_rows in args.rows:
                score_synthetic(shapes, n_rows, mixes, done, args.results)
    records = load_records(args.results)
    tables = [t for t in tables_of(records, args.rows, args.seeds)
              if t.family != "synthetic" or t.name.split()[0] in shapes]
    if len({t.family for t in tables}) < 2:
        print("fewer than two families scored: nothing to choose yet", file=sys.stderr)
        return 0
    rules = candidate_rules(mixes, [int(t) for t in args.thresholds.split(",")])
    result = leave_one_out(rules, tables)
    text = choice_report(result, tables, mixes)
    by_method = {method: leave_one_out([r for r in rules if r.method == method], tables) for method in METHODS}
    text += "".join(f"With {method} fixed: held out " + ", ".join(f"{f} {v:.4f}" for f, v in r["held_out"].items())
                    + f"; chosen on every table: {r['chosen'].name}.\n" for method, r in by_method.items())
    if args.json:
        args.json.write_text(json.dumps({
            "rows": args.rows, "seeds": list(args.seeds), "tables": [asdict(t) for t in tables],
            **{name: summary_of(r) for name, r in (("both", result), *by_method.items())}}, indent=1, default=str))
    if args.verify_rows:
        chosen: Rule = result["chosen"]
        verify = list(dict.fromkeys([chosen.mix_for(args.verify_rows), CURRENT_DEFAULT, "kmeans"]))
        if not args.no_score:
            done = {key(r) for r in load_records(args.results)}
            score_synthetic(shapes, args.verify_rows, verify, done, args.results)
            records = load_records(args.results)
        text += "\n" + verify_report(records, args.verify_rows)
    print(text, end="")
    if args.report:
        args.report.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
