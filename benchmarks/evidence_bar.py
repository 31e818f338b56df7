"""The row confidence on the acceptance table: `lwec run` (LWEA and LWGP, k = 20) on ``blobs_<N>`` (PostgreSQL,
16-d ``make_blobs(centers=20, cluster_std=6, random_state=1)``, z-scored, M = 10) with ``target`` as ground truth;
prints, per method, the range of the stored confidences read through ``<out>`` and ``<out>_latest``, the share
of rows off their cluster's majority class, the ROC AUC of the confidence for "the row's label agrees with
the majority truth of its cluster", its ten-bin expected calibration error for the same event, and the NMI of
the labels against ``target``.

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

from benchmarks.competent import ensure_table

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("lwea", "lwgp")


def majority_agrees(labels: np.ndarray, truth: np.ndarray) -> np.ndarray:
    frame = pd.DataFrame({"label": labels, "truth": truth})
    majority = frame.groupby("label")["truth"].agg(lambda t: t.value_counts().idxmax())
    return frame["truth"].to_numpy() == majority.loc[frame["label"]].to_numpy()


def measure(database_url: str, rows: int = 1_000_000, dask_address: str | None = None,
            log=lambda line: None) -> dict[str, dict]:
    """Per method ("lwea", "lwgp"): one ``lwec run`` (run default mix, k = 20, seed 0) on ``blobs_<rows>``, and
    of its stored rows ``seconds``, ``rows``, ``min``/``max`` confidence, ``nulls``, ``off_majority`` (share),
    ``auc``, ``ece`` (ten bins) and ``nmi`` (max-normalised, against ``target``)."""
    import sqlalchemy as sa
    from sklearn.metrics import roc_auc_score

    from benchmarks.confidence_calibration import ece
    from lwec_tasks import nmi

    table = ensure_table(database_url, rows)
    engine = sa.create_engine(database_url)
    figures = {}
    try:
        with engine.connect() as connection:
            truth = pd.read_sql(sa.text(f"SELECT id, target FROM {table} ORDER BY id"), connection)
        with tempfile.TemporaryDirectory(prefix="lwec-evidence-") as scratch:
            for method in METHODS:
                output = f"evidence_bar_{method}"
                run_key = f"bar-{method}-{int(time.time())}"
                command = [sys.executable, "-m", "lwec_tasks", "run", "--database-url", database_url,
                           "--table", table, "-k", "20", "--method", method, "--seed", "0", "--label-column",
                           "target", "--output-table", output, "--run-name", run_key, "--experiment",
                           "evidence-bar", "--tracking-uri", f"sqlite:///{scratch}/mlflow.db",
                           *(["--dask-address", dask_address] if dask_address else [])]
                log(f"# {method}: lwec run on {table}")
                started = time.perf_counter()
                subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
                seconds = time.perf_counter() - started
                with engine.connect() as connection:
                    stored = pd.read_sql(sa.text(f"SELECT id, label, confidence FROM {output} WHERE run_key = :key "
                                                 "ORDER BY id"), connection, params={"key": run_key})
                    latest = pd.read_sql(sa.text(f"SELECT id, label, confidence FROM {output}_latest "
                                                 f"WHERE source_table = :table ORDER BY id"), connection,
                                         params={"table": table})
                if stored["id"].tolist() != truth["id"].tolist():
                    raise RuntimeError(f"{method}: the run's labels do not cover the table's ids")
                if not np.array_equal(latest["confidence"].to_numpy(), stored["confidence"].to_numpy()):
                    raise RuntimeError(f"{method}: {output}_latest and {output} disagree on the confidences")
                confidence = stored["confidence"].to_numpy(dtype=np.float64)
                labels, target = stored["label"].to_numpy(), truth["target"].to_numpy()
                good = majority_agrees(labels, target)
                figures[method] = {
                    "seconds": seconds, "rows": len(stored), "min": float(np.nanmin(confidence)),
                    "max": float(np.nanmax(confidence)), "nulls": int(stored["confidence"].isna().sum()),
                    "off_majority": float(1 - good.mean()), "auc": float(roc_auc_score(good, confidence)),
                    "ece": ece(confidence, good), "nmi": float(nmi(labels, target))}
    finally:
        engine.dispose()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dask-address")
    args = parser.parse_args()
    for method, found in measure(args.database_url, args.rows, args.dask_address).items():
        print(f"{method}: {found['rows']:,} rows in {found['seconds']:.1f} s; confidence in [{found['min']:.4f}, "
              f"{found['max']:.4f}], NULL {found['nulls']}; off-majority {found['off_majority']:.2%}; ROC AUC "
              f"{found['auc']:.4f}; ECE {found['ece']:.4f}; NMI {found['nmi']:.4f}", flush=True)


if __name__ == "__main__":
    main()
