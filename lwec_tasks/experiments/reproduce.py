"""The paper's evaluation protocol (§V-A) on a base-clustering pool.

For each of R runs: draw M of the pool's P candidate clusterings at random
(seeded by (seed, run), the same draw for every method), run each consensus
method for every k in ks, and score every cut against the ground truth with
NMI ("max" normalisation, as the paper) and ARI. best-k is the best score over
ks (per metric), true-k the score at k = number of classes. For LWEA and LWGP,
auto-k is the score at the k chosen from the ensemble alone
(:func:`lwec_tasks.core.auto_k.select_k`, over its default candidates
2..min(50, ...), independent of ks). Report the mean and standard deviation
over runs.
"""

from __future__ import annotations

import numbers
import re
import time
from collections.abc import Callable, Sequence

import numpy as np

from lwec_tasks.core.auto_k import auto_consensus
from lwec_tasks.core.eci import DEFAULT_THETA
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.metrics import coded_partition_scores
from lwec_tasks.core.validation import check_theta
from lwec_tasks.experiments.pools import Pool
from lwec_tasks.methods import Method, parse_methods, run_method

METRICS = ("nmi", "ari")
CRITERIA = ("best_k", "true_k")
#: The extra criterion of the methods that can choose k themselves.
AUTO_K = "auto_k"
AUTO_K_METHODS = ("LWEA", "LWGP")
DEFAULT_KS = tuple(range(2, 31))


def parse_ks(text: str | Sequence[int]) -> list[int]:
    """Parse ``"2..30"``, ``"2,4,8"`` or a mix (``"2..10,20,30"``) into sorted unique ks."""
    if not isinstance(text, str):
        ks = [int(k) for k in text]
    else:
        ks = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            match = re.fullmatch(r"(\d+)\s*(?:\.\.|-)\s*(\d+)", part)
            if match:
                low, high = int(match.group(1)), int(match.group(2))
                if low > high:
                    raise LwecInputError(f"--ks range {part!r} is empty (start > end)")
                ks.extend(range(low, high + 1))
            elif part.isdigit():
                ks.append(int(part))
            else:
                raise LwecInputError(f"--ks: cannot read {part!r}; use e.g. 2..30 or 2,5,10")
    ks = sorted(set(ks))
    if not ks:
        raise LwecInputError("--ks is empty; give e.g. 2..30")
    if ks[0] < 2:
        raise LwecInputError(f"every k must be >= 2, got {ks[0]}")
    return ks


def draw_columns(n_candidates: int, ensemble_size: int, seed: int, run: int) -> np.ndarray:
    """The M pool columns used in ``run``: a uniform draw without replacement seeded by (seed, run)."""
    rng = np.random.default_rng([int(seed), int(run)])
    return np.sort(rng.choice(n_candidates, size=ensemble_size, replace=False))


def method_seed(seed: int, run: int) -> int:
    """Seed for the random parts of every method in ``run`` (derived from (seed, run))."""
    return int(np.random.SeedSequence([int(seed), int(run), 1]).generate_state(1)[0] & 0x7FFFFFFF)


def check_protocol(pool: Pool, runs: int, ensemble_size: int) -> None:
    """Raise :class:`LwecInputError` if the protocol cannot run on ``pool``."""
    if pool.truth is None:
        raise LwecInputError(f"pool {pool.name!r} has no ground truth (no 'gt'); reproduce scores NMI/ARI against "
                             "it — add a ground-truth column/variable, or cluster without scores via 'lwec run'")
    if isinstance(runs, bool) or int(runs) < 1:
        raise LwecInputError(f"--runs must be >= 1, got {runs}")
    if isinstance(ensemble_size, bool) or int(ensemble_size) < 1:
        raise LwecInputError(f"--ensemble-size must be >= 1, got {ensemble_size}")
    if ensemble_size > pool.n_candidates:
        raise LwecInputError(f"--ensemble-size {ensemble_size} is larger than the pool: {pool.name!r} has only "
                             f"{pool.n_candidates} base clusterings to draw from")


def reproduce(pool: Pool, *, runs: int = 20, ensemble_size: int = 10, theta: float = DEFAULT_THETA, seed: int = 0,
              methods: str | Sequence[str] = ("LWEA", "LWGP", "EAC"), ks: Sequence[int] | str = DEFAULT_KS,
              auto_k: bool = True, progress: Callable[[str], None] | None = None) -> dict:
    """Run the protocol and return the summary (the ``--json`` document).

    Parameters
    ----------
    pool : the pool (must have ground truth)
    runs : R, number of random ensembles
    ensemble_size : M, base clusterings per ensemble (≤ pool columns)
    theta : θ for LWEA/LWGP
    seed : master seed; run r uses seeds derived from (seed, r)
    methods : paper names, e.g. "LWEA,LWGP,EAC"
    ks : numbers of clusters to cut, e.g. range(2, 31) or "2..30"
    auto_k : also choose k from the ensemble alone for LWEA and LWGP and score that cut (default True; on
        large pools it costs several times the cuts themselves)
    progress : called with one line of text after each method run

    Returns
    -------
    dict with keys dataset, n_objects, runs, ensemble_size, theta, seed, ks,
    n_classes, draws (pool columns per run) and methods: for each method
    ``{"nmi": {"best_k": {"mean", "std"}, "true_k": {...}}, "ari": {...},
    "seconds": {"mean", "std"}, "per_run": {...}}``. With ``auto_k``, LWEA and LWGP also get
    ``"auto_k": {"mean", "std"}`` under "nmi" and "ari", ``"auto_k_chosen":
    {"mean", "std"}`` (the chosen k) and, in per_run, ``[metric]["auto_k"]`` and
    ``"auto_k_chosen"`` (one entry per run). true-k entries are None when the
    number of classes is not among ks. std is the sample standard deviation
    (ddof=1) over runs, 0 for one run.
    """
    theta = check_theta(theta)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise LwecInputError(f"seed must be a non-negative integer, got {seed!r}")
    chosen: list[Method] = parse_methods(methods)
    ks = parse_ks(ks)
    check_protocol(pool, runs, ensemble_size)
    runs, ensemble_size = int(runs), int(ensemble_size)
    per_run = {m.name: _empty_record(auto_k and m.name in AUTO_K_METHODS) for m in chosen}
    draws = []
    for run in range(runs):
        columns = draw_columns(pool.n_candidates, ensemble_size, seed, run)
        draws.append(columns.tolist())
        labels = pool.members[:, columns]
        for method in chosen:
            start = time.perf_counter()
            # A fresh encoding per method, so each method's time includes it.
            try:
                cuts = run_method(method, Ensemble(labels), ks, theta=theta, random_state=method_seed(seed, run))
            except LwecInputError as error:
                raise LwecInputError(f"run {run + 1}/{runs}, method {method.name}, pool columns "
                                     f"{columns.tolist()}: {error}") from None
            seconds = time.perf_counter() - start
            _record(per_run[method.name], cuts, ks, pool.truth, seconds)
            if auto_k and method.name in AUTO_K_METHODS:
                _record_auto_k(per_run[method.name], method.name, labels, theta, method_seed(seed, run),
                               pool.truth)
            if progress is not None:
                nmi_best = per_run[method.name]["nmi"]["best_k"][-1]
                progress(f"run {run + 1}/{runs} {method.name} {seconds:.2f} s (NMI best-k {nmi_best:.3f})")
    return {
        "dataset": pool.name,
        "n_objects": int(pool.n_objects),
        "runs": runs,
        "ensemble_size": ensemble_size,
        "theta": theta,
        "seed": int(seed),
        "ks": ks,
        "n_classes": int(pool.n_classes),
        "draws": draws,
        "methods": {name: _summarise(record) for name, record in per_run.items()},
    }


def _empty_record(auto_k: bool = False) -> dict:
    criteria = (*CRITERIA, AUTO_K) if auto_k else CRITERIA
    record = {metric: {c: [] for c in criteria} for metric in METRICS}
    record["chosen_k"] = {metric: [] for metric in METRICS}
    record["seconds"] = []
    if auto_k:
        record["auto_k_chosen"] = []
    return record


def _record_auto_k(record: dict, method: str, labels: np.ndarray, theta: float, seed: int,
                   truth: np.ndarray) -> None:
    """Choose k from the ensemble alone (same seed as the method's run) and score that cut."""
    selection, chosen = auto_consensus(Ensemble(labels), method, theta, random_state=seed)
    scores = cut_scores(chosen[:, None], truth)
    for metric in METRICS:
        record[metric][AUTO_K].append(float(scores[metric][0]))
    record["auto_k_chosen"].append(int(selection.k))


def cut_scores(cuts: np.ndarray, truth: np.ndarray) -> dict[str, np.ndarray]:
    """NMI ("max" normalisation) and ARI of every column of ``cuts`` against ``truth``.

    Same values as :func:`lwec_tasks.nmi` / :func:`lwec_tasks.ari`, computed from
    one contingency table per column (:func:`~lwec_tasks.core.metrics.coded_partition_scores`:
    the protocol scores 2 × |ks| × methods labelings per run, which dominates its
    time on large pools otherwise).

    Returns
    -------
    {"nmi": (len(ks),), "ari": (len(ks),)}
    """
    _, truth_codes = np.unique(truth, return_inverse=True)
    scores = np.array([coded_partition_scores(np.unique(cuts[:, j], return_inverse=True)[1], truth_codes)
                       for j in range(cuts.shape[1])]).reshape(-1, 2)
    return {"nmi": scores[:, 0], "ari": scores[:, 1]}


def _record(record: dict, cuts: np.ndarray, ks: list[int], truth: np.ndarray, seconds: float) -> None:
    scores = cut_scores(cuts, truth)
    true_k = len(np.unique(truth))
    for metric in METRICS:
        values = scores[metric]
        best = int(np.argmax(values))  # ties: the smallest k
        record[metric]["best_k"].append(float(values[best]))
        record[metric]["true_k"].append(float(values[ks.index(true_k)]) if true_k in ks else None)
        record["chosen_k"][metric].append(int(ks[best]))
    record["seconds"].append(float(seconds))


def mean_std(values: Sequence[float | None]) -> dict:
    """{"mean", "std"} of the values (sample std, ddof=1; 0 for one value); None if any is None."""
    if not values or any(v is None for v in values):
        return {"mean": None, "std": None}
    array = np.asarray(values, dtype=np.float64)
    std = float(array.std(ddof=1)) if len(array) > 1 else 0.0
    return {"mean": float(array.mean()), "std": std}


def _summarise(record: dict) -> dict:
    summary = {metric: {c: mean_std(values) for c, values in record[metric].items()} for metric in METRICS}
    if "auto_k_chosen" in record:
        summary["auto_k_chosen"] = mean_std(record["auto_k_chosen"])
    summary["seconds"] = mean_std(record["seconds"])
    summary["per_run"] = record
    return summary
