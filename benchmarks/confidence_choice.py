"""How the row confidence was chosen: candidate definitions ranked by ROC AUC on data other than the acceptance
blobs (1M rows, 16-d, 20 centres, cluster_std 6, random_state 1).

For each data set: z-score, M = 10 k-means base clusterings (seed 0), LWEA and LWGP at the true k; the positive
class is "the row's label agrees with the majority truth of its cluster". Printed: one line per data set and
method with each candidate's AUC, then the means over a selection half and a held-out half (the data sets are
split before looking; the definition was chosen on the selection half, the held-out half reports it).

    python -m benchmarks.confidence_choice [--battery DIR]
"""

from __future__ import annotations

import argparse
import gzip
import os
from pathlib import Path

import numpy as np
from sklearn import datasets
from sklearn.metrics import roc_auc_score

from benchmarks.confidence_calibration import gaussian_posterior
from lwec_tasks.core.base_clusterings import fit_base_clusterings
from lwec_tasks.core.confidence import ClusterSums
from lwec_tasks.core.lwea import lwea
from lwec_tasks.core.lwgp import lwgp

DEFAULT_BATTERY = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "battery"


def blobs(n, d, centres, std, seed):
    X, y = datasets.make_blobs(n_samples=n, n_features=d, centers=centres, cluster_std=std, random_state=seed)
    return X, y


def battery(directory: Path, name: str):
    def read(path):
        with gzip.open(path, "rt") as f:
            return np.loadtxt(f, ndmin=2)

    X = read(directory / f"{name}.data.gz")
    y = read(directory / f"{name}.labels0.gz").ravel().astype(int)
    keep = y > 0
    return X[keep], y[keep]


def candidates(Z: np.ndarray, base: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Every candidate confidence of the rows of the z-scored Z (n, d) with consensus ``labels`` (n,)."""
    k = int(labels.max()) + 1
    sums = ClusterSums.of(Z, labels, k)
    posterior = gaussian_posterior(Z, labels, sums, spherical=True)[0]
    d2 = ((Z[:, None, :] - sums.means[None]) ** 2).sum(axis=2)
    own = np.sqrt(d2[np.arange(len(Z)), labels])
    d2[np.arange(len(Z)), labels] = np.inf
    other = np.sqrt(d2.min(axis=1))
    ratio = other / np.maximum(own + other, 1e-300)
    shares = np.zeros(len(Z))
    for m in range(base.shape[1]):
        codes = base[:, m]
        joint = np.bincount(codes * k + labels, minlength=(codes.max() + 1) * k).reshape(-1, k)
        shares += joint[codes, labels] / joint.sum(axis=1)[codes]
    shares /= base.shape[1]
    return {"share": shares, "ratio": ratio, "posterior": posterior, "posterior*share": posterior * shares,
            "ratio*share": ratio * shares}


def majority_agrees(labels: np.ndarray, truth: np.ndarray) -> np.ndarray:
    _, t = np.unique(truth, return_inverse=True)
    joint = np.bincount(labels * (t.max() + 1) + t, minlength=(labels.max() + 1) * (t.max() + 1))
    majority = joint.reshape(labels.max() + 1, -1).argmax(axis=1)
    return majority[labels] == t


def evaluate(name, X, y, rows):
    Z = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1)
    k = len(np.unique(y))
    base = fit_base_clusterings(Z, 10, random_state=0).labels
    for method in ("lwea", "lwgp"):
        labels = (lwea(base, k) if method == "lwea" else lwgp(base, k, random_state=0)).astype(np.int64)
        _, labels = np.unique(labels, return_inverse=True)
        good = majority_agrees(labels, y)
        if good.all() or not good.any():
            print(f"{name:28s} {method}  all rows agree: no AUC")
            continue
        aucs = {c: roc_auc_score(good, v) for c, v in candidates(Z, base, labels).items()}
        rows.append((name, method, aucs))
        print(f"{name:28s} {method}  off-majority {1 - good.mean():6.1%}  "
              + "  ".join(f"{c} {a:.3f}" for c, a in aucs.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battery", type=Path, default=Path(os.environ.get("LWEC_BATTERY_DIR", DEFAULT_BATTERY)))
    args = parser.parse_args()
    selection, held_out = [], []
    sets = [
        ("blobs 20k d8 c8 std4 s2", lambda: blobs(20_000, 8, 8, 4, 2), selection),
        ("blobs 20k d16 c20 std5 s3", lambda: blobs(20_000, 16, 20, 5, 3), selection),
        ("blobs 20k d4 c5 std3 s4", lambda: blobs(20_000, 4, 5, 3, 4), selection),
        ("digits", lambda: datasets.load_digits(return_X_y=True), selection),
        ("wine", lambda: datasets.load_wine(return_X_y=True), selection),
        ("blobs 20k d16 c20 std7 s5", lambda: blobs(20_000, 16, 20, 7, 5), held_out),
        ("blobs 20k d32 c10 std8 s6", lambda: blobs(20_000, 32, 10, 8, 6), held_out),
        ("breast_cancer", lambda: datasets.load_breast_cancer(return_X_y=True), held_out),
        ("iris", lambda: datasets.load_iris(return_X_y=True), held_out),
    ]
    for directory, names, half in ((args.battery / "sipu", ["a1", "s3", "s4", "aggregation"], selection),
                                   (args.battery / "sipu", ["a2", "a3", "compound"], held_out),
                                   (args.battery / "fcps", ["engytime", "hepta", "wingnut"], held_out)):
        for name in names:
            if (directory / f"{name}.data.gz").exists():
                sets.append((f"{directory.name}/{name}", lambda d=directory, n=name: battery(d, n), half))
    for name, load, half in sets:
        X, y = load()
        evaluate(name, np.asarray(X, dtype=float), np.asarray(y), half)
    for title, rows in (("selection", selection), ("held out", held_out)):
        if rows:
            names = list(rows[0][2])
            means = {c: np.mean([r[2][c] for r in rows]) for c in names}
            print(f"mean AUC, {title} ({len(rows)} data set × method pairs): "
                  + "  ".join(f"{c} {a:.3f}" for c, a in means.items()))


if __name__ == "__main__":
    main()
