"""The row confidence on the acceptance table: `lwec run` (LWEA and LWGP, k = 20) on ``blobs_<N>`` (PostgreSQL,
16-d ``make_blobs(centers=20, cluster_std=6, random_state=1)``, z-scored, M = 10) with ``target`` as ground truth;
prints, per method, the range of the stored confidences read through ``<out>`` and ``<out>_latest``, the share
of rows off their cluster's majority class and the ROC AUC of the confidence for "the row's label agrees with
the majority truth of its cluster".

    python -m benchmarks.evidence_bar --database-url postgresql+psycopg://... [--rows 1000000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sklearn.metrics import roc_auc_score

from benchmarks.competent import ensure_table

ROOT = Path(__file__).resolve().parents[1]


def majority_agrees(labels: np.ndarray, truth: np.ndarray) -> np.ndarray:
    frame = pd.DataFrame({"label": labels, "truth": truth})
    majority = frame.groupby("label")["truth"].agg(lambda t: t.value_counts().idxmax())
    return frame["truth"].to_numpy() == majority.loc[frame["label"]].to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dask-address")
    args = parser.parse_args()
    table = ensure_table(args.database_url, args.rows)
    engine = sa.create_engine(args.database_url)
    with engine.connect() as connection:
        truth = pd.read_sql(sa.text(f"SELECT id, target FROM {table} ORDER BY id"), connection)
    with tempfile.TemporaryDirectory(prefix="lwec-evidence-") as scratch:
        for method in ("lwea", "lwgp"):
            output = f"evidence_bar_{method}"
            run_key = f"bar-{method}-{int(time.time())}"
            command = [sys.executable, "-m", "lwec_tasks", "run", "--database-url", args.database_url,
                       "--table", table, "-k", "20", "--method", method, "--seed", "0", "--label-column", "target",
                       "--output-table", output, "--run-name", run_key, "--experiment", "evidence-bar",
                       "--tracking-uri", f"sqlite:///{scratch}/mlflow.db",
                       *(["--dask-address", args.dask_address] if args.dask_address else [])]
            started = time.perf_counter()
            subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - started
            with engine.connect() as connection:
                stored = pd.read_sql(sa.text(f"SELECT id, label, confidence FROM {output} WHERE run_key = :key "
                                             "ORDER BY id"), connection, params={"key": run_key})
                latest = pd.read_sql(sa.text(f"SELECT id, label, confidence FROM {output}_latest "
                                             f"WHERE source_table = :table ORDER BY id"), connection,
                                     params={"table": table})
            assert stored["id"].tolist() == truth["id"].tolist()
            assert np.array_equal(latest["confidence"].to_numpy(), stored["confidence"].to_numpy())
            confidence = stored["confidence"].to_numpy(dtype=np.float64)
            good = majority_agrees(stored["label"].to_numpy(), truth["target"].to_numpy())
            print(f"{method}: {len(stored):,} rows in {seconds:.1f} s; confidence in [{confidence.min():.4f}, "
                  f"{confidence.max():.4f}], NULL {int(stored['confidence'].isna().sum())}; off-majority "
                  f"{1 - good.mean():.2%}; ROC AUC {roc_auc_score(good, confidence):.4f}", flush=True)
    engine.dispose()


if __name__ == "__main__":
    main()
