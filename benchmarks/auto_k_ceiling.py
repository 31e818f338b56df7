"""Automatic k: how far the joint criterion's family can go, and what a rule would have to know about the table.

    python -m benchmarks.auto_k_ceiling [--battery DIR] [--pools DIR] [--curves FILE]

For every ensemble of the three families of :mod:`benchmarks.auto_k_separation` (the battery's dev half, the eight
data sets of the guard's ``auto-k-held-out``, the authors' pools), LWEA and LWGP are cut at every k in 2..50 and each
cut's terms are kept: the LWCA mass inside it S/W and its degree term Σ_c (D_c/W)² (so Q_γ = S/W − γ·Σ_c (D_c/W)² at
any γ), the NMI between the two methods' cuts at each k, and LWEA's NMI against the classes. From these the joint
criterion's LWEA choice is recomputed at any (γ, λ); at the shipped (0.6, 0.15) it is ``select_k``'s. Printed per
family, as the mean over data sets of NMI(chosen k) − NMI(true k) and the worst data set:

- the shipped criterion;
- the (γ, λ) best on the family itself, chosen with its classes (the most any one setting can do there);
- a perfect switch between two resolutions: each data set given the better of (γ_small, λ) and (γ_large, λ) by its
  classes (the ceiling of any rule that sorts tables into two kinds and gives each kind its resolution);
- a (γ, λ) per data set chosen by its classes (the ceiling of any rule that predicts the resolution from the table),
  with the γ each data set needed;
- resolution plateaus: the k optimal over the longest run of a log grid of γ within a range;
- a self-consistent resolution: the smallest γ on a log grid with γ ≥ c·(k/2)^α for the k it chooses (the per data
  set γ grows with the number of classes), (c, α, λ) chosen on each family and scored on all;
- with the features (the battery and the data sets have them, the pools do not): the joint score plus μ × the
  geodesic silhouette of LWEA's cut (:mod:`lwec_tasks.core.geodesic`), (γ, λ, μ) chosen on the battery, each of its
  data sets held out in turn, and scored on the data sets; the run's constants (``FEATURE_RESOLUTION``,
  ``FEATURE_AGREEMENT``, ``SILHOUETTE_WEIGHT``) came from this choice.

``--curves FILE`` keeps the terms (computed when the file is missing: ~5 min on two cores). Results:
docs/decisions.md (*Automatic k: the ceiling of one resolution*).
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks.auto_k_separation import battery_rows, data_set_rows, pool_rows
from lwec_tasks.core.auto_k import consensus_cuts
from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.geodesic import geodesic_silhouettes
from lwec_tasks.core.k_criterion import (
    DEFAULT_AGREEMENT,
    DEFAULT_RESOLUTION,
    FEATURE_AGREEMENT,
    FEATURE_RESOLUTION,
    SILHOUETTE_WEIGHT,
    default_ks,
    k_upper_bound,
    lwca_modularity,
    partition_nmi,
)
from lwec_tasks.core.metrics import nmi

#: Resolutions searched, from far below the shipped 0.6 (separated shapes) to far above (many small clusters).
GAMMAS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
AGREEMENTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
#: (γ range, points on its log grid) of the resolution plateaus measured.
PLATEAU_RANGES = ((0.1, 1.0), (0.05, 2.0), (0.02, 3.0), (0.01, 5.0), (0.005, 10.0))
#: The self-consistent resolution's grid of γ and its settings (c, α).
SELF_CONSISTENT_GAMMAS = tuple(np.geomspace(0.005, 20.0, 90))
SELF_CONSISTENT_SETTINGS = tuple(itertools.product((0.01, 0.02, 0.03, 0.05, 0.1), (0.5, 1.0, 1.5, 2.0, 2.5)))
#: The settings (γ, λ, μ) of the joint score plus μ × the geodesic silhouette searched on the battery.
FEATURE_SETTINGS = tuple(itertools.product((0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0), (0.0, 0.15, 0.3),
                                           (0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0)))
THETA = 0.4


def cut_terms(ensemble: Ensemble, eci: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """(C, 2) per column of ``cuts`` (N, C): S/W, the LWCA mass inside its clusters, and Σ_c (D_c/W)²: the two
    terms of the modularity Q_γ = S/W − γ·Σ_c (D_c/W)² (Q at γ = 0 and the difference to γ = 1)."""
    within = lwca_modularity(ensemble, eci, cuts, resolution=0.0)
    return np.column_stack([within, within - lwca_modularity(ensemble, eci, cuts, resolution=1.0)])


def curves_row(name: str, labels: np.ndarray, truth: np.ndarray, seed: int, random_state: int,
               features: np.ndarray | None = None) -> dict:
    """One ensemble's terms at every candidate k: ``lwea``/``lwgp`` (C, 2) and (C', 2) cut terms, ``agreement``
    (C',) NMI of the two methods' cuts, ``nmi`` (C,) LWEA's NMI against ``truth``, and with ``features`` (N, d)
    ``silhouette`` (C,), the geodesic silhouette of LWEA's cuts seeded as a run seeds it; LWGP's ks are a prefix."""
    ensemble = Ensemble(labels)
    eci = ensemble_eci(ensemble, THETA)
    ks = default_ks(ensemble, "lwea")
    lwgp_ks = ks[ks <= k_upper_bound(ensemble, "lwgp")]
    lwea_cuts = consensus_cuts(ensemble, "lwea", ks, THETA)
    lwgp_cuts = consensus_cuts(ensemble, "lwgp", lwgp_ks, THETA, random_state=random_state)
    row = {"name": name, "seed": seed, "true_k": int(len(np.unique(truth))), "ks": ks.tolist(),
           "lwea": cut_terms(ensemble, eci, lwea_cuts).tolist(), "lwgp": cut_terms(ensemble, eci, lwgp_cuts).tolist(),
           "agreement": [partition_nmi(lwea_cuts[:, j], lwgp_cuts[:, j]) for j in range(len(lwgp_ks))],
           "nmi": [float(nmi(lwea_cuts[:, j], truth)) for j in range(len(ks))]}
    if features is not None:
        row["silhouette"] = geodesic_silhouettes(features, lwea_cuts, random_state=random_state).tolist()
    return row


def joint_k(row: dict, gamma: float, agreement: float, weight: float = 0.0) -> int:
    """LWEA's k by the joint criterion at (γ, λ): ½ (Q_γ(LWEA) + Q_γ(LWGP)) + λ·NMI(LWEA, LWGP) where LWGP can cut,
    Q_γ(LWEA) beyond, plus ``weight`` × the row's ``silhouette`` when ``weight`` is not 0; ties: the smallest k."""
    lwea, lwgp = np.asarray(row["lwea"]), np.asarray(row["lwgp"]).reshape(-1, 2)
    scores = lwea[:, 0] - gamma * lwea[:, 1]
    paired = len(lwgp)
    scores[:paired] = 0.5 * (scores[:paired] + lwgp[:, 0] - gamma * lwgp[:, 1]) + agreement * np.asarray(
        row["agreement"])
    if weight:
        scores = scores + weight * np.asarray(row["silhouette"])
    return int(row["ks"][int(np.argmax(scores))])


def difference(row: dict, k: int) -> float:
    """LWEA's NMI at ``k`` minus at the true k (0 when the true k is not a candidate)."""
    ks = row["ks"]
    return row["nmi"][ks.index(k)] - row["nmi"][ks.index(row["true_k"])] if row["true_k"] in ks else 0.0


def set_means(rows: Sequence[dict], choose: Callable[[dict], int]) -> dict[str, float]:
    """Data set → mean over its ensembles (seeds, runs) of :func:`difference` at ``choose(row)``."""
    per_set: dict[str, list[float]] = {}
    for row in rows:
        per_set.setdefault(row["name"], []).append(difference(row, choose(row)))
    return {name: float(np.mean(values)) for name, values in per_set.items()}


def summary(means: dict[str, float]) -> str:
    worst = min(means, key=means.get)
    return f"{np.mean(list(means.values())):+.3f} (worst {worst} {means[worst]:+.3f})"


def setting_means(rows: Sequence[dict]) -> dict[tuple[float, float], dict[str, float]]:
    """(γ, λ) → :func:`set_means` of the joint criterion there, over ``GAMMAS`` × ``AGREEMENTS``."""
    return {(g, a): set_means(rows, lambda row, g=g, a=a: joint_k(row, g, a))
            for g, a in itertools.product(GAMMAS, AGREEMENTS)}


def best_setting(table: dict[tuple[float, float], dict[str, float]]) -> tuple[float, float]:
    """The (γ, λ) of the highest mean over data sets."""
    return max(table, key=lambda setting: np.mean(list(table[setting].values())))


def best_switch(table: dict[tuple[float, float], dict[str, float]]) -> tuple[dict[str, float], tuple]:
    """A perfect two-resolution switch: each data set the better of (γ_small, λ) and (γ_large, λ); the pair and λ
    of the highest mean. Returns (data set → difference, (γ_small, γ_large, λ))."""
    best, chosen = None, None
    for small, large, agreement in itertools.product(GAMMAS, GAMMAS, AGREEMENTS):
        if small >= large:
            continue
        a, b = table[(small, agreement)], table[(large, agreement)]
        means = {name: max(a[name], b[name]) for name in a}
        if best is None or np.mean(list(means.values())) > np.mean(list(best.values())):
            best, chosen = means, (small, large, agreement)
    return best, chosen


def per_set_oracle(table: dict[tuple[float, float], dict[str, float]]) -> tuple[dict[str, float], dict[str, tuple]]:
    """Each data set's best (γ, λ) by its classes: (data set → difference, data set → (γ, λ)); ties: the setting
    nearest the shipped one."""
    names = next(iter(table.values())).keys()
    shipped = (DEFAULT_RESOLUTION, DEFAULT_AGREEMENT)
    settings = sorted(table, key=lambda s: (abs(np.log(s[0] / shipped[0])), abs(s[1] - shipped[1])))
    chosen = {name: max(settings, key=lambda s, name=name: table[s][name]) for name in names}
    return {name: table[chosen[name]][name] for name in names}, chosen


def plateau_k(row: dict, low: float, high: float, agreement: float, points: int = 60) -> int:
    """The k the joint criterion chooses over the longest run of consecutive γ on a log grid of [low, high]."""
    choices = [joint_k(row, gamma, agreement) for gamma in np.geomspace(low, high, points)]
    best, run, chosen = 0, 0, choices[0]
    for i, k in enumerate(choices):
        run = run + 1 if i and k == choices[i - 1] else 1
        if run > best:
            best, chosen = run, k
    return chosen


def self_consistent_k(row: dict, scale: float, power: float, agreement: float) -> int:
    """The k chosen at the smallest γ of ``SELF_CONSISTENT_GAMMAS`` with γ ≥ scale·(k/2)^power; the largest γ's k
    when there is none."""
    for gamma in SELF_CONSISTENT_GAMMAS:
        k = joint_k(row, gamma, agreement)
        if gamma >= scale * (k / 2) ** power:
            return k
    return k


def feature_choice(battery: Sequence[dict], data_sets: Sequence[dict]) -> list[str]:
    """Lines: the joint score plus μ × silhouette, (γ, λ, μ) over ``FEATURE_SETTINGS`` chosen on the battery (all of
    it, and each data set held out in turn), scored on the battery held out and on the data sets; and the run's."""
    table = {setting: set_means(battery, partial(_feature_k, setting=setting)) for setting in FEATURE_SETTINGS}
    names = sorted(next(iter(table.values())))
    held_out, folds = {}, {}
    for name in names:
        setting = max(FEATURE_SETTINGS, key=lambda s: np.mean([v for n, v in table[s].items() if n != name]))
        held_out[name] = table[setting][name]
        folds[setting] = folds.get(setting, 0) + 1
    chosen = max(FEATURE_SETTINGS, key=lambda s: np.mean(list(table[s].values())))
    shipped = (FEATURE_RESOLUTION, FEATURE_AGREEMENT, SILHOUETTE_WEIGHT)
    shipped_battery = set_means(battery, partial(_feature_k, setting=shipped))
    return [
        f"with the features, (γ, λ, μ) chosen on the battery leaving each data set out: battery held out "
        f"{summary(held_out)}; folds chose {', '.join(f'{s} ×{n}' for s, n in sorted(folds.items()))}",
        f"with the features, (γ, λ, μ) = {chosen} chosen on the whole battery: battery {summary(table[chosen])}, "
        f"data sets {summary(set_means(data_sets, partial(_feature_k, setting=chosen)))}",
        f"with the features, the run's (γ, λ, μ) = {shipped}: battery {summary(shipped_battery)}, "
        f"data sets {summary(set_means(data_sets, partial(_feature_k, setting=shipped)))}",
    ]


def _feature_k(row: dict, setting: tuple[float, float, float]) -> int:
    return joint_k(row, *setting)


def families(battery: Path, pools: Path) -> dict[str, list[dict]]:
    return {"battery": battery_rows(battery, curves_row), "data sets": data_set_rows(curves_row),
            "pools": pool_rows(pools, curves_row)}


def report(found: dict[str, list[dict]]) -> None:
    tables = {name: setting_means(rows) for name, rows in found.items()}

    def line(label: str, per_family: dict[str, str]) -> None:
        print(f"{label:62s}" + "  ".join(f"{name}: {text}" for name, text in per_family.items()), flush=True)

    shipped = (DEFAULT_RESOLUTION, DEFAULT_AGREEMENT)
    line(f"shipped (γ {shipped[0]:g}, λ {shipped[1]:g})", {n: summary(t[shipped]) for n, t in tables.items()})
    for chosen_on, table in tables.items():
        setting = best_setting(table)
        line(f"(γ, λ) best on {chosen_on}: {setting}", {n: summary(t[setting]) for n, t in tables.items()})
    for name, table in tables.items():
        means, (small, large, agreement) = best_switch(table)
        line(f"perfect switch, {name}: γ {small:g} / {large:g}, λ {agreement:g}", {name: summary(means)})
    for name, table in tables.items():
        means, chosen = per_set_oracle(table)
        gammas = sorted(setting[0] for setting in chosen.values())
        line(f"(γ, λ) per data set, {name}", {name: f"{summary(means)}; γ needed {gammas[0]:g} … {gammas[-1]:g}"})
        print("    " + ", ".join(f"{set_name} γ {chosen[set_name][0]:g}" for set_name in sorted(chosen)))
    for (low, high), agreement in itertools.product(PLATEAU_RANGES, (0.0, DEFAULT_AGREEMENT)):
        line(f"plateau over γ in [{low:g}, {high:g}], λ {agreement:g}",
             {n: summary(set_means(rows, partial(plateau_k, low=low, high=high, agreement=agreement)))
              for n, rows in found.items()})
    consistent = {
        (scale, power, agreement): {
            n: set_means(rows, partial(self_consistent_k, scale=scale, power=power, agreement=agreement))
            for n, rows in found.items()}
        for (scale, power), agreement in itertools.product(SELF_CONSISTENT_SETTINGS, (0.0, DEFAULT_AGREEMENT))}
    for chosen_on in found:
        setting = max(consistent, key=lambda s: np.mean(list(consistent[s][chosen_on].values())))
        line(f"self-consistent γ best on {chosen_on}: c, α, λ = {setting}",
             {n: summary(means) for n, means in consistent[setting].items()})
    if all("silhouette" in row for row in [*found.get("battery", []), *found.get("data sets", [])]):
        for text in feature_choice(found["battery"], found["data sets"]):
            print(text, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battery", type=Path, default=Path("../shared/data/battery"))
    parser.add_argument("--pools", type=Path, default=Path("../shared/data/pools"))
    parser.add_argument("--curves", type=Path, help="the terms of every ensemble: read when present, else written")
    args = parser.parse_args(argv)
    if args.curves and args.curves.exists():
        found = json.loads(args.curves.read_text())
    else:
        found = families(args.battery, args.pools)
        if args.curves:
            args.curves.write_text(json.dumps(found))
    report(found)


if __name__ == "__main__":
    main()
