"""How the per-cluster flag for mixed clusters was chosen: candidate per-cluster scores judged by how well they
separate mixed clusters from pure ones.

A consensus cluster is *mixed* when its majority truth holds less than :data:`MIXED_MAJORITY` of its rows. A
per-cluster score should rank pure clusters above mixed ones (ROC AUC over clusters) and, with one threshold
fixed for every run, flag the mixed ones (true and false positive rates at the threshold). Every candidate is
computed from the run alone: the (n_c, k) counts of rows per (base cluster, consensus cluster), the base
clusterings' granularity and ECI, and for ``mean_confidence`` the rows' calibrated confidences.

Data (three families; the score and its threshold are chosen on the first two, ``choice``):

* ``battery``: the clustering battery's development half (``../shared/data/battery``, all 33 sets), noise
  points left out, z-scored, M = 10 base clusterings from ``lwec run``'s default mix (seed 0);
* ``pools``: the authors' k-means pools (``../shared/data/pools``), 10 base clusterings drawn with seed 0, no
  features (the confidence is the share's own map);
* ``sklearn`` (held out): scikit-learn's digits (``lwec demo``'s table) and iris, and three synthetic tables
  (overlapping blobs, anisotropic clusters, very unequal sizes), as the battery.

Each run is LWEA and LWGP at the true k and at k − 2 (k ≥ 2; a forced merge makes mixed clusters). Printed: per
family the pooled ROC AUC over all clusters (one threshold for every run needs it) and the mean per-run AUC; the
balanced accuracy of each candidate at the threshold of best balanced accuracy on ``choice``; for the chosen
score (``--chosen``) the share of mixed and pure clusters flagged at the largest threshold flagging at most 5 %
of ``choice``'s pure clusters (and at ``--thresholds``); the demo's clusters (digits, LWEA, k = 10).

Kept: the cohesion (:mod:`lwec_tasks.core.cohesion`): the best mean per-run AUC (with its variant over distinct
pairs, equal up to 1/n) of the candidates computed from the ensemble alone on ``choice``; its absolute level
depends on how finely the base clusterings cut the table (pools and high-dimensional tables sit far lower than
the battery), so the flag compares it with the run's mean (``cohesion_vs_run``), threshold
:data:`lwec_tasks.core.cohesion.MIXED_BELOW`.

    python -m benchmarks.cluster_cohesion [--battery DIR] [--pools DIR] [--cache DIR] [--jobs 2]

Base clusterings and consensus labels are cached in ``--cache`` (default ``/tmp/lwec_cluster_cohesion``).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks.confidence_calibration import battery_sets

ROOT = Path(__file__).resolve().parents[1].parent
DEFAULT_BATTERY = ROOT / "shared" / "data" / "battery"
DEFAULT_POOLS = ROOT / "shared" / "data" / "pools"
DEFAULT_CACHE = Path("/tmp/lwec_cluster_cohesion")
#: A cluster whose majority truth holds less than this share of its rows is mixed.
MIXED_MAJORITY = 0.8
ENSEMBLE_SIZE = 10


# --------------------------------------------------------------------------------------------------- data sets
def sklearn_sets() -> dict:
    """name → zero-argument loader of (X, y): bundled scikit-learn tables and seeded synthetic ones."""
    from sklearn import datasets

    def anisotropic():
        X, y = datasets.make_blobs(n_samples=6000, n_features=8, centers=8, cluster_std=2.0, random_state=13)
        rng = np.random.default_rng(13)
        rotation, _ = np.linalg.qr(rng.normal(size=(8, 8)))
        return X @ rotation @ np.diag(np.geomspace(4.0, 0.5, 8)) @ rotation.T, y

    return {
        "digits": lambda: datasets.load_digits(return_X_y=True),
        "iris": lambda: datasets.load_iris(return_X_y=True),
        "blobs 6k d16 c20 std5": lambda: datasets.make_blobs(n_samples=6000, n_features=16, centers=20,
                                                             cluster_std=5.0, random_state=12),
        "anisotropic 6k d8 c8": anisotropic,
        "unequal 6k d8 c8": lambda: datasets.make_blobs(n_samples=[3200, 1400, 700, 360, 180, 90, 50, 20],
                                                        n_features=8, cluster_std=3.0, random_state=15),
    }


def pool_sets(directory: Path) -> dict:
    from lwec_tasks.experiments.pools import load_pool

    def load(path):
        def read():
            pool = load_pool(path)
            return pool.members, pool.truth
        return read

    return {path.stem[len("bc_pool_"):]: load(path) for path in sorted(directory.glob("bc_pool_*.mat"))} \
        if directory.is_dir() else {}


def cache_path(cache: Path, family: str, name: str) -> Path:
    return cache / f"{family}_{name.replace('/', '_').replace(' ', '_')}.npz"


def ks_of(k: int) -> list[int]:
    """The true k and k − 2 (when at least 2)."""
    return sorted({k, *([k - 2] if k - 2 >= 2 else [])})


def produce(family: str, name: str, battery: Path, pools: Path, cache: Path) -> str:
    """Base clusterings (default mix, M = 10, seed 0; for a pool, 10 of its members drawn with seed 0), LWEA and
    LWGP at :func:`ks_of`; cached as npz."""
    from benchmarks.battery import standardise
    from lwec_tasks.core.base_clusterings import fit_base_clusterings
    from lwec_tasks.core.ensemble import Ensemble
    from lwec_tasks.core.lwea import lwea
    from lwec_tasks.core.lwgp import lwgp
    from lwec_tasks.core.mixes import RUN_DEFAULT_MIX

    path = cache_path(cache, family, name)
    if path.exists():
        return f"{name}: cached"
    started = time.perf_counter()
    if family == "pools":
        members, y = pool_sets(pools)[name]()
        columns = np.random.default_rng(0).choice(members.shape[1], ENSEMBLE_SIZE, replace=False)
        base, Z = np.asarray(members[:, columns], dtype=np.int64), np.zeros((len(y), 0), np.float32)
    else:
        X, y = (battery_sets(battery) if family == "battery" else sklearn_sets())[name]()
        X = np.asarray(X, dtype=np.float64)
        Z = standardise(X[:, X.std(axis=0) > 0])  # constant columns left out, as a run leaves them out
        base = fit_base_clusterings(Z, ENSEMBLE_SIZE, random_state=0, generators=RUN_DEFAULT_MIX, n_jobs=1).labels
    _, y = np.unique(np.asarray(y), return_inverse=True)
    k = int(y.max()) + 1
    ensemble = Ensemble(base)
    ks = ks_of(k)
    labels = {"lwea": lwea(ensemble, ks), "lwgp": lwgp(ensemble, ks, random_state=0)}
    np.savez(path, Z=np.asarray(Z, dtype=np.float32), y=y, base=np.asarray(base, dtype=np.int64), ks=np.array(ks),
             **labels)
    return f"{name}: {len(y)} rows, {time.perf_counter() - started:.0f} s"


# ------------------------------------------------------------------------------------------------- candidates
def overlap_counts(base: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """((n_c, k) rows per (base cluster, consensus cluster), (n_c,) column of each base cluster, (M,) k_m), base
    clusters column by column in ascending label order (the ECI's order)."""
    blocks, columns, ks = [], [], []
    for m in range(base.shape[1]):
        _, codes = np.unique(base[:, m], return_inverse=True)
        n_m = int(codes.max()) + 1
        blocks.append(np.bincount(codes * k + labels, minlength=n_m * k).reshape(n_m, k))
        columns.append(np.full(n_m, m))
        ks.append(n_m)
    return np.vstack(blocks), np.concatenate(columns), np.array(ks)


def candidates(overlap: np.ndarray, columns: np.ndarray, base_ks: np.ndarray, eci: np.ndarray,
               confidence_sums: np.ndarray) -> dict[str, np.ndarray]:
    """name → (k,) score per consensus cluster (higher: purer) from the run's small tables."""
    from lwec_tasks.core.cohesion import cluster_cohesion, relative_cohesion

    overlap = np.asarray(overlap, dtype=np.float64)
    n_columns = len(base_ks)
    sizes = overlap[columns == 0].sum(axis=0)
    n = sizes.sum()
    p = overlap / np.maximum(sizes, 1.0)
    squares = p**2
    per_column = np.vstack([squares[columns == m].sum(axis=0) for m in range(n_columns)])  # (M, k)
    base_sizes = overlap.sum(axis=1)
    typical = np.array([np.sum(base_sizes[columns == m] ** 2) / n for m in range(n_columns)])  # (M,)
    expected = np.minimum(1.0, typical[:, None] / np.maximum(sizes, 1.0)[None, :])
    k = overlap.shape[1]
    coarse = base_ks <= k
    coarseness = np.minimum(1.0, k / base_ks) ** 2  # (M,) 1 for a base clustering no finer than the consensus
    between = np.zeros((k, k))
    for m in range(n_columns):
        block = p[columns == m]
        between += block.T @ block / n_columns  # (k, k) mean co-association between clusters' rows
    within = np.diag(between).copy()
    np.fill_diagonal(between, -np.inf)
    nearest = between.max(axis=1) if k > 1 else np.zeros(k)
    pairs = np.maximum(sizes * (sizes - 1), 1.0)
    coarse_weighted = (coarseness[:, None] * per_column).sum(axis=0) / coarseness.sum()
    out = {
        "mean_confidence": confidence_sums / np.maximum(sizes, 1.0),
        "cohesion": per_column.mean(axis=0),
        "cohesion_pairs": np.vstack([(overlap[columns == m] * (overlap[columns == m] - 1)).sum(axis=0)
                                     for m in range(n_columns)]).mean(axis=0) / pairs,
        "cohesion_eci": (eci[:, None] * squares).sum(axis=0) / n_columns,
        "cohesion_coarse": per_column[coarse].mean(axis=0) if coarse.any() else per_column.mean(axis=0),
        "cohesion_coarse_weighted": (coarseness[:, None] * per_column).sum(axis=0) / coarseness.sum(),
        "relative_coarse_weighted": (coarseness[:, None] * np.minimum(1.0, per_column / expected)).sum(axis=0)
        / coarseness.sum(),
        "cohesion_vs_granularity": np.minimum(1.0, per_column / expected).mean(axis=0),
        "cohesion_over_expected": per_column.mean(axis=0) / expected.mean(axis=0),
        "cohesion_vs_run (shipped)": relative_cohesion(cluster_cohesion(overlap, columns, n_columns), sizes),
        "coarse_weighted_vs_run": relative_to_run(coarse_weighted, sizes),
        "cohesion_vs_run_median": per_column.mean(axis=0) / max(float(np.median(per_column.mean(axis=0))), 1e-12),
        "largest_piece": np.vstack([p[columns == m].max(axis=0) for m in range(n_columns)]).mean(axis=0),
        "mean_row_share": (overlap**2 / np.maximum(base_sizes, 1.0)[:, None]).sum(axis=0) / np.maximum(
            sizes * n_columns, 1.0),
        "within_minus_nearest": within - np.maximum(nearest, 0.0),
        "within_over_nearest": within / np.maximum(within + np.maximum(nearest, 0.0), 1e-12),
    }
    return out


def relative_to_run(score: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(k,) each cluster's score over the run's size-weighted mean score."""
    return score / max(float(np.dot(sizes, score) / max(sizes.sum(), 1.0)), 1e-12)


def run_rows(path: Path) -> list[dict]:
    """One dict per consensus cluster of every run of a cached data set: run, size, majority share, scores."""
    from lwec_tasks.core.confidence import ClusterSums, base_shares, calibrated, centre_margin, ensemble_share
    from lwec_tasks.core.eci import eci

    data = np.load(path)
    Z, y, base = data["Z"].astype(np.float64), data["y"], data["base"]
    weights = eci(base, 0.4)
    rows = []
    for method in ("lwea", "lwgp"):
        for j, k in enumerate(data["ks"]):
            _, labels = np.unique(data[method][:, j], return_inverse=True)
            k_found = int(labels.max()) + 1
            overlap, columns, base_ks = overlap_counts(base, labels, k_found)
            shares = base_shares(overlap, overlap.sum(axis=1))
            offsets = np.concatenate([[0], np.cumsum(base_ks)])
            codes = np.vstack([np.unique(base[:, m], return_inverse=True)[1] + offsets[m]
                               for m in range(base.shape[1])])
            share = ensemble_share(codes, labels, shares)
            margin = None
            if Z.shape[1]:
                sums = ClusterSums.of(Z, labels, k_found)
                margin = centre_margin(Z, labels, sums.means, sums.counts > 0)
            confidence = calibrated(margin, share)
            scores = candidates(overlap, columns, base_ks, weights,
                                np.bincount(labels, weights=confidence, minlength=k_found))
            joint = np.zeros((k_found, int(y.max()) + 1), np.int64)
            np.add.at(joint, (labels, y), 1)
            sizes = joint.sum(axis=1)
            for c in range(k_found):
                rows.append({"run": f"{path.stem} {method} k={k}", "size": int(sizes[c]),
                             "majority": float(joint[c].max() / max(sizes[c], 1)),
                             **{name: float(values[c]) for name, values in scores.items()}})
    return rows


# ------------------------------------------------------------------------------------------------- judging
def auc(score: np.ndarray, pure: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(pure, score)) if 0 < pure.mean() < 1 else float("nan")


def judge(frame, names) -> dict[str, dict]:
    """name → pooled AUC over every cluster, mean AUC over runs with both kinds of cluster."""
    pure = (frame["majority"] >= MIXED_MAJORITY).to_numpy()
    out = {}
    for name in names:
        per_run = [auc(group[name].to_numpy(), (group["majority"] >= MIXED_MAJORITY).to_numpy())
                   for _, group in frame.groupby("run")]
        per_run = [a for a in per_run if a == a]
        out[name] = {"pooled": auc(frame[name].to_numpy(), pure),
                     "per_run": float(np.mean(per_run)) if per_run else float("nan"), "runs": len(per_run)}
    return out


def best_threshold(score: np.ndarray, pure: np.ndarray) -> float:
    """The threshold (flag below it) of largest balanced accuracy, rounded to two decimals."""
    grid = np.round(np.arange(0.05, 2.0, 0.01), 2)
    accuracy = [0.5 * (np.mean(score[~pure] < t) + np.mean(score[pure] >= t)) for t in grid]
    return float(grid[int(np.argmax(accuracy))])


def budget_threshold(score: np.ndarray, pure: np.ndarray, budget: float = 0.05) -> float:
    """The largest threshold (two decimals) that flags at most ``budget`` of the pure clusters."""
    grid = np.round(np.arange(0.05, 2.0, 0.01), 2)
    allowed = [t for t in grid if np.mean(score[pure] < t) <= budget]
    return float(max(allowed)) if allowed else float(grid[0])


def rates(score: np.ndarray, pure: np.ndarray, threshold: float) -> str:
    flagged = score < threshold
    tpr = flagged[~pure].mean() if (~pure).any() else float("nan")
    fpr = flagged[pure].mean() if pure.any() else float("nan")
    return f"flags {tpr:.0%} of {int((~pure).sum())} mixed, {fpr:.0%} of {int(pure.sum())} pure"


def main(argv=None) -> int:
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--battery", type=Path, default=DEFAULT_BATTERY)
    parser.add_argument("--pools", type=Path, default=DEFAULT_POOLS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--chosen", default="cohesion_vs_run (shipped)")
    parser.add_argument("--thresholds", type=lambda text: [float(t) for t in text.split(",")], default=[],
                        help="more thresholds to report the chosen score's rates at, comma-separated")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    work = [("sklearn", name) for name in sklearn_sets()] + [("pools", name) for name in pool_sets(args.pools)]
    work += [("battery", name) for name in battery_sets(args.battery)]
    with ProcessPoolExecutor(args.jobs) as pool:
        for message in pool.map(produce, *zip(*[(f, n, args.battery, args.pools, args.cache) for f, n in work])):
            print(message, flush=True)
    frames = {}
    for family in ("battery", "pools", "sklearn"):
        rows = [row for f, n in work if f == family for row in run_rows(cache_path(args.cache, f, n))]
        frames[family] = pd.DataFrame(rows)
    frames["choice"] = pd.concat([frames["battery"], frames["pools"]], ignore_index=True)  # where scores are chosen
    frames = {name: frames[name] for name in ("choice", "battery", "pools", "sklearn")}
    names = [c for c in frames["battery"].columns if c not in ("run", "size", "majority")]
    judged = {family: judge(frame, names) for family, frame in frames.items()}
    print(f"\nROC AUC over clusters (mixed: majority share < {MIXED_MAJORITY}); pooled / mean per run")
    print(f"{'score':28s}" + "".join(f"{family:>26s}" for family in frames))
    for name in names:
        print(f"{name:28s}" + "".join(f"{judged[f][name]['pooled']:>12.3f} /{judged[f][name]['per_run']:>6.3f}"
                                      f" ({judged[f][name]['runs']:>2d})" for f in frames))
    battery = frames["choice"]
    pure = (battery["majority"] >= MIXED_MAJORITY).to_numpy()
    print("\nBalanced accuracy of 'below the threshold: mixed', the threshold chosen on battery + pools")
    print(f"{'score':28s}{'threshold':>10s}" + "".join(f"{family:>12s}" for family in frames))
    for name in names:
        cut = best_threshold(battery[name].to_numpy(), pure)
        accuracies = []
        for frame in frames.values():
            score, family_pure = frame[name].to_numpy(), (frame["majority"] >= MIXED_MAJORITY).to_numpy()
            accuracies.append(0.5 * (np.mean(score[~family_pure] < cut) + np.mean(score[family_pure] >= cut)))
        print(f"{name:28s}{cut:>10.2f}" + "".join(f"{a:>12.3f}" for a in accuracies))
    threshold = budget_threshold(battery[args.chosen].to_numpy(), pure)
    print(f"\n{args.chosen}: threshold chosen on battery + pools (the largest flagging at most 5 % of pure "
          f"clusters) {threshold:.2f}")
    for cut in sorted({threshold, *args.thresholds}):
        for family, frame in frames.items():
            family_pure = (frame["majority"] >= MIXED_MAJORITY).to_numpy()
            print(f"  below {cut:.2f}, {family}: {rates(frame[args.chosen].to_numpy(), family_pure, cut)}")
    digits = frames["sklearn"][frames["sklearn"]["run"].str.contains("digits lwea k=10")]
    print("\ndigits, LWEA, k = 10 (the demo):")
    print(digits[["size", "majority", "mean_confidence", args.chosen]].round(3).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
