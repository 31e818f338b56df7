"""The paper's studies on top of the reproduction protocol.

- θ sweep (§V-B, Tables "performance of LWEA/LWGP with varying θ"):
  θ ∈ {0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4}, 20 runs, M = 10.
- ensemble-size sweep (§V-E, "Robustness to ensemble sizes"): M from 5 to 50,
  20 runs per M.
- significance (§V-D): two-sample t-test (p < 0.05) of LWEA/LWGP against each
  baseline per dataset and criterion (best-k, true-k), tallied as
  (significantly better / comparable / significantly worse).

Every study returns flat rows (lists of dicts) that go to CSV/JSON as they are;
:func:`plot_sweep` draws the figures.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from scipy import stats

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.experiments.pools import Pool
from lwec_tasks.experiments.reproduce import CRITERIA, METRICS, DEFAULT_KS, reproduce

#: θ values of the paper's parameter tables.
PAPER_THETAS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0)
#: Ensemble sizes for the robustness study (the paper plots M = 5 … 50).
PAPER_SIZES = (5, 10, 20, 30, 40, 50)
#: Significance level of the paper's t-tests.
ALPHA = 0.05


def _rows_from_result(result: dict, **extra) -> list[dict]:
    rows = []
    for method, summary in result["methods"].items():
        for metric in METRICS:
            for criterion in CRITERIA:
                cell = summary[metric][criterion]
                rows.append(
                    {
                        "dataset": result["dataset"],
                        **extra,
                        "method": method,
                        "metric": metric,
                        "criterion": criterion,
                        "mean": cell["mean"],
                        "std": cell["std"],
                        "seconds": summary["seconds"]["mean"],
                    }
                )
    return rows


def theta_sweep(
    pool: Pool,
    thetas: Sequence[float] = PAPER_THETAS,
    *,
    methods: str | Sequence[str] = ("LWEA", "LWGP"),
    runs: int = 20,
    ensemble_size: int = 10,
    seed: int = 0,
    ks: Sequence[int] | str = DEFAULT_KS,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """Scores for every θ (same draws for every θ); rows keyed by dataset, theta, method, metric, criterion."""
    if not thetas:
        raise LwecInputError("give at least one θ")
    rows = []
    for theta in thetas:
        if progress:
            progress(f"{pool.name}: θ = {theta}")
        result = reproduce(
            pool, runs=runs, ensemble_size=ensemble_size, theta=theta, seed=seed, methods=methods, ks=ks
        )
        rows += _rows_from_result(result, theta=float(theta))
    return rows


def ensemble_size_sweep(
    pool: Pool,
    sizes: Sequence[int] = PAPER_SIZES,
    *,
    methods: str | Sequence[str] = ("LWEA", "LWGP", "EAC"),
    runs: int = 20,
    theta: float = 0.4,
    seed: int = 0,
    ks: Sequence[int] | str = DEFAULT_KS,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """Scores for every ensemble size M; rows keyed by dataset, ensemble_size, method, metric, criterion."""
    if not sizes:
        raise LwecInputError("give at least one ensemble size")
    too_big = [m for m in sizes if m > pool.n_candidates]
    if too_big:
        raise LwecInputError(
            f"ensemble size(s) {too_big} exceed the {pool.n_candidates} clusterings in pool {pool.name!r}"
        )
    rows = []
    for size in sizes:
        if progress:
            progress(f"{pool.name}: M = {size}")
        result = reproduce(pool, runs=runs, ensemble_size=size, theta=theta, seed=seed, methods=methods, ks=ks)
        rows += _rows_from_result(result, ensemble_size=int(size))
    return rows


def t_test(ours: Sequence[float], theirs: Sequence[float], alpha: float = ALPHA) -> tuple[float, str]:
    """Two-sample t-test; return (p, verdict) with verdict "better" / "comparable" / "worse" for ``ours``.

    Identical samples (zero variance on both sides and equal means) are "comparable" with p = 1.
    """
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if len(a) < 2 or len(b) < 2:
        raise LwecInputError("a t-test needs at least 2 runs per method")
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        p = 1.0 if a[0] == b[0] else 0.0
    else:
        p = float(stats.ttest_ind(a, b).pvalue)
    if p >= alpha:
        return p, "comparable"
    return p, "better" if a.mean() > b.mean() else "worse"


def significance(
    results: Sequence[dict], ours: Sequence[str] = ("LWEA", "LWGP"), alpha: float = ALPHA
) -> tuple[list[dict], list[dict]]:
    """t-tests of each of ``ours`` against every other method, per dataset, metric and criterion.

    Parameters
    ----------
    results : reproduction summaries (``reproduce`` output), one per dataset;
        several summaries of the same dataset (e.g. methods run separately with
        the same seed) are merged
    ours : methods to test against the rest
    alpha : significance level

    Returns
    -------
    (tests, tally): one row per test (dataset, metric, criterion, method,
    baseline, ours_mean, baseline_mean, p, verdict) and one row per
    (metric, method, baseline) with the counts better/comparable/worse over
    datasets × criteria, as in the paper's significance tables.
    """
    merged: dict[str, dict] = {}
    for result in results:
        merged.setdefault(result["dataset"], {}).update(result["methods"])
    tests = []
    for dataset, methods in merged.items():
        for method in (m for m in ours if m in methods):
            for baseline in (b for b in methods if b not in ours):
                for metric in METRICS:
                    for criterion in CRITERIA:
                        a = methods[method]["per_run"][metric][criterion]
                        b = methods[baseline]["per_run"][metric][criterion]
                        if any(v is None for v in (*a, *b)):
                            continue
                        p, verdict = t_test(a, b, alpha)
                        tests.append(
                            {
                                "dataset": dataset,
                                "metric": metric,
                                "criterion": criterion,
                                "method": method,
                                "baseline": baseline,
                                "ours_mean": float(np.mean(a)),
                                "baseline_mean": float(np.mean(b)),
                                "p": p,
                                "verdict": verdict,
                            }
                        )
    tally: dict[tuple[str, str, str], dict] = {}
    for row in tests:
        key = (row["metric"], row["method"], row["baseline"])
        entry = tally.setdefault(
            key, {"metric": key[0], "method": key[1], "baseline": key[2], "better": 0, "comparable": 0, "worse": 0}
        )
        entry[row["verdict"]] += 1
    return tests, list(tally.values())


def write_rows(rows: list[dict], directory: str | Path, stem: str) -> tuple[Path, Path]:
    """Write rows as ``stem.csv`` and ``stem.json`` in ``directory``; return both paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = directory / f"{stem}.csv", directory / f"{stem}.json"
    json_path.write_text(json.dumps(rows, indent=1) + "\n")
    if rows:
        with csv_path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        csv_path.write_text("")
    return csv_path, json_path


def plot_sweep(
    rows: list[dict], x: str, path: str | Path, metric: str = "nmi", criterion: str = "best_k",
    log_x: bool = False,
) -> Path:
    """One panel per dataset: mean ``metric`` (± std band) against ``x`` (``theta`` or ``ensemble_size``), a line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [r for r in rows if r["metric"] == metric and r["criterion"] == criterion]
    datasets = list(dict.fromkeys(r["dataset"] for r in chosen))
    if not datasets:
        raise LwecInputError(f"no {metric} {criterion} rows to plot")
    columns = min(5, len(datasets))
    n_rows = int(np.ceil(len(datasets) / columns))
    figure, axes = plt.subplots(n_rows, columns, figsize=(3.2 * columns, 2.8 * n_rows), squeeze=False)
    label_x = {"theta": "θ", "ensemble_size": "ensemble size M"}.get(x, x)
    for axis, dataset in zip(axes.ravel(), datasets):
        for method in dict.fromkeys(r["method"] for r in chosen if r["dataset"] == dataset):
            points = sorted((r[x], r["mean"], r["std"]) for r in chosen
                            if r["dataset"] == dataset and r["method"] == method and r["mean"] is not None)
            if not points:
                continue
            xs, means, stds = (np.array(v, dtype=float) for v in zip(*points))
            axis.plot(xs, means, marker="o", markersize=3, label=method)
            axis.fill_between(xs, means - stds, means + stds, alpha=0.15)
        if log_x:
            axis.set_xscale("log")
        axis.set_title(dataset)
        axis.set_xlabel(label_x)
        axis.set_ylabel(f"{metric.upper()} ({criterion.replace('_', '-')})")
        axis.grid(alpha=0.3)
    for axis in axes.ravel()[len(datasets):]:
        axis.set_visible(False)
    axes.ravel()[0].legend(fontsize=7)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def tally_markdown(tally: list[dict], metric: str) -> str:
    """The paper's significance table: rows = our methods, columns = baselines, cells (better/comparable/worse)."""
    rows = [t for t in tally if t["metric"] == metric]
    ours = list(dict.fromkeys(t["method"] for t in rows))
    baselines = list(dict.fromkeys(t["baseline"] for t in rows))
    cell = {(t["method"], t["baseline"]): f"({t['better']}/{t['comparable']}/{t['worse']})" for t in rows}
    lines = ["| " + metric.upper() + " | " + " | ".join(baselines) + " |", "|---" * (len(baselines) + 1) + "|"]
    for method in ours:
        lines.append(f"| {method} | " + " | ".join(cell.get((method, b), "—") for b in baselines) + " |")
    return "\n".join(lines)
