"""``lwec study``: the paper's θ sweep, ensemble-size sweep and significance tables.

    lwec study theta POOL... --out DIR            # NMI/ARI vs θ (CSV, JSON, NMI and ARI figures)
    lwec study size POOL... --out DIR             # NMI/ARI vs ensemble size M
    lwec study significance RESULT.json... --out DIR   # t-tests from `lwec reproduce` outputs
    lwec study compare RESULT.json... --paper-scores CSV   # markdown table: ours vs the paper

The work is done by :mod:`lwec_tasks.experiments.studies`, which the
``lwec-paper-studies`` flow calls too, so both write the same files.
"""

from __future__ import annotations

from functools import partial

from lwec_tasks.core.eci import DEFAULT_THETA
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.experiments.paper_tables import load_paper_scores, markdown_comparison
from lwec_tasks.experiments.studies import PAPER_SIZES, PAPER_THETAS, load_results, run_sweep, write_significance


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
    theta.add_argument("--thetas", dest="values", metavar="THETAS", default=",".join(str(t) for t in PAPER_THETAS))
    theta.add_argument("--ensemble-size", type=int, default=10)
    theta.set_defaults(handler=run_sweep_command, sweep="theta", value_type=float)

    size = studies.add_parser("size", help="scores against the ensemble size M (paper: 20 runs per M)")
    _protocol_arguments(size, "LWEA,LWGP,EAC")
    size.add_argument("--sizes", dest="values", metavar="SIZES", default=",".join(str(s) for s in PAPER_SIZES))
    size.add_argument("--theta", type=float, default=DEFAULT_THETA)
    size.set_defaults(handler=run_sweep_command, sweep="ensemble_size", value_type=int)

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


def run_sweep_command(args) -> int:
    """``lwec study theta`` (M fixed by ``--ensemble-size``) and ``lwec study size`` (θ fixed by ``--theta``)."""
    fixed = {"ensemble_size": args.ensemble_size} if args.sweep == "theta" else {"theta": args.theta}
    output = run_sweep(args.sweep, args.pools, _numbers(args.values, args.value_type), args.out,
                       methods=args.methods, runs=args.runs, seed=args.seed, ks=args.ks,
                       progress=partial(print, flush=True), **fixed)
    print("wrote " + ", ".join(str(path) for path in output.files))
    return 0


def run_significance(args) -> int:
    output = write_significance(load_results(args.results), args.out, ours=args.ours.split(","), alpha=args.alpha)
    print(output.markdown)
    return 0


def run_compare(args) -> int:
    results = load_results(args.results)
    merged: dict[str, dict] = {}
    for result in results:  # several files per dataset (methods run separately) → one entry
        entry = merged.setdefault(result["dataset"], {**result, "methods": {}})
        entry["methods"].update(result["methods"])
    print(markdown_comparison(list(merged.values()), load_paper_scores(args.paper_scores), args.tolerance))
    return 0

