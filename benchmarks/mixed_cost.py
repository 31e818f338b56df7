"""What text and boolean columns cost a run: ``lwec run`` on a mixed table against the same run on its numeric
columns alone, medians of alternated pairs.

    python -m benchmarks.mixed_cost --database-url URL [--rows 10000000] [--pairs 3]

The table ``mixed_<rows>`` (PostgreSQL, built once and reused while its marker matches): 12 numeric columns of
20 overlapping blobs (std 6, as the competent-script benchmark's), a text segment tied to the blob (its level
right for 80 % of rows), a text region of 12 levels independent of it, a boolean tied to the blob's parity (90 %
right), and a text tier of 4 levels with 10 % NULLs; an ``id`` primary key and the blob as ``target``.

Both runs are the run's defaults (method, generators) with k = 20, M = 10 and seed 0, against one Prefect server
started for them and one MLflow store: the mixed run reads every column lwec uses by default (the 12 numerics
and the 4 categorical columns); the numeric run names the 12 numerics with ``--features``; both are given
``--label-column target``, which keeps the truth out of the features. Printed: each run's
wall time, NMI against ``target`` and stage times (MLflow ``time_<stage>_s``), the medians per stage and of the
whole runs, and mixed / numeric. Target: ≤ 1.3× (the guard's ``mixed-cost-10m``, :func:`measure`).
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.competent import (
    measure_process,
    nmi_against,
    prefect_environment,
    prefect_server,
    read_column,
    settle_table,
)
from benchmarks.executors import log

NUMERIC = tuple(f"x{j}" for j in range(12))
CATEGORICAL = ("segment", "region", "active", "tier")
CENTERS, K, ENSEMBLE_SIZE, SEED = 20, 20, 10, 0
MARKER = "lwec_mixed_cost_spec"
#: Rows generated and copied at a time.
CHUNK = 500_000


def table_spec(rows: int) -> str:
    return f"mixed_cost v1: rows={rows}, numeric={len(NUMERIC)}, categorical={','.join(CATEGORICAL)}, seed=1"


def mixed_chunk(start: int, stop: int, centres: np.ndarray, rng: np.random.Generator) -> str:
    """Rows ``start``..``stop`` − 1 as CSV text (no header), columns id, numerics, categoricals, target."""
    import pandas as pd

    n = stop - start
    blob = rng.integers(0, CENTERS, n)
    X = centres[blob] + rng.normal(scale=6.0, size=(n, len(NUMERIC)))
    segment = np.where(rng.random(n) < 0.8, blob % 5, rng.integers(0, 5, n))
    tier = rng.integers(0, 4, n).astype(object)
    tier[rng.random(n) < 0.1] = None
    frame = pd.DataFrame(X, columns=list(NUMERIC))
    frame.insert(0, "id", np.arange(start, stop))
    frame["segment"] = np.array(["north", "south", "east", "west", "centre"])[segment]
    frame["region"] = np.char.add("r", rng.integers(0, 12, n).astype(str))
    frame["active"] = np.where(rng.random(n) < 0.9, blob % 2 == 0, blob % 2 == 1)
    frame["tier"] = pd.Series(tier).map(lambda t: None if t is None else f"t{t}")
    frame["target"] = blob
    buffer = io.StringIO()
    frame.to_csv(buffer, header=False, index=False, na_rep="")
    return buffer.getvalue()


def ensure_table(url: str, rows: int) -> str:
    """``mixed_<rows>``, reused when its marker says it was built by this spec, else built."""
    import sqlalchemy as sa

    name = f"mixed_{rows}"
    engine = sa.create_engine(url)
    marker = sa.Table(MARKER, sa.MetaData(), sa.Column("table_name", sa.String(200), primary_key=True),
                      sa.Column("spec", sa.Text, nullable=False))
    table = sa.Table(name, sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True),
                     *(sa.Column(c, sa.Double) for c in NUMERIC), sa.Column("segment", sa.Text),
                     sa.Column("region", sa.Text), sa.Column("active", sa.Boolean), sa.Column("tier", sa.Text),
                     sa.Column("target", sa.Integer))
    try:
        marker.create(engine, checkfirst=True)
        with engine.connect() as connection:
            spec = connection.execute(sa.select(marker.c.spec).where(marker.c.table_name == name)).scalar()
        if spec == table_spec(rows):
            return name
        log(f"# building {name} ({rows:,} rows)")
        started = time.perf_counter()
        rng = np.random.default_rng(1)
        centres = rng.uniform(-10, 10, size=(CENTERS, len(NUMERIC)))
        with engine.begin() as connection:
            table.drop(connection, checkfirst=True)
            table.create(connection)
            preparer = connection.dialect.identifier_preparer
            columns = ", ".join(preparer.quote(c.name) for c in table.columns)
            with connection.connection.driver_connection.cursor() as cursor, cursor.copy(
                    f"COPY {preparer.format_table(table)} ({columns}) FROM STDIN (FORMAT csv)") as copy:
                for start in range(0, rows, CHUNK):
                    copy.write(mixed_chunk(start, min(start + CHUNK, rows), centres, rng))
        settle_table(engine, name)
        with engine.begin() as connection:
            connection.execute(sa.delete(marker).where(marker.c.table_name == name))
            connection.execute(sa.insert(marker).values(table_name=name, spec=table_spec(rows)))
        log(f"#   built in {time.perf_counter() - started:.1f} s")
    finally:
        engine.dispose()
    return name


def run_command(url: str, table: str, output_table: str, tracking_uri: str, numeric_only: bool) -> list[str]:
    import sys

    features = ["--features", ",".join(NUMERIC)] if numeric_only else []
    return [sys.executable, "-m", "lwec_tasks", "run", "--database-url", url, "--table", table, "-k", str(K),
            "-M", str(ENSEMBLE_SIZE), "--seed", str(SEED), "--output-table", output_table,
            "--run-name", output_table, "--tracking-uri", tracking_uri, "--label-column", "target", *features]


def measure(url: str, rows: int, pairs: int, log=log) -> dict[str, list[dict]]:
    """The alternated runs on ``mixed_<rows>``: kind ("mixed", "numeric") → one dict per pair (``seconds``,
    ``nmi``, ``stages``: the run's MLflow ``time_<stage>_s`` by stage)."""
    table = ensure_table(url, rows)
    truth = read_column(url, table, "target")
    runs: dict[str, list[dict]] = {"mixed": [], "numeric": []}
    with tempfile.TemporaryDirectory(prefix="lwec-mixed-cost-") as directory:
        workdir = Path(directory)
        tracking_uri = f"sqlite:///{workdir / 'mlflow.db'}"
        with prefect_server(workdir) as (api_url, _server):
            env = prefect_environment(workdir / "prefect-server", api_url)
            for pair in range(pairs):
                for kind in ("mixed", "numeric") if pair % 2 == 0 else ("numeric", "mixed"):
                    output = f"{table}_{kind}_{pair}"
                    measured = measure_process(run_command(url, table, output, tracking_uri, kind == "numeric"), env,
                                               workdir, workdir / f"{output}.log")
                    if measured["returncode"] != 0:
                        raise SystemExit((workdir / f"{output}.log").read_text()[-3000:])
                    score = nmi_against(truth, read_column(url, output, "label"))
                    stages = stage_times(tracking_uri, output)
                    runs[kind].append({"seconds": measured["seconds"], "nmi": score, "stages": stages})
                    log(f"pair {pair + 1} {kind:>7}: {measured['seconds']:.1f} s, NMI {score:.4f}; stages "
                        + ", ".join(f"{name} {value:.1f}" for name, value in stages.items()))
    return runs


def stage_times(tracking_uri: str, run_key: str) -> dict[str, float]:
    """The ``time_<stage>_s`` metrics of the run tagged ``lwec.run_key = run_key`` in the ``lwec`` experiment (the
    runs' default), by stage in the flow's order; {} when not found."""
    from mlflow import MlflowClient

    from benchmarks.executors import STAGES

    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name("lwec")
    found = [] if experiment is None else client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.`lwec.run_key` = '{run_key}'")
    metrics = found[0].data.metrics if found else {}
    return {stage: metrics[f"time_{stage}_s"] for stage in STAGES if f"time_{stage}_s" in metrics}


def summary(runs: dict[str, list[dict]]) -> dict:
    """Medians: ``mixed``, ``numeric`` (seconds), ``ratio`` (mixed / numeric) and ``stages``: stage → (mixed,
    numeric) median seconds, for the stages both kinds report."""
    mixed = statistics.median(r["seconds"] for r in runs["mixed"])
    numeric = statistics.median(r["seconds"] for r in runs["numeric"])
    names = [name for name in runs["mixed"][0]["stages"]
             if all(name in r["stages"] for kind in runs for r in runs[kind])]
    stages = {name: tuple(statistics.median(r["stages"][name] for r in runs[kind]) for kind in ("mixed", "numeric"))
              for name in names}
    return {"mixed": mixed, "numeric": numeric, "ratio": mixed / numeric, "stages": stages}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="PostgreSQL URL (SQLAlchemy, psycopg)")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--pairs", type=int, default=3, help="alternated pairs (default 3)")
    args = parser.parse_args(argv)
    found = summary(measure(args.database_url, args.rows, args.pairs))
    log("median stages (mixed / numeric): " + ", ".join(f"{name} {a:.1f} / {b:.1f} s"
                                                        for name, (a, b) in found["stages"].items()))
    log(f"median: mixed {found['mixed']:.1f} s, numeric {found['numeric']:.1f} s, mixed / numeric "
        f"{found['ratio']:.2f}× (target ≤ 1.3×)")


if __name__ == "__main__":
    main()
