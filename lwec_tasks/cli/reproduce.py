"""``lwec reproduce``: the paper's protocol on one base-clustering pool.

    lwec reproduce POOL --runs 20 --ensemble-size 10 --theta 0.4 --seed 0 \\
        --methods LWEA,LWGP,EAC --ks 2..30 --json out.json

Prints progress while it runs (to stderr when ``--json -`` sends the JSON to
stdout) and a table of mean ± std at the end; optionally logs an MLflow run
with one nested run per method.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

from lwec_tasks.core.eci import DEFAULT_THETA
from lwec_tasks.experiments.paper_tables import format_summary, load_paper_scores
from lwec_tasks.experiments.pools import load_pool
from lwec_tasks.experiments.reproduce import reproduce
from lwec_tasks.methods import METHODS


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce", help="score consensus methods on random ensembles drawn from a pool (the paper's protocol)",
        description="For each run, draw M base clusterings from POOL (seeded, the same draw for every method), run "
                    "every method for every k, and score NMI (max normalisation) and ARI against the pool's ground "
                    "truth: best-k over ks and true-k.")
    parser.add_argument("pool", help="pool file (.mat with members/gt as published by the paper's authors, .npz, "
                                     ".csv) or a SQLAlchemy database URL (with --table)")
    parser.add_argument("--table", help="table holding the pool when POOL is a database URL")
    parser.add_argument("--truth", default="gt", help="ground-truth variable/column name (default: gt)")
    parser.add_argument("--runs", type=int, default=20, help="number of random ensembles R (default: 20)")
    parser.add_argument("--ensemble-size", type=int, default=10, help="base clusterings per ensemble M (default: 10)")
    parser.add_argument("--theta", type=float, default=DEFAULT_THETA, help=f"θ of LWEA/LWGP (default: {DEFAULT_THETA})")
    parser.add_argument("--seed", type=int, default=0, help="master seed (default: 0)")
    parser.add_argument("--methods", default="LWEA,LWGP,EAC",
                        help=f"comma-separated paper names from {','.join(METHODS)} (default: LWEA,LWGP,EAC)")
    parser.add_argument("--ks", default="2..30", help="numbers of clusters, e.g. 2..30 or 2,5,10 (default: 2..30)")
    parser.add_argument("--json", dest="json_out", help="write the summary JSON here ('-' for stdout)")
    parser.add_argument("--paper-scores",
                        help="CSV of published scores (dataset,method,metric,best_k_mean,...) to print beside ours")
    parser.add_argument("--mlflow", action="store_true", help="log an MLflow run (nested run per method)")
    parser.add_argument("--tracking-uri",
                        help="MLflow tracking URI, or env:VAR to read it from variable VAR (default: "
                             "$MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow.db, the store `lwec run` and "
                             "`lwec demo` use)")
    parser.add_argument("--experiment", default="lwec-reproduce", help="MLflow experiment name")
    parser.set_defaults(handler=run)


def run(args) -> int:
    to_stdout = args.json_out == "-"
    say = partial(print, file=sys.stderr if to_stdout else sys.stdout, flush=True)  # progress and tables
    paper = load_paper_scores(args.paper_scores) if args.paper_scores else None
    tracking_uri = None
    if args.mlflow:  # resolved now, so an unset env:VAR fails before the long part
        from lwec_tasks.tracking import resolve_tracking_uri

        tracking_uri = resolve_tracking_uri(args.tracking_uri)
    pool = load_pool(args.pool, table=args.table, truth=args.truth)
    say(f"{pool.name}: N={pool.n_objects}, {pool.n_candidates} candidate clusterings, "
        f"{args.runs} runs of M={args.ensemble_size}, θ={args.theta}")
    result = reproduce(pool, runs=args.runs, ensemble_size=args.ensemble_size, theta=args.theta, seed=args.seed,
                       methods=args.methods, ks=args.ks, progress=say)
    say(format_summary(result, paper))
    auto_k = format_auto_k(result)
    if auto_k:
        say(auto_k)
    if args.json_out:
        text = json.dumps(result, indent=1)
        if to_stdout:
            print(text)
        else:
            Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json_out).write_text(text + "\n")
    if args.mlflow:
        from lwec_tasks.tracking import TrackingError, log_reproduction, mask_uri

        try:
            run_id = log_reproduction(result, tracking_uri=tracking_uri, experiment=args.experiment)
        except TrackingError as error:
            print(f"lwec reproduce: error: {error}", file=sys.stderr)
            return 1
        say(f"MLflow run {run_id} (experiment {args.experiment!r} at {mask_uri(tracking_uri)})")
    return 0


def format_auto_k(result: dict) -> str:
    """One line per method with an automatic k: NMI and ARI at it and the mean chosen k ("" if none)."""
    lines = []
    for name, summary in result["methods"].items():
        if "auto_k_chosen" not in summary:
            continue
        nmi, ari = summary["nmi"]["auto_k"], summary["ari"]["auto_k"]
        chosen = summary["auto_k_chosen"]
        lines.append(f"{name} auto-k: NMI {nmi['mean']:.3f}±{nmi['std']:.3f}, ARI {ari['mean']:.3f}±"
                     f"{ari['std']:.3f}, k {chosen['mean']:.1f}±{chosen['std']:.1f} (true k {result['n_classes']})")
    return "\n".join(lines)

