"""Automatic k: would a "separated cut" rule before the joint criterion help? (measured, not kept)

    python -m benchmarks.auto_k_separation [--pools DIR] [--battery DIR] [--json FILE]

For every ensemble of three families — the battery's dev half (sets of at most 20,000 rows, seeds 0–1), the eight
data sets of the guard's ``auto-k-held-out`` (seeds 0–2) and the authors' pools (runs 0–9 of the reproduction
protocol) — LWEA is cut at every k in 2..50 and each cut's within share S/W of the LWCA mass (the modularity's
first term) and NMI against the classes are kept beside the shipped choice of k. The rule: among the ks whose cut
keeps 1 − S/W ≤ ε and whose smallest cluster holds at least σ of the objects, the one with the largest drop of S/W
to k + 1, taken when that drop is at least ρ·(1 − S/W); otherwise the shipped choice. Printed per (ε, ρ, σ) and
family: mean over data sets of NMI(chosen k) − NMI(true k), and the worst data set. Results: docs/decisions.md
(*Automatic k: a separated cut before the modularity*).
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
from pathlib import Path

import numpy as np

from lwec_tasks.core.auto_k import consensus_cuts, select_k
from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.k_criterion import default_ks, lwca_modularity
from lwec_tasks.core.metrics import nmi

EPSILONS = (0.0, 0.0002, 0.0005, 0.001, 0.002, 0.003, 0.005)
RATIOS = (0.0, 1.0, 2.0, 4.0, 8.0)
#: the separated cut's smallest cluster, as a share of the objects, at least this
SMALLEST = (0.0, 0.02, 0.05, 0.1)
BATTERY_ROWS_MAX = 20_000


def within_shares(ensemble: Ensemble, cuts: np.ndarray, theta: float = 0.4) -> np.ndarray:
    """(C,) S/W of each column of ``cuts``: the LWCA mass inside the cut's clusters over the whole mass (the
    modularity at resolution 0)."""
    return lwca_modularity(ensemble, ensemble_eci(ensemble, theta), cuts, resolution=0.0)


def ensemble_row(name: str, labels: np.ndarray, truth: np.ndarray, seed: int, random_state: int,
                 features: np.ndarray | None = None) -> dict:
    """The shares, smallest clusters and NMIs of LWEA's cuts and the shipped k (``features`` unused: the rule
    reads the ensemble alone)."""
    ensemble = Ensemble(labels)
    ks = default_ks(ensemble, "lwea")
    cuts = consensus_cuts(ensemble, "lwea", ks, 0.4)
    smallest = [float(np.bincount(np.unique(cuts[:, j], return_inverse=True)[1]).min() / len(truth))
                for j in range(cuts.shape[1])]
    return {"name": name, "seed": seed, "ks": ks.tolist(), "true_k": len(np.unique(truth)),
            "share": within_shares(ensemble, cuts).tolist(), "smallest": smallest,
            "nmi": [float(nmi(cuts[:, j], truth)) for j in range(cuts.shape[1])],
            "shipped": int(select_k(ensemble, "lwea", random_state=random_state).k)}


def run_ensembles(X: np.ndarray, seed: int) -> np.ndarray:
    """The base clusterings a run makes of standardised X with the run's default mix."""
    from lwec_tasks.core.base_clusterings import generate_base_clusterings, paper_k_max
    from lwec_tasks.core.mixes import run_default_mix

    return generate_base_clusterings(X, n_clusterings=10, k_min=2, k_max=paper_k_max(len(X)), random_state=seed,
                                     generators=run_default_mix(len(X)))


def battery_rows(data: Path, make_row=ensemble_row) -> list[dict]:
    """``make_row(name, labels, truth, seed, random_state, features=X)`` of each dev-half set of at most
    ``BATTERY_ROWS_MAX`` rows, seeds 0–1 (noise points left out; X standardised)."""
    from benchmarks.battery import find_sets, load_matrix, reference_labellings, standardise

    rows = []
    for name in find_sets(data):
        X = standardise(load_matrix(Path(data, f"{name}.data.gz")))
        if len(X) > BATTERY_ROWS_MAX:
            continue
        reference = reference_labellings(data, name)[0]
        kept = reference != 0
        for seed in (0, 1):
            rows.append(make_row(name, run_ensembles(X, seed)[kept], reference[kept], seed, seed, features=X[kept]))
    return rows


def data_set_rows(make_row=ensemble_row) -> list[dict]:
    """``make_row`` of the eight data sets of the guard's ``auto-k-held-out``, seeds 0–2."""
    from benchmarks.auto_k_datasets import offline_data_sets
    from benchmarks.battery import standardise

    rows = []
    for seed in range(3):
        for name, (X, y) in offline_data_sets().items():
            X = standardise(np.asarray(X, float))
            rows.append(make_row(name, run_ensembles(X, seed), np.asarray(y), seed, seed, features=X))
    return rows


def pool_rows(directory: Path, make_row=ensemble_row) -> list[dict]:
    """``make_row`` of the authors' pools, runs 0–9 of the reproduction protocol (M = 10, seed 0; no features)."""
    from lwec_tasks.experiments.pools import load_pool
    from lwec_tasks.experiments.reproduce import draw_columns, method_seed

    rows = []
    for path in sorted(glob.glob(str(directory / "*.mat"))):
        pool = load_pool(path)
        for run in range(10):
            columns = draw_columns(pool.members.shape[1], 10, 0, run)
            rows.append(make_row(pool.name, pool.members[:, columns], pool.truth, run, method_seed(0, run)))
    return rows


def chosen_k(row: dict, epsilon: float | None, ratio: float, smallest: float = 0.0) -> int:
    """The rule's k for one ensemble (``epsilon`` None: the shipped choice); a separated cut whose smallest
    cluster holds less than ``smallest`` of the objects is not taken."""
    if epsilon is not None:
        shares = np.array(row["share"])
        drops = np.append(shares[:-1] - shares[1:], 0.0)
        candidates = np.flatnonzero((1 - shares <= epsilon) & (np.array(row["smallest"]) >= smallest))
        if len(candidates):
            best = candidates[np.argmax(drops[candidates])]
            if drops[best] > 0 and drops[best] >= ratio * (1 - shares[best]):
                return int(row["ks"][best])
    return row["shipped"]


def nmi_difference(row: dict, k: int) -> float:
    ks, scores = list(row["ks"]), row["nmi"]
    return scores[ks.index(k)] - scores[ks.index(row["true_k"])] if row["true_k"] in ks else 0.0


def family_score(rows: list[dict], epsilon: float | None, ratio: float, smallest: float = 0.0
                 ) -> tuple[float, str, float]:
    """(mean over data sets of the mean difference, the worst data set, its difference)."""
    per_set: dict[str, list[float]] = {}
    for row in rows:
        per_set.setdefault(row["name"], []).append(nmi_difference(row, chosen_k(row, epsilon, ratio, smallest)))
    means = {name: float(np.mean(values)) for name, values in per_set.items()}
    worst = min(means, key=means.get)
    return float(np.mean(list(means.values()))), worst, means[worst]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battery", type=Path, default=Path("../shared/data/battery"))
    parser.add_argument("--pools", type=Path, default=Path("../shared/data/pools"))
    parser.add_argument("--json", type=Path, help="write every ensemble's cuts' shares and NMIs here")
    args = parser.parse_args(argv)
    families = {"battery": battery_rows(args.battery), "data sets": data_set_rows(), "pools": pool_rows(args.pools)}
    if args.json:
        args.json.write_text(json.dumps(families))
    for epsilon, ratio, smallest in [(None, 0.0, 0.0), *itertools.product(EPSILONS, RATIOS, SMALLEST)]:
        label = "shipped" if epsilon is None else f"ε {epsilon:<6g} ρ {ratio:<3g} σ {smallest:<4g}"
        print(f"{label:24s}" + "  ".join(
            "{}: {:+.3f} (worst {} {:+.3f})".format(name, *family_score(rows, epsilon, ratio, smallest))
            for name, rows in families.items()), flush=True)


if __name__ == "__main__":
    main()
