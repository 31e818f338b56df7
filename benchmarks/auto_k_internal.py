"""Automatic k as a competent engineer would choose it without lwec: k-means and a standard internal criterion.

    python -m benchmarks.auto_k_internal [--seeds 3] [--k-max 20]

On the eight data sets of the guard's ``auto-k-held-out`` (:func:`benchmarks.auto_k_datasets.offline_data_sets`),
standardised as a run standardises its features, k-means (10 starts) is fitted at every k in 2..``k-max`` and k is
chosen by each of four criteria found in every textbook and in scikit-learn: the Calinski–Harabasz ratio (highest),
the Davies–Bouldin index (lowest), the mean silhouette (highest), and the BIC of a Gaussian mixture (lowest; full
covariances up to 16 features, diagonal above). Printed per data set: the k each criterion chose on each seed, and
per criterion the mean over data sets of NMI(k-means at the chosen k) − NMI(k-means at the true k), the figure the
guard's ``auto-k-held-out`` row gives for lwec's own choice, and the mean NMI at the chosen k (k-means' true-k NMI
is low on the rings and crescents, so its difference there says little). Nothing here is tuned: it measures what
the features themselves say about k. Results: docs/decisions.md (*Automatic k: what the features say*).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np
import pandas as pd

#: Above this many features the mixture's covariances are diagonal (a full one on digits' 64 would be 2,080
#: parameters per component for 1,797 rows).
FULL_COVARIANCE_MAX_FEATURES = 16


def label_scores() -> dict[str, tuple[Callable[[np.ndarray, np.ndarray], float], bool]]:
    """The three label criteria: name → (scikit-learn's score of (features, labels), higher is better)."""
    from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score, silhouette_score

    return {"Calinski–Harabasz": (calinski_harabasz_score, True),
            "Davies–Bouldin": (davies_bouldin_score, False),
            "silhouette": (silhouette_score, True)}


def kmeans_cuts(features: np.ndarray, ks: np.ndarray, seed: int) -> np.ndarray:
    """(N, len(ks)) k-means labels (10 starts, ``seed``) of ``features`` (N, d) at each k."""
    from sklearn.cluster import KMeans

    return np.column_stack([KMeans(int(k), n_init=10, random_state=seed).fit_predict(features) for k in ks])


def mixture_bics(features: np.ndarray, ks: np.ndarray, seed: int) -> np.ndarray:
    """(len(ks),) BIC of a Gaussian mixture of each k fitted to ``features`` (3 starts, ``seed``)."""
    from sklearn.mixture import GaussianMixture

    covariance = "full" if features.shape[1] <= FULL_COVARIANCE_MAX_FEATURES else "diag"
    return np.array([GaussianMixture(int(k), covariance_type=covariance, n_init=3, random_state=seed)
                     .fit(features).bic(features) for k in ks])


def chosen_ks(features: np.ndarray, cuts: np.ndarray, ks: np.ndarray, seed: int) -> dict[str, int]:
    """Criterion name → the k it chooses among ``ks`` (ties: the smallest), from the k-means ``cuts`` (N, len(ks))."""
    chosen = {}
    for name, (score, higher_is_better) in label_scores().items():
        values = np.array([score(features, cuts[:, j]) for j in range(len(ks))])
        chosen[name] = int(ks[np.argmax(values) if higher_is_better else np.argmin(values)])
    chosen["Gaussian mixture BIC"] = int(ks[np.argmin(mixture_bics(features, ks, seed))])
    return chosen


def study_rows(data_sets: dict[str, tuple[np.ndarray, np.ndarray]], seeds: int, k_max: int) -> list[dict]:
    """One row per data set, seed and criterion: the k chosen and NMI(k-means there) − NMI(k-means at the true k)."""
    from benchmarks.battery import standardise
    from lwec_tasks.core.metrics import nmi

    rows = []
    for name, (features, classes) in data_sets.items():
        features = standardise(np.asarray(features, dtype=np.float64))
        true_k = len(np.unique(classes))
        ks = np.arange(2, k_max + 1)
        for seed in range(seeds):
            cuts = kmeans_cuts(features, ks, seed)
            at_true_k = nmi(cuts[:, true_k - 2], classes)
            for criterion, k in chosen_ks(features, cuts, ks, seed).items():
                at_chosen_k = nmi(cuts[:, k - 2], classes)
                rows.append({"data set": name, "true k": true_k, "seed": seed, "criterion": criterion, "k": k,
                             "nmi": at_chosen_k, "difference": at_chosen_k - at_true_k})
    return rows


def markdown(rows: list[dict]) -> str:
    """The ks each criterion chose per data set (seeds joined), and per criterion the mean / worst difference and
    the mean NMI at the chosen k (means over seeds, then over data sets)."""
    frame = pd.DataFrame(rows)
    criteria = list(dict.fromkeys(frame["criterion"]))
    lines = ["| data set | true k | " + " | ".join(criteria) + " |", "|---|---:|" + "---|" * len(criteria)]
    for name, group in frame.groupby("data set", sort=False):
        cells = [", ".join(map(str, group.loc[group["criterion"] == c, "k"])) for c in criteria]
        lines.append(f"| {name} | {group['true k'].iloc[0]} | " + " | ".join(cells) + " |")
    per_set = frame.groupby(["criterion", "data set"], sort=False)["difference"].mean()
    summary = [f"{per_set[c].mean():+.3f} (worst {per_set[c].idxmin()} {per_set[c].min():+.3f})" for c in criteria]
    lines.append("| **NMI(chosen k) − NMI(true k)**, mean (worst) | | " + " | ".join(summary) + " |")
    levels = frame.groupby(["criterion", "data set"], sort=False)["nmi"].mean()
    lines.append("| NMI at the chosen k, mean | | " + " | ".join(f"{levels[c].mean():.3f}" for c in criteria) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.auto_k_datasets import offline_data_sets

    parser = argparse.ArgumentParser(prog="python -m benchmarks.auto_k_internal", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="k-means seeds per data set (default 3)")
    parser.add_argument("--k-max", type=int, default=20, help="largest k tried (default 20)")
    args = parser.parse_args(argv)
    print(markdown(study_rows(offline_data_sets(), args.seeds, args.k_max)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
