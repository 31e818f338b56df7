"""``lwec study``: the paper's θ sweep, ensemble-size sweep and significance tables.

    lwec study theta POOL... --out DIR            # NMI/ARI vs θ (CSV, JSON, figure)
    lwec study size POOL... --out DIR             # NMI/ARI vs ensemble size M
    lwec study significance RESULT.json... --out DIR   # t-tests from `lwec reproduce` outputs
    lwec study compare RESULT.json... --paper-scores CSV   # markdown table: ours vs the paper
"""

from __future__ import annotations

import json

from pathlib import Path

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.experiments.pools import load_pool
from lwec_tasks.experiments.paper_tables import load_paper_scores, markdown_comparison
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


def _numbers(text: str, kind):
    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError as error:
        raise LwecInputError(f"cannot read {text!r} as a comma-separated list of numbers") from error


def _protocol_arguments(parser, default_methods: str) -> None:
    parser.add_argument("pools", nargs="+", help="pool files (.mat/.npz/.csv)")
    parser.add_argument("--runs", type=int, default=20, help="runs per setting (default: 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default=default_methods, help=f"default: {default_methods}")
    parser.add_argument("--ks", default="2..30", help="numbers of clusters (default: 2..30)")
    parser.add_argument("--out", required=True, help="output directory for CSV, JSON and figures")


def register(subparsers) -> None:
    parser = subparsers.add_parser("study", help="θ sweep, ensemble-size sweep and significance tables")
    studies = parser.add_subparsers(dest="study", metavar="STUDY", required=True)

    theta = studies.add_parser("theta", help="scores against θ (paper: θ = 0.1 … 4, 20 runs, M = 10)")
    _protocol_arguments(theta, "LWEA,LWGP")
    theta.add_argument("--thetas", default=",".join(str(t) for t in PAPER_THETAS))
    theta.add_argument("--ensemble-size", type=int, default=10)
    theta.set_defaults(handler=run_theta)

    size = studies.add_parser("size", help="scores against the ensemble size M (paper: 20 runs per M)")
    _protocol_arguments(size, "LWEA,LWGP,EAC")
    size.add_argument("--sizes", default=",".join(str(s) for s in PAPER_SIZES))
    size.add_argument("--theta", type=float, default=0.4)
    size.set_defaults(handler=run_size)

    sig = studies.add_parser("significance", help="t-tests (p < 0.05) of LWEA/LWGP against the other methods")
    sig.add_argument("results", nargs="+", help="JSON files written by `lwec reproduce --json`")
    sig.add_argument("--ours", default="LWEA,LWGP")
    sig.add_argument("--alpha", type=float, default=0.05)
    sig.add_argument("--out", required=True)
    sig.set_defaults(handler=run_significance)

    compare = studies.add_parser("compare", help="markdown table of reproduction results beside published scores")
    compare.add_argument("results", nargs="+", help="JSON files written by `lwec reproduce --json`")
    compare.add_argument("--paper-scores", required=True)
    compare.add_argument("--tolerance", type=float, default=0.03)
    compare.set_defaults(handler=run_compare)


def _progress(line: str) -> None:
    print(line, flush=True)


def run_theta(args) -> int:
    thetas = _numbers(args.thetas, float)
    rows = []
    for source in args.pools:
        pool = load_pool(source)
        rows += theta_sweep(pool, thetas, methods=args.methods, runs=args.runs,
                            ensemble_size=args.ensemble_size, seed=args.seed, ks=args.ks, progress=_progress)
    csv_path, _ = write_rows(rows, args.out, "theta_sweep")
    figure = plot_sweep(rows, "theta", Path(args.out) / "nmi_vs_theta.png", log_x=True)
    plot_sweep(rows, "theta", Path(args.out) / "ari_vs_theta.png", metric="ari", log_x=True)
    print(f"wrote {csv_path} and {figure}")
    return 0


def run_size(args) -> int:
    sizes = _numbers(args.sizes, int)
    rows = []
    for source in args.pools:
        pool = load_pool(source)
        rows += ensemble_size_sweep(pool, sizes, methods=args.methods, runs=args.runs, theta=args.theta,
                                    seed=args.seed, ks=args.ks, progress=_progress)
    csv_path, _ = write_rows(rows, args.out, "ensemble_size_sweep")
    figure = plot_sweep(rows, "ensemble_size", Path(args.out) / "nmi_vs_ensemble_size.png")
    plot_sweep(rows, "ensemble_size", Path(args.out) / "ari_vs_ensemble_size.png", metric="ari")
    print(f"wrote {csv_path} and {figure}")
    return 0


def _load_results(paths) -> list[dict]:
    results = []
    for path in paths:
        try:
            results.append(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as error:
            raise LwecInputError(f"cannot read reproduction result {path}: {error}") from error
    return results


def run_significance(args) -> int:
    tests, tally = significance(_load_results(args.results), ours=args.ours.split(","), alpha=args.alpha)
    write_rows(tests, args.out, "significance_tests")
    write_rows(tally, args.out, "significance_tally")
    text = "\n\n".join(tally_markdown(tally, metric) for metric in ("nmi", "ari"))
    Path(args.out, "significance.md").write_text(text + "\n")
    print(text)
    return 0


def run_compare(args) -> int:
    results = _load_results(args.results)
    merged: dict[str, dict] = {}
    for result in results:  # several files per dataset (methods run separately) → one entry
        entry = merged.setdefault(result["dataset"], {**result, "methods": {}})
        entry["methods"].update(result["methods"])
    print(markdown_comparison(list(merged.values()), load_paper_scores(args.paper_scores), args.tolerance))
    return 0


__all__ = ["register"]
