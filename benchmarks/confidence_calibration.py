"""How the calibrated row confidence was chosen: candidate confidences judged by held-out calibration.

The question a row's confidence answers: does the row's label agree with the majority truth of its consensus
cluster? A calibrated confidence p means that among rows given about p, a share of about p agree. Judged by
the expected calibration error over ten equal-width bins (ECE: Σ_bins (rows in bin / N) · |mean confidence −
share agreeing|) and by ROC AUC (how well the number ranks agreeing rows above the others).

Data (two families, none of them the 1M-row acceptance blobs):

* ``battery``: the clustering battery's development half (``../shared/data/battery``, every set, all ≤ 20k
  rows), noise points (label 0 of labels0) left out, k = labels0's number of clusters;
* ``synthetic``: overlapping blobs at 20k and 100k rows (16 features, 20 centres, std 5 and 6; the 100k ones
  take the default mix ~7 CPU-minutes each: ``--no-produce`` scores what is cached), anisotropic
  (elongated) clusters, 50 features of which 40 pure noise, very unequal cluster sizes.

Each data set is z-scored, given M = 10 base clusterings from ``lwec run``'s default generator mix
(:data:`~lwec_tasks.core.mixes.RUN_DEFAULT_MIX`, seed 0) and cut by LWEA and LWGP at the true k. Per row:
the margin and the share of :mod:`lwec_tasks.core.confidence`, and the run-level terms computed from the
base-by-consensus overlap counts (:func:`run_terms`).

Kept: ``logit(m),logit(s)`` (with features) and ``no features: logit(s)`` (runs on base label columns), fixed
maps whose constants, fitted on every data set, are :data:`lwec_tasks.core.confidence.CALIBRATION` and
``SHARE_CALIBRATION``; the ``shipped`` column scores those constants (in sample, for checking the code path);
``levelled`` is what a run stores: the shipped map given the posteriors' level
(:mod:`lwec_tasks.core.confidence_level`) when the mixture fits, its fit floor chosen held out too.

Validation: leave one data set out (both methods' rows), fit a candidate's constants on every other data set of
both families (each data set × method weighted alike), score the held-out one. Printed: per data set and
method the held-out ECE and AUC of the old confidence (margin × share) and of each candidate; per family the
mean and worst; then the constants fitted on all data sets (the ones shipped).

    python -m benchmarks.confidence_calibration [--battery DIR] [--cache DIR] [--jobs 2] [--no-produce]

The ensembles and consensus labels are cached in ``--cache`` (default ``/tmp/lwec_confidence_calibration``):
a second run only refits.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

DEFAULT_BATTERY = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "battery"
DEFAULT_CACHE = Path("/tmp/lwec_confidence_calibration")
BINS = 10
#: Rows per data set × method used to fit a candidate (a seeded sample; every row is scored).
FIT_ROWS = 4000


# --------------------------------------------------------------------------------------------------- data sets
def synthetic_sets() -> dict:
    """name → zero-argument loader of (X, y)."""
    from sklearn import datasets

    def blobs(n, d, centres, std, seed):
        return lambda: datasets.make_blobs(n_samples=n, n_features=d, centers=centres, cluster_std=std,
                                           random_state=seed)

    def anisotropic(n, d, centres, std, seed):
        def load():
            X, y = datasets.make_blobs(n_samples=n, n_features=d, centers=centres, cluster_std=std,
                                       random_state=seed)
            rng = np.random.default_rng(seed)
            rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
            stretch = np.geomspace(4.0, 0.5, d)  # elongated along a few directions, thin along others
            return X @ rotation @ np.diag(stretch) @ rotation.T, y
        return load

    def noisy(n, informative, noise, centres, std, seed):
        def load():
            X, y = datasets.make_blobs(n_samples=n, n_features=informative, centers=centres, cluster_std=std,
                                       random_state=seed)
            extra = np.random.default_rng(seed).normal(scale=X.std(), size=(n, noise))
            return np.hstack([X, extra]), y
        return load

    def unequal(sizes, d, std, seed):
        return lambda: datasets.make_blobs(n_samples=list(sizes), n_features=d, cluster_std=std,
                                           random_state=seed)

    return {
        "anisotropic 30k d8 c8 s13": anisotropic(30_000, 8, 8, 2.0, 13),
        "noise 30k d10+40 c10 s14": noisy(30_000, 10, 40, 10, 3.0, 14),
        "unequal 30k d8 c8 s15": unequal((16_000, 7_000, 3_500, 1_800, 900, 450, 250, 100), 8, 3.0, 15),
        "blobs 20k d16 c20 std6 s11": blobs(20_000, 16, 20, 6.0, 11),
        "blobs 20k d16 c20 std5 s12": blobs(20_000, 16, 20, 5.0, 12),
        "blobs 100k d16 c20 std6 s11": blobs(100_000, 16, 20, 6.0, 11),
        "blobs 100k d16 c20 std5 s12": blobs(100_000, 16, 20, 5.0, 12),
    }


def battery_sets(directory: Path) -> dict:
    from benchmarks.battery import find_sets, load_matrix, reference_labellings

    def load(name):
        def read():
            X = load_matrix(directory / f"{name}.data.gz")
            y = reference_labellings(directory, name)[0]
            keep = y != 0
            return X[keep], y[keep]
        return read

    return {name: load(name) for name in find_sets(directory)} if directory.is_dir() else {}


def _rows_in_name(name: str) -> int:
    """Rows of a synthetic set, read from its name ("blobs 20k ...")."""
    return int(name.split()[1].rstrip("k")) * 1000


def cache_path(cache: Path, name: str) -> Path:
    return cache / (name.replace("/", "_").replace(" ", "_") + ".npz")


def load_set(family: str, name: str, battery: Path):
    """(X, y) of a data set by its family and name."""
    return (synthetic_sets() if family == "synthetic" else battery_sets(battery))[name]()


def produce(family: str, name: str, battery: Path, cache: Path) -> str:
    """Base clusterings (default mix, M = 10, seed 0), LWEA and LWGP at the true k; cached as npz."""
    from benchmarks.battery import standardise
    from lwec_tasks.core.base_clusterings import fit_base_clusterings
    from lwec_tasks.core.ensemble import Ensemble
    from lwec_tasks.core.lwea import lwea
    from lwec_tasks.core.lwgp import lwgp
    from lwec_tasks.core.mixes import RUN_DEFAULT_MIX

    path = cache_path(cache, name)
    if path.exists():
        return f"{name}: cached"
    started = time.perf_counter()
    X, y = load_set(family, name, battery)
    Z = standardise(np.asarray(X, dtype=np.float64))
    _, y = np.unique(np.asarray(y), return_inverse=True)
    k = int(y.max()) + 1
    base = fit_base_clusterings(Z, 10, random_state=0, generators=RUN_DEFAULT_MIX, n_jobs=1).labels
    ensemble = Ensemble(base)
    labels = {"lwea": lwea(ensemble, [k])[:, 0], "lwgp": lwgp(ensemble, [k], random_state=0)[:, 0]}
    np.savez(path, Z=Z.astype(np.float32), y=y, base=np.asarray(base, dtype=np.int64), **labels)
    return f"{name}: {len(Z)} rows, {time.perf_counter() - started:.0f} s"


# ------------------------------------------------------------------------------------------------ per-row terms
def row_terms(Z: np.ndarray, base: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray | float]:
    """What a run has for each row (margin, share, vote) and the run-level terms, through the shipped code."""
    from lwec_tasks.core.confidence import ClusterSums, base_shares, centre_margin, ensemble_share

    _, labels = np.unique(labels, return_inverse=True)
    k = int(labels.max()) + 1
    Z = np.asarray(Z, dtype=np.float64)
    sums = ClusterSums.of(Z, labels, k)
    offsets = np.concatenate([[0], np.cumsum(base.max(axis=0) + 1)])
    codes = (base + offsets[:-1]).T
    overlap = np.zeros((offsets[-1], k), np.int64)
    for column in codes:
        np.add.at(overlap, (column, labels), 1)
    sizes = overlap.sum(axis=1)
    shares = base_shares(overlap, sizes)
    out = {"margin": centre_margin(Z, labels, sums.means, sums.counts > 0),
           "share": ensemble_share(codes, labels, shares), "labels": labels,
           "posterior_sph": gaussian_posterior(Z, labels, sums, spherical=True)[0]}
    out["posterior"], own_is_likeliest = gaussian_posterior(Z, labels, sums, spherical=False)
    out["gaussian_fit"] = float(own_is_likeliest.mean())
    majority = np.zeros_like(shares)
    majority[np.arange(len(overlap)), overlap.argmax(axis=1)] = 1.0
    out["vote"] = ensemble_share(codes, labels, majority)  # fraction of base clusters whose majority is the row's
    out.update(run_terms(overlap, base.shape[1]))
    return out


def gaussian_posterior(Z: np.ndarray, labels: np.ndarray, sums, spherical: bool,
                       block: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """(n,) each row's posterior probability of its own cluster under a mixture of Gaussians fitted to the
    clusters by their sums alone: weights the cluster shares, means, and per-feature (or, ``spherical``, one
    mean) variance of each cluster's rows, floored at 1e-3 of the whole table's; and (n,) bool whether the
    row's own cluster is the likeliest under that mixture."""
    counts = sums.counts.astype(np.float64)
    present = counts > 0
    means = sums.means
    variances = sums.squares / np.maximum(counts, 1)[:, None] - means**2
    floor = 1e-3 * max(float(Z.var(axis=0).mean()), 1e-12)
    if spherical:
        variances = np.repeat(variances.mean(axis=1, keepdims=True), Z.shape[1], axis=1)
    variances = np.maximum(variances, floor)
    log_weight = np.where(present, np.log(np.maximum(counts, 1) / counts.sum()), -np.inf)
    constant = log_weight - 0.5 * np.log(variances).sum(axis=1)
    out = np.empty(len(Z))
    likeliest = np.empty(len(Z), bool)
    for start in range(0, len(Z), block):
        rows = Z[start:start + block]
        scores = constant[None, :] - 0.5 * np.einsum("nkd,kd->nk", (rows[:, None, :] - means[None]) ** 2,
                                                     1.0 / variances)
        scores -= scores.max(axis=1, keepdims=True)
        probabilities = np.exp(scores)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        out[start:start + block] = probabilities[np.arange(len(rows)), labels[start:start + block]]
        likeliest[start:start + block] = probabilities.argmax(axis=1) == labels[start:start + block]
    return out, likeliest


def run_terms(overlap: np.ndarray, n_columns: int) -> dict[str, float]:
    """Run-level terms from the (n_c, k) base-by-consensus overlap counts of M = ``n_columns`` base clusterings
    (every row counted once per column): ``mean_share`` the rows' mean share(x) (Σ_b Σ_j overlap² / |b|, over
    N·M) and ``mean_vote`` the rows' mean fraction of base clusters whose largest consensus part is the row's
    cluster (Σ_b max_j overlap, over N·M). Exact: no pass over the rows."""
    overlap = np.asarray(overlap, dtype=np.float64)
    total = overlap.sum()
    if total <= 0:
        return {"mean_share": 1.0, "mean_vote": 1.0}
    sizes = np.maximum(overlap.sum(axis=1), 1.0)
    return {"mean_share": float(np.sum(overlap**2 / sizes[:, None]) / total),
            "mean_vote": float(np.sum(overlap.max(axis=1)) / total)}


def majority_agrees(labels: np.ndarray, truth: np.ndarray) -> np.ndarray:
    joint = np.zeros((labels.max() + 1, truth.max() + 1), np.int64)
    np.add.at(joint, (labels, truth), 1)
    return joint.argmax(axis=1)[labels] == truth


def ece(confidence: np.ndarray, good: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error over ``bins`` equal-width bins of [0, 1]."""
    which = np.minimum((np.asarray(confidence) * bins).astype(int), bins - 1)
    n = np.bincount(which, minlength=bins)
    mean = np.bincount(which, weights=confidence, minlength=bins)
    hits = np.bincount(which, weights=good.astype(float), minlength=bins)
    used = n > 0
    return float(np.sum(np.abs(mean[used] - hits[used])) / len(confidence))


def auc(confidence: np.ndarray, good: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(good, confidence)) if 0 < good.mean() < 1 else float("nan")


def load_case(path: Path, method: str) -> dict:
    data = np.load(path)
    terms = row_terms(data["Z"], data["base"], data[method])
    terms["good"] = majority_agrees(terms.pop("labels"), data["y"])
    return terms


# ------------------------------------------------------------------------------------------------- candidates
def design(terms: dict, features: tuple[str, ...]) -> np.ndarray:
    """(n, len(features)) logits of the named terms (per row or run-level, broadcast)."""
    from lwec_tasks.core.confidence import logit

    n = len(terms["margin"])
    return np.column_stack([np.broadcast_to(logit(np.asarray(terms[f], dtype=np.float64)), (n,))
                            for f in features])


#: Candidate logistic maps: the logits of these terms (plus an intercept) → confidence.
CANDIDATES = {
    "logit(m),logit(s)": ("margin", "share"),
    "logit(p),logit(s)": ("posterior", "share"),
    "logit(p),logit(m),logit(s)": ("posterior", "margin", "share"),
    "logit(psph),logit(s)": ("posterior_sph", "share"),
    "logit(psph),logit(m),logit(s)": ("posterior_sph", "margin", "share"),
    "+mean share": ("margin", "share", "mean_share"),
    "+mean vote": ("margin", "share", "mean_vote"),
    "+mean share,vote": ("margin", "share", "mean_share", "mean_vote"),
    "logit(m),logit(vote),mean share": ("margin", "vote", "mean_share"),
    "no features: logit(s),mean share": ("share", "mean_share"),
    "no features: logit(s)": ("share",),
}
#: The candidate kept (with features).
CHOSEN = "logit(m),logit(s)"
#: Candidates used as they are (no constants).
RAW = {"vote": lambda t: t["vote"], "share": lambda t: t["share"], "posterior": lambda t: t["posterior"],
       "posterior_sph": lambda t: t["posterior_sph"]}


#: Terms of a row whose coefficient is kept ≥ 0 (the confidence rises with them).
ROW_TERMS = ("margin", "share", "vote", "posterior", "posterior_sph")


def fit(cases: list[dict], features: tuple[str, ...], seed: int = 0, weights: list[float] | None = None) -> np.ndarray:
    """(len(features) + 1,) logistic coefficients (intercept last) over ``cases``, each weighted alike, by
    weighted log-loss with the row terms' coefficients kept ≥ 0 (L-BFGS-B)."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    Xs, ys, ws = [], [], []
    for case in cases:
        n = len(case["margin"])
        rows = rng.choice(n, FIT_ROWS, replace=False) if n > FIT_ROWS else np.arange(n)
        Xs.append(design(case, features)[rows])
        ys.append(case["good"][rows])
        ws.append(np.full(len(rows), (1.0 if weights is None else weights[len(ws)] * len(cases)) / len(rows)))
    X = np.column_stack([np.vstack(Xs), np.ones(sum(len(y) for y in ys))])
    y, w = np.concatenate(ys).astype(float), np.concatenate(ws) / len(cases)

    def loss(beta):
        z = X @ beta
        p = 1.0 / (1.0 + np.exp(-z))
        value = np.sum(w * (np.logaddexp(0.0, z) - y * z)) + 1e-6 * beta @ beta
        return value, X.T @ (w * (p - y)) + 2e-6 * beta

    bounds = [(0.0, None) if f in ROW_TERMS else (None, None) for f in features] + [(None, None)]
    return minimize(loss, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", bounds=bounds).x


def family_weights(training: list[tuple[str, dict]]) -> list[float]:
    """Each case's weight in a fit: every family alike, and within one every data set × method alike."""
    per_family = {family: sum(1 for f, _ in training if f == family) for family, _ in training}
    return [1.0 / (len(per_family) * per_family[family]) for family, _ in training]


def apply(terms: dict, features: tuple[str, ...], coefficients: np.ndarray) -> np.ndarray:
    z = design(terms, features) @ coefficients[:-1] + coefficients[-1]
    return 1.0 / (1.0 + np.exp(-z))


def old_confidence(terms: dict) -> np.ndarray:
    return terms["margin"] * terms["share"]


# ------------------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battery", type=Path, default=Path(os.environ.get("LWEC_BATTERY_DIR", DEFAULT_BATTERY)))
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only-produce", action="store_true", help="build the cached ensembles and stop")
    parser.add_argument("--no-produce", action="store_true", help="score the cached data sets only")
    parser.add_argument("--family", choices=("synthetic", "battery"), help="only this family")
    parser.add_argument("--max-rows", type=int, default=None,
                        help="leave out synthetic sets of more rows than this (their names say how many)")
    parser.add_argument("--figure", type=Path, help="also draw the held-out reliability diagram (PNG) here")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    families = {"synthetic": synthetic_sets(), "battery": battery_sets(args.battery)}
    if args.family:
        families = {args.family: families[args.family]}
    if args.max_rows is not None:
        families["synthetic"] = {name: load for name, load in families.get("synthetic", {}).items()
                                 if _rows_in_name(name) <= args.max_rows}
    if args.no_produce:
        families = {family: {name: load for name, load in sets.items() if cache_path(args.cache, name).exists()}
                    for family, sets in families.items()}
        families = {family: sets for family, sets in families.items() if sets}
    else:
        work = [(family, name, args.battery, args.cache) for family, sets in families.items() for name in sets]
        with ProcessPoolExecutor(args.jobs) as pool:
            for line in pool.map(produce, *zip(*work)):
                print(line, flush=True)
    if args.only_produce:
        return
    from lwec_tasks.core.confidence import CALIBRATION

    cases = {}  # (family, name, method) → terms
    for family, sets in families.items():
        for name in sets:
            for method in ("lwea", "lwgp"):
                cases[family, name, method] = load_case(cache_path(args.cache, name), method)
    scores = {}  # (family, name, method) → {candidate: (ece, auc)}
    held_out = {}  # (family, name, method) → the chosen candidate's held-out confidences
    for key, terms in cases.items():
        good = terms["good"]
        scores[key] = {"old": (ece(old_confidence(terms), good), auc(old_confidence(terms), good))}
        scores[key]["shipped"] = (ece(shipped(terms), good), auc(shipped(terms), good))
        for candidate, value in RAW.items():
            scores[key][candidate] = (ece(value(terms), good), auc(value(terms), good))
    for candidate, features in CANDIDATES.items():
        for family, sets in families.items():
            for name in sets:
                training = [(f, t) for (f, n, _), t in cases.items() if n != name]
                coefficients = fit([t for _, t in training], features, weights=family_weights(training))
                for method in ("lwea", "lwgp"):
                    terms = cases[family, name, method]
                    value = apply(terms, features, coefficients)
                    scores[family, name, method][candidate] = (ece(value, terms["good"]), auc(value, terms["good"]))
                    if candidate == CHOSEN:
                        held_out[family, name, method] = value
    for key, value in levelled_held_out(cases).items():
        scores[key]["levelled"] = (ece(value, cases[key]["good"]), auc(value, cases[key]["good"]))
    names = ["old", *RAW, *CANDIDATES, "shipped", "levelled"]
    for family in families:
        print(f"\n## {family}: held-out ECE / AUC (leave one data set out)\n")
        print("| data set | method | agree | " + " | ".join(names) + " |")
        print("|---|---|---:|" + "---:|" * len(names))
        keys = [key for key in scores if key[0] == family]
        for key in keys:
            print(f"| {key[1]} | {key[2]} | {cases[key]['good'].mean():.3f} | "
                  + " | ".join(f"{scores[key][c][0]:.3f} / {scores[key][c][1]:.3f}" for c in names) + " |")
        for method in ("lwea", "lwgp", "both"):
            chosen = [key for key in keys if method in ("both", key[2])]
            for title, ece_of, auc_of in (("mean", np.mean, np.nanmean), ("worst", np.max, np.nanmin)):
                print(f"| **{title}** | {method} | | " + " | ".join(
                    f"{ece_of([scores[k][c][0] for k in chosen]):.3f} / {auc_of([scores[k][c][1] for k in chosen]):.3f}"
                    for c in names) + " |")
    print("\n## Constants fitted on every data set (shipped: lwec_tasks.core.confidence.CALIBRATION)\n")
    for candidate, features in CANDIDATES.items():
        coefficients = fit(list(cases.values()), features)
        print(f"{candidate}: " + ", ".join(f"{f} {c:+.4f}" for f, c in zip((*features, "intercept"), coefficients)))
    print(f"shipped: {CALIBRATION}")
    if args.figure:
        reliability_figure(cases, held_out, list(families), args.figure)
        print(f"reliability diagram: {args.figure}")


def reliability_figure(cases: dict, held_out: dict, families: list[str], path: Path) -> None:
    """Per family and method: share agreeing against mean confidence per bin, every data set's rows pooled
    with each data set weighted alike; the old confidence and the chosen map (held out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(families), figsize=(5 * len(families), 4.6), squeeze=False)
    for axis, family in zip(axes[0], families):
        for method, style in (("lwea", "-"), ("lwgp", "--")):
            keys = [key for key in held_out if key[0] == family and key[2] == method]
            for label, values, colour in (("margin × share", [old_confidence(cases[k]) for k in keys], "grey"),
                                          ("calibrated (held out)", [held_out[k] for k in keys], "C0")):
                n, confidence, hits = np.zeros(BINS), np.zeros(BINS), np.zeros(BINS)
                for key, value in zip(keys, values):
                    which = np.minimum((value * BINS).astype(int), BINS - 1)
                    weight = 1.0 / len(value)
                    n += np.bincount(which, minlength=BINS) * weight
                    confidence += np.bincount(which, weights=value, minlength=BINS) * weight
                    hits += np.bincount(which, weights=cases[key]["good"].astype(float), minlength=BINS) * weight
                used = n > 1e-4
                axis.plot(confidence[used] / n[used], hits[used] / n[used], style, marker="o", color=colour,
                          label=f"{label}, {method.upper()}")
        axis.plot([0, 1], [0, 1], ":", color="black", linewidth=0.8)
        axis.set(title=f"{family}: held-out reliability", xlabel="mean confidence in bin",
                 ylabel="share agreeing with the cluster's majority truth", xlim=(0, 1), ylim=(0, 1.02))
        axis.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


#: The fit floors the level's held-out choice picks from (the largest of equally good ones: the map as it is
#: unless the posterior's level does better).
FIT_FLOORS = (1.01, 0.97, 0.95, 0.93, 0.9, 0.87, 0.85, 0.8, 0.7, 0.5, 0.0)


def levelled(terms: dict, fit_floor: float) -> np.ndarray:
    """The shipped map's values matched to the posteriors' distribution
    (:mod:`lwec_tasks.core.confidence_level`) when the mixture fits ``fit_floor`` of the rows."""
    from lwec_tasks.core.confidence_level import LevelCounts
    from lwec_tasks.core.confidence_level import levelled as through_level

    score = shipped(terms)
    likeliest = np.arange(len(score)) < round(terms["gaussian_fit"] * len(score))
    counts = LevelCounts.of(score, terms["posterior"], likeliest)
    return through_level(score, counts.level_map(fit_floor)).astype(np.float64)


def levelled_held_out(cases: dict) -> dict:
    """(family, name, method) → the levelled confidence with the fit floor chosen on the other data sets (mean
    ECE per family, families alike); prints the floors chosen."""
    values = {(floor, key): levelled(terms, floor) for floor in FIT_FLOORS for key, terms in cases.items()}
    errors = {(floor, key): ece(values[floor, key], cases[key]["good"]) for floor, key in values}
    names = sorted({(family, name) for family, name, _ in cases})
    out, chosen = {}, []

    def training_ece(floor, left_out):
        per_family: dict[str, list[float]] = {}
        for key in cases:
            if key[1] != left_out:
                per_family.setdefault(key[0], []).append(errors[floor, key])
        return np.mean([np.mean(v) for v in per_family.values()])

    for family, name in names:
        floor = min(FIT_FLOORS, key=lambda f: training_ece(f, name))
        chosen.append(floor)
        for method in ("lwea", "lwgp"):
            out[family, name, method] = values[floor, (family, name, method)]
    print("fit floors chosen held out: " + ", ".join(f"{f} in {chosen.count(f)} folds" for f in sorted(set(chosen))))
    return out


def shipped(terms: dict) -> np.ndarray:
    """The confidence as a run computes it (:func:`lwec_tasks.core.confidence.calibrated`)."""
    from lwec_tasks.core.confidence import calibrated

    return calibrated(terms["margin"], terms["share"])


if __name__ == "__main__":
    main()
