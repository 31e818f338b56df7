"""Human-readable tables of reproduction results, and the paper's published scores."""

from __future__ import annotations

import csv
from pathlib import Path

from lwec_tasks.core.errors import LwecInputError

#: Columns of a results table: (metric, criterion).
CELLS = (("nmi", "best_k"), ("nmi", "true_k"), ("ari", "best_k"), ("ari", "true_k"))


def load_paper_scores(path: str | Path) -> dict[tuple[str, str, str], dict]:
    """Read a published-scores CSV into {(dataset, METHOD, metric): {best_k: {mean, std}, true_k: {...}}}.

    Columns: dataset, method, metric, best_k_mean, best_k_std, true_k_mean, true_k_std.
    """
    path = Path(path)
    if not path.is_file():
        raise LwecInputError(f"paper scores file not found: {path}")
    table = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            key = (row["dataset"], row["method"].upper(), row["metric"].lower())
            table[key] = {c: {"mean": float(row[f"{c}_mean"]), "std": float(row[f"{c}_std"])}
                          for c in ("best_k", "true_k")}
    return table


def _cell(stats: dict | None) -> str:
    if not stats or stats.get("mean") is None:
        return "—"
    return f"{stats['mean']:.3f}±{stats['std']:.3f}"


def format_summary(result: dict, paper: dict | None = None) -> str:
    """Fixed-width table: one row per method (and the paper's row below it, if given)."""
    header = ["method", "NMI best-k", "NMI true-k", "ARI best-k", "ARI true-k", "seconds"]
    rows = []
    for name, summary in result["methods"].items():
        cells = [_cell(summary[m][c]) for m, c in CELLS]
        rows.append([name, *cells, f"{summary['seconds']['mean']:.2f}"])
        if paper is not None:
            published = [paper.get((result["dataset"], name, m), {}).get(c) for m, c in CELLS]
            if any(published):
                rows.append(["  paper", *[_cell(p) for p in published], ""])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        f"{result['dataset']} (N={result['n_objects']}, {result['runs']} runs, "
        f"M={result['ensemble_size']}, θ={result['theta']})",
        "  ".join(h.ljust(w) for h, w in zip(header, widths)),
    ]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def markdown_comparison(results: list[dict], paper: dict, tolerance: float = 0.03) -> str:
    """Markdown table: per dataset and method, ours vs paper for the four cells.

    A cell reads ``ours / paper`` and is marked **bold** when |ours − paper| > tolerance.
    """
    lines = ["| dataset | method | NMI best-k | NMI true-k | ARI best-k | ARI true-k | s/run |",
             "|---|---|---|---|---|---|---|"]
    for result in results:
        for name, summary in result["methods"].items():
            cells = []
            for metric, criterion in CELLS:
                ours = summary[metric][criterion]["mean"]
                published = paper.get((result["dataset"], name, metric), {}).get(criterion)
                if ours is None:
                    cells.append("—")
                    continue
                if not published:
                    cells.append(f"{ours:.3f} / —")
                    continue
                text = f"{ours:.3f} / {published['mean']:.3f}"
                cells.append(f"**{text}**" if abs(ours - published["mean"]) > tolerance else text)
            seconds = summary["seconds"]["mean"]
            lines.append(f"| {result['dataset']} | {name} | " + " | ".join(cells) + f" | {seconds:.2f} |")
    return "\n".join(lines)
