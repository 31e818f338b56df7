"""Choosing a generator mix by leave-one-data-set-out validation over ``python -m benchmarks battery --json`` files.

    python -m benchmarks.battery_choice scores_kmeans.json scores_genie.json ...

Each file holds one candidate mix scored on the same data sets. For every data set in turn, the mix with
the highest mean AMI (LWEA and LWGP averaged, each set's mean over seeds) on the *other* data sets is
chosen and scored on the held-out one; the held-out scores, averaged over the data sets, estimate what
choosing the mix this way gives on data sets it was not chosen on (the tuned mean, over every set, is
higher by how much the choice fits the sets).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

METHODS = ("LWEA", "LWGP")
#: The candidate mixes the run's default was chosen among (docs/decisions.md lists each one's scores).
CANDIDATE_MIXES = (
    "kmeans", "genie", "spectral",
    "genie:1,spectral:2,gmm:1", "genie:2,spectral:3,gmm:2", "genie:2,spectral:2,gmm:1", "genie:2,spectral:3,gmm:1",
    "genie:2,spectral:1,gmm:1", "genie:1,spectral:1,gmm:1", "genie:1,spectral:3,gmm:1", "genie:1,spectral:2",
    "genie:1,spectral:1,gmm:1,dbscan:1", "spectral:1,gmm:1", "genie:1,spectral:1", "genie:1,gmm:1",
    "genie:1,spectral:1,gmm:1,subspace:1", "genie:1,spectral:1,gmm:2", "kmeans:1,genie:3,gmm:1",
    "kmeans:1,genie:2,gmm:1", "kmeans:1,genie:2,gmm:2", "kmeans:1,genie:1,spectral:1,gmm:1", "genie:2,gmm:1",
    "kmeans:1,genie:1,gmm:1", "kmeans:1,genie:1",
)


@dataclass
class Candidate:
    """One mix: per data set (sorted names) its mean AMI over seeds and its SD over seeds, per method."""

    mix: str
    names: list[str]
    mean: dict[str, np.ndarray]
    sd: dict[str, np.ndarray]

    @property
    def criterion(self) -> np.ndarray:
        """Per data set: the mean of LWEA's and LWGP's mean AMI."""
        return (self.mean["LWEA"] + self.mean["LWGP"]) / 2


def load(path: Path) -> Candidate:
    """The candidate of one ``python -m benchmarks battery --json`` file."""
    stored = json.loads(Path(path).read_text())
    return candidate(stored["generators"], stored["results"])


def candidate(mix: str, results: list) -> Candidate:
    """The candidate of ``mix`` from its battery results (``SetResult`` objects or their JSON dicts)."""
    results = sorted((r if isinstance(r, dict) else vars(r) for r in results), key=lambda r: r["name"])
    return Candidate(mix, [r["name"] for r in results],
                     {m: np.array([np.mean(r["scores"][m]) for r in results]) for m in METHODS},
                     {m: np.array([np.std(r["scores"][m]) for r in results]) for m in METHODS})


def leave_one_out(candidates: list[Candidate]) -> dict:
    """Held-out means per method, the mix chosen for each held-out set, and the mix chosen on all sets."""
    names = candidates[0].names
    if any(c.names != names for c in candidates):
        raise ValueError("the candidates were scored on different data sets")
    criteria = np.array([c.criterion for c in candidates])  # (candidates, sets)
    totals = criteria.sum(axis=1)
    held_out = {m: [] for m in METHODS}
    held_out_sd = {m: [] for m in METHODS}
    chosen = []
    for i in range(len(names)):
        best = int(np.argmax(totals - criteria[:, i]))  # ties: the first candidate
        chosen.append(candidates[best].mix)
        for m in METHODS:
            held_out[m].append(candidates[best].mean[m][i])
            held_out_sd[m].append(candidates[best].sd[m][i])
    overall = candidates[int(np.argmax(totals))]
    return {
        "held_out": {m: float(np.mean(v)) for m, v in held_out.items()},
        "held_out_seed_sd": {m: float(np.mean(v)) for m, v in held_out_sd.items()},
        "chosen_per_set": dict(zip(names, chosen)),
        "chosen": overall.mix,
        "tuned": {m: float(np.mean(overall.mean[m])) for m in METHODS},
        "candidates": {c.mix: {m: float(np.mean(c.mean[m])) for m in METHODS}
                       | {f"{m} seed SD": float(np.mean(c.sd[m])) for m in METHODS} for c in candidates},
    }


def report(result: dict) -> str:
    lines = ["| mix | LWEA | LWGP | LWEA seed SD | LWGP seed SD |", "|---|---:|---:|---:|---:|"]
    for mix, row in sorted(result["candidates"].items(), key=lambda item: -(item[1]["LWEA"] + item[1]["LWGP"])):
        lines.append(f"| {mix} | {row['LWEA']:.3f} | {row['LWGP']:.3f} | {row['LWEA seed SD']:.3f} | "
                     f"{row['LWGP seed SD']:.3f} |")
    counts: dict[str, int] = {}
    for mix in result["chosen_per_set"].values():
        counts[mix] = counts.get(mix, 0) + 1
    lines += ["", f"Chosen on every data set: {result['chosen']} (LWEA {result['tuned']['LWEA']:.3f}, LWGP "
              f"{result['tuned']['LWGP']:.3f}: the tuned figure).",
              f"Leave one data set out: LWEA {result['held_out']['LWEA']:.3f}, LWGP {result['held_out']['LWGP']:.3f} "
              f"held out (mean seed SD {result['held_out_seed_sd']['LWEA']:.3f} / "
              f"{result['held_out_seed_sd']['LWGP']:.3f}); mixes chosen across the folds: "
              + ", ".join(f"{mix} ×{n}" for mix, n in sorted(counts.items(), key=lambda item: -item[1]))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    paths = argv if argv is not None else sys.argv[1:]
    if len(paths) < 1:
        print(__doc__)
        return 2
    print(report(leave_one_out([load(Path(p)) for p in paths])), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
