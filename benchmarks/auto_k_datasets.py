"""Automatic k through the whole consensus flow on data sets available offline.

``python -m benchmarks.auto_k_datasets [--seeds 3] [--json F]`` writes each data set (scikit-learn's
digits, wine, breast cancer and iris, and four synthetic shapes) to a SQLite table with its classes in a
``target`` column, runs ``consensus_flow`` with ``n_clusters="auto"`` and with the true number of classes
for LWEA and LWGP, and prints the NMI (max normalisation, from the run summary) of each against the
classes, the k chosen and the difference auto − true. Nothing about the classes reaches the choice of k:
``label_column`` only makes the summary report agreement.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sklearn import datasets

from benchmarks.flow_study import report_flow_study


def offline_data_sets(seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Name → (features (N, d), classes (N,)): four scikit-learn data sets and four synthetic shapes."""
    rng = np.random.RandomState(seed)
    anisotropic, anisotropic_y = datasets.make_blobs(1500, centers=3, random_state=170)
    anisotropic = anisotropic @ np.array([[0.6, -0.6], [-0.4, 0.8]])
    shapes = {
        "blobs (6)": datasets.make_blobs(3000, n_features=8, centers=6, cluster_std=1.5, random_state=rng),
        "moons": datasets.make_moons(2000, noise=0.05, random_state=rng),
        "circles": datasets.make_circles(2000, factor=0.5, noise=0.05, random_state=rng),
        "anisotropic (3)": (anisotropic, anisotropic_y),
    }
    loaded = {name: loader(return_X_y=True) for name, loader in [
        ("digits", datasets.load_digits), ("wine", datasets.load_wine),
        ("breast cancer", datasets.load_breast_cancer), ("iris", datasets.load_iris)]}
    return {**loaded, **shapes}


def write_table(engine: sa.Engine, name: str, features: np.ndarray, classes: np.ndarray) -> list[str]:
    """Write ``features`` and ``target`` to table ``name`` (replacing it); returns the feature column names."""
    columns = [f"f{j}" for j in range(features.shape[1])]
    frame = pd.DataFrame(features, columns=columns)
    frame.insert(0, "id", np.arange(len(frame)))
    frame["target"] = classes
    frame.to_sql(name, engine, index=False, if_exists="replace")
    return columns


def run_study(seeds: int, workdir: Path) -> list[dict]:
    """Every data set × method × seed, at k = "auto" and at the true k; one row per flow run pair."""
    from flows.consensus import consensus_flow

    url = f"sqlite:///{workdir / 'auto_k.db'}"
    tracking = f"sqlite:///{workdir / 'mlflow.db'}"
    engine = sa.create_engine(url)
    rows = []
    for number, (name, (features, classes)) in enumerate(offline_data_sets().items()):
        table = f"data_{number}"
        columns = write_table(engine, table, np.asarray(features, dtype=np.float64), np.asarray(classes))
        true_k = len(np.unique(classes))
        for method in ("lwea", "lwgp"):
            for seed in range(seeds):
                common = dict(database_url=url, table=table, feature_columns=columns, id_column="id",
                              label_column="target", method=method, seed=seed, tracking_uri=tracking,
                              experiment="auto-k-datasets", stable_ids=False)
                auto = consensus_flow(n_clusters="auto", output_table=f"{table}_auto", **common)
                fixed = consensus_flow(n_clusters=true_k, output_table=f"{table}_true", **common)
                rows.append({"data set": name, "n": len(classes), "true k": true_k, "method": method.upper(),
                             "seed": seed, "auto k": auto["k"], "nmi auto": auto["nmi"], "nmi true k": fixed["nmi"],
                             "difference": auto["nmi"] - fixed["nmi"]})
                print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    """Per data set and method: mean NMI at auto and true k over seeds, the chosen ks, the difference."""
    frame = pd.DataFrame(rows)
    lines = ["| data set | N | true k | method | NMI true k | NMI auto | difference | k chosen |",
             "|---|---:|---:|---|---:|---:|---:|---|"]
    for (name, method), group in frame.groupby(["data set", "method"], sort=False):
        lines.append(f"| {name} | {group['n'].iloc[0]} | {group['true k'].iloc[0]} | {method} | "
                     f"{group['nmi true k'].mean():.3f} | {group['nmi auto'].mean():.3f} | "
                     f"{group['difference'].mean():+.3f} | {', '.join(map(str, group['auto k']))} |")
    for method, group in frame.groupby("method"):
        per_set = group.groupby("data set")["difference"].mean()
        lines.append(f"| **mean** | | | {method} | | | **{per_set.mean():+.3f}** (worst {per_set.min():+.3f}) | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.auto_k_datasets", description=__doc__)
    parser.add_argument("--seeds", type=int, default=3, help="seeds per data set and method (default 3)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    return report_flow_study(partial(run_study, args.seeds), markdown, args.json)


if __name__ == "__main__":
    sys.exit(main())
