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

The orchestration — run a sweep on each pool, write the rows and the NMI and
ARI figures, write the significance tables — is here too
(:func:`sweep_pool`, :func:`write_sweep`, :func:`run_sweep`,
:func:`reproduce_to_file`, :func:`write_significance`), so the ``lwec study``
commands and the ``lwec-paper-studies`` flow write the same files.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from lwec_tasks.core.eci import DEFAULT_THETA
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.experiments.pools import Pool, load_pool
from lwec_tasks.experiments.reproduce import CRITERIA, DEFAULT_KS, METRICS, reproduce

#: θ values of the paper's parameter tables.
PAPER_THETAS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0)
#: Ensemble sizes for the robustness study (the paper plots M = 5 … 50).
PAPER_SIZES = (5, 10, 20, 30, 40, 50)
#: Significance level of the paper's t-tests.
ALPHA = 0.05


def _rows_from_result(result: dict, **extra) -> list[dict]:
    return [{"dataset": result["dataset"], **extra, "method": method, "metric": metric, "criterion": criterion,
             "mean": summary[metric][criterion]["mean"], "std": summary[metric][criterion]["std"],
             "seconds": summary["seconds"]["mean"]}
            for method, summary in result["methods"].items() for metric in METRICS for criterion in CRITERIA]


@dataclass(frozen=True)
class Sweep:
    """One of the paper's sweeps: the :func:`reproduce` argument it varies (also the row key and the figures'
    x axis), its symbol in progress lines, the type of its values, its file stem, name and x scale."""

    x: str
    symbol: str
    value_type: type
    stem: str
    label: str
    log_x: bool


#: The two sweeps by name (the row key each one varies).
SWEEPS = {
    "theta": Sweep("theta", "θ", float, "theta_sweep", "θ sweep", log_x=True),
    "ensemble_size": Sweep("ensemble_size", "M", int, "ensemble_size_sweep", "ensemble-size sweep", log_x=False),
}


def _vary_protocol(pool: Pool, sweep: Sweep, values: Sequence, progress: Callable[[str], None] | None,
                   **protocol) -> list[dict]:
    """:func:`reproduce` on ``pool`` once per value of the argument ``sweep.x``; the others are ``protocol``.

    Rows as :func:`_rows_from_result`, keyed by ``sweep.x`` = the value as ``sweep.value_type``;
    ``progress``, if given, hears "<pool>: <symbol> = <value>" before each run.
    """
    rows = []
    for value in values:
        if progress:
            progress(f"{pool.name}: {sweep.symbol} = {value}")
        result = reproduce(pool, **protocol, **{sweep.x: value})
        rows += _rows_from_result(result, **{sweep.x: sweep.value_type(value)})
    return rows


def theta_sweep(pool: Pool, thetas: Sequence[float] = PAPER_THETAS, *,
                methods: str | Sequence[str] = ("LWEA", "LWGP"), runs: int = 20, ensemble_size: int = 10,
                seed: int = 0, ks: Sequence[int] | str = DEFAULT_KS,
                progress: Callable[[str], None] | None = None) -> list[dict]:
    """Scores for every θ (same draws for every θ); rows keyed by dataset, theta, method, metric, criterion."""
    if not thetas:
        raise LwecInputError("give at least one θ")
    return _vary_protocol(pool, SWEEPS["theta"], thetas, progress,
                          methods=methods, runs=runs, ensemble_size=ensemble_size, seed=seed, ks=ks)


def ensemble_size_sweep(pool: Pool, sizes: Sequence[int] = PAPER_SIZES, *,
                        methods: str | Sequence[str] = ("LWEA", "LWGP", "EAC"), runs: int = 20,
                        theta: float = DEFAULT_THETA, seed: int = 0, ks: Sequence[int] | str = DEFAULT_KS,
                        progress: Callable[[str], None] | None = None) -> list[dict]:
    """Scores for every ensemble size M; rows keyed by dataset, ensemble_size, method, metric, criterion."""
    if not sizes:
        raise LwecInputError("give at least one ensemble size")
    too_big = [m for m in sizes if m > pool.n_candidates]
    if too_big:
        raise LwecInputError(f"ensemble size(s) {too_big} exceed the {pool.n_candidates} clusterings in pool "
                             f"{pool.name!r}")
    return _vary_protocol(pool, SWEEPS["ensemble_size"], sizes, progress,
                          methods=methods, runs=runs, theta=theta, seed=seed, ks=ks)


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


def significance(results: Sequence[dict], ours: Sequence[str] = ("LWEA", "LWGP"),
                 alpha: float = ALPHA) -> tuple[list[dict], list[dict]]:
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
                        tests.append({"dataset": dataset, "metric": metric, "criterion": criterion,
                                      "method": method, "baseline": baseline, "ours_mean": float(np.mean(a)),
                                      "baseline_mean": float(np.mean(b)), "p": p, "verdict": verdict})
    tally: dict[tuple[str, str, str], dict] = {}
    for row in tests:
        key = (row["metric"], row["method"], row["baseline"])
        entry = tally.setdefault(key, {"metric": key[0], "method": key[1], "baseline": key[2],
                                       "better": 0, "comparable": 0, "worse": 0})
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


def plot_sweep(rows: list[dict], x: str, path: str | Path, metric: str = "nmi", criterion: str = "best_k",
               log_x: bool = False) -> Path:
    """One panel per dataset: mean ``metric`` (± std band) against ``x`` (``theta`` or ``ensemble_size``).

    One line per method.
    """
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


# --- Orchestration shared by `lwec study` and the `lwec-paper-studies` flow -------------------------


#: Files of the significance study.
SIGNIFICANCE_STEMS = ("significance_tests", "significance_tally")
SIGNIFICANCE_MARKDOWN = "significance.md"


@dataclass(frozen=True)
class StudyOutput:
    """What a study wrote.

    Attributes
    ----------
    files : paths written, in order (CSV, JSON, then figures or markdown)
    rows : number of rows (sweep rows, or tally rows for significance)
    markdown : a short markdown report (a summary line; the tables for significance)
    """

    files: list[Path]
    rows: int
    markdown: str


def _sweep(name: str) -> Sweep:
    try:
        return SWEEPS[name]
    except KeyError:
        raise LwecInputError(f"unknown sweep {name!r}; one of {', '.join(SWEEPS)}") from None


def sweep_pool(sweep: str, source: str | Path, values: Sequence[float], *, methods: str | Sequence[str],
               runs: int = 20, ensemble_size: int = 10, theta: float = DEFAULT_THETA, seed: int = 0,
               ks: Sequence[int] | str = DEFAULT_KS, progress: Callable[[str], None] | None = None) -> list[dict]:
    """Load the pool at ``source`` and run ``sweep`` (``"theta"`` or ``"ensemble_size"``) over ``values``.

    ``ensemble_size`` is M of the θ sweep and ``theta`` the θ of the
    ensemble-size sweep; the other one is what varies.
    """
    protocol = dict(methods=methods, runs=runs, seed=seed, ks=ks, progress=progress)
    if _sweep(sweep).x == "theta":
        return theta_sweep(load_pool(source), values, ensemble_size=ensemble_size, **protocol)
    return ensemble_size_sweep(load_pool(source), values, theta=theta, **protocol)


def write_sweep(sweep: str, rows: list[dict], out_dir: str | Path) -> StudyOutput:
    """Write ``<stem>.csv``, ``<stem>.json`` and the NMI and ARI figures ``<metric>_vs_<x>.png`` of ``sweep``
    in ``out_dir``."""
    kind = _sweep(sweep)
    files = list(write_rows(rows, out_dir, kind.stem))
    for metric in METRICS:
        path = Path(out_dir, f"{metric}_vs_{kind.x}.png")
        files.append(plot_sweep(rows, kind.x, path, metric=metric, log_x=kind.log_x))
    names = ", ".join(path.name for path in files if path.suffix != ".json")
    return StudyOutput(files, len(rows), f"{kind.label}: {len(rows)} rows → {names}")


def run_sweep(sweep: str, sources: Sequence[str | Path], values: Sequence[float], out_dir: str | Path,
              **protocol) -> StudyOutput:
    """:func:`sweep_pool` on every pool, then :func:`write_sweep` of all rows.

    ``protocol`` holds :func:`sweep_pool`'s keyword arguments (methods, runs,
    ensemble_size, theta, seed, ks, progress).
    """
    rows = []
    for source in sources:
        rows += sweep_pool(sweep, source, values, **protocol)
    return write_sweep(sweep, rows, out_dir)


def reproduce_to_file(source: str | Path, out_dir: str | Path, *, methods: str | Sequence[str], runs: int = 20,
                      ensemble_size: int = 10, theta: float = DEFAULT_THETA, seed: int = 0,
                      ks: Sequence[int] | str = DEFAULT_KS, progress: Callable[[str], None] | None = None) -> Path:
    """Run the comparison protocol on the pool at ``source``; write and return ``<out>/reproduce_<name>.json``.

    The file is what ``lwec reproduce --json`` writes, so it feeds
    :func:`write_significance` like the command's output does.
    """
    pool = load_pool(source)
    result = reproduce(pool, runs=runs, ensemble_size=ensemble_size, theta=theta, seed=seed, methods=methods,
                       ks=ks, progress=progress)
    path = Path(out_dir, f"reproduce_{pool.name}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def load_results(paths: Sequence[str | Path]) -> list[dict]:
    """Reproduction summaries from JSON files written by ``lwec reproduce --json`` or :func:`reproduce_to_file`."""
    results = []
    for path in paths:
        try:
            results.append(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as error:
            raise LwecInputError(f"cannot read reproduction result {path}: {error}") from error
    return results


def write_significance(results: Sequence[dict | str | Path], out_dir: str | Path, *,
                       ours: Sequence[str] = ("LWEA", "LWGP"), alpha: float = ALPHA) -> StudyOutput:
    """t-tests of ``ours`` against the other methods, written to ``out_dir``.

    ``results`` are reproduction summaries or paths of their JSON files. Writes
    ``significance_tests.{csv,json}``, ``significance_tally.{csv,json}`` and
    ``significance.md`` (the paper's tables, NMI then ARI), which is also the
    returned markdown.
    """
    loaded = [r if isinstance(r, dict) else load_results([r])[0] for r in results]
    tests, tally = significance(loaded, ours=ours, alpha=alpha)
    tests_stem, tally_stem = SIGNIFICANCE_STEMS
    files = [*write_rows(tests, out_dir, tests_stem), *write_rows(tally, out_dir, tally_stem)]
    text = "\n\n".join(tally_markdown(tally, metric) for metric in METRICS)
    markdown_path = Path(out_dir, SIGNIFICANCE_MARKDOWN)
    markdown_path.write_text(text + "\n")
    files.append(markdown_path)
    return StudyOutput(files, len(tally), text)
