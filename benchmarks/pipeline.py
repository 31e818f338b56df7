"""``python -m benchmarks pipeline``: the whole flow against the pipeline a pandas user would write instead.

    python -m benchmarks pipeline --database-url postgresql+psycopg://lwec:lwec@127.0.0.1:5432/lwec_bench --rows 1000000

A table of ``--rows`` rows × 16 features (20 Gaussian blobs, ``cluster_std=6``,
``make_blobs(random_state=1)``, ground truth in ``target``) is created once per
size. Then, each in its own process (so peak memory is per pipeline):

* **lwec** — ``consensus_flow`` (read → base clusterings → ECI → consensus →
  labels written → MLflow run), per-stage times from the flow's summary;
* **naive** — ``pandas.read_sql``, one scikit-learn ``MiniBatchKMeans(k)``,
  then ``COPY`` of (id, label) (PostgreSQL; ``to_sql`` elsewhere).

Prints wall time per stage, peak memory (RSS) and NMI against the ground truth
for both, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.data import PROJECT_ROOT

FEATURES = [f"f{j}" for j in range(16)]
CENTERS = 20
CLUSTER_STD = 6.0
BLOBS_SEED = 1


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--database-url", required=True,
                        help="database for the features table and both pipelines' labels (PostgreSQL for COPY)")
    parser.add_argument("--rows", type=_at_least(1_000), action="append",
                        help="table size; repeat for several sizes (default 1,000,000)")
    parser.add_argument("--method", choices=("lwea", "lwgp"), default="lwgp", help="consensus method (default lwgp)")
    parser.add_argument("-k", "--n-clusters", type=_at_least(2), default=CENTERS, help=f"k (default {CENTERS})")
    parser.add_argument("--output", metavar="FILE", help="also write the report (markdown) to FILE")
    return parser


def _at_least(minimum: int):
    """An argparse type: an integer (``_`` and ``,`` allowed as separators) of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected at least {minimum:,}, got {value}")
        return value

    return parse


def table_name(rows: int) -> str:
    return f"bench_blobs_{rows}"


def ensure_table(database_url: str, rows: int) -> str:
    """Create the blobs table of ``rows`` rows unless it already holds them; returns its name."""
    import sqlalchemy as sa

    name = table_name(rows)
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            if sa.inspect(connection).has_table(name):
                table = sa.Table(name, sa.MetaData(), autoload_with=connection)
                if connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == rows:
                    return name
        _write_blobs(engine, name, rows)
    finally:
        engine.dispose()
    return name


def _write_blobs(engine, name: str, rows: int) -> None:
    import numpy as np
    import pandas as pd
    import sqlalchemy as sa
    from sklearn.datasets import make_blobs

    print(f"# creating table {name} ({rows:,} rows × {len(FEATURES)} features)", file=sys.stderr, flush=True)
    X, y = make_blobs(n_samples=rows, n_features=len(FEATURES), centers=CENTERS, cluster_std=CLUSTER_STD,
                      random_state=BLOBS_SEED)
    columns = [sa.Column("id", sa.BigInteger, primary_key=True), *(sa.Column(f, sa.Float) for f in FEATURES),
               sa.Column("target", sa.Integer)]
    table = sa.Table(name, sa.MetaData(), *columns)
    with engine.begin() as connection:
        table.drop(connection, checkfirst=True)
        table.create(connection)
    step = 500_000
    for start in range(0, rows, step):
        frame = pd.DataFrame(X[start:start + step], columns=FEATURES)
        frame.insert(0, "id", np.arange(start, min(start + step, rows)))
        frame["target"] = y[start:start + step]
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                _copy_in(connection, table, frame)
            else:
                frame.to_sql(name, connection, if_exists="append", index=False)


def _copy_in(connection, table, frame) -> None:
    """``COPY table (columns) FROM STDIN`` with the frame as CSV, identifiers quoted by the dialect."""
    import io

    preparer = connection.dialect.identifier_preparer
    columns = ", ".join(preparer.quote(c) for c in frame.columns)
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, header=False)
    raw = connection.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(
            f"COPY {preparer.format_table(table)} ({columns}) FROM STDIN WITH (FORMAT csv)") as copy:
        copy.write(buffer.getvalue())


def run_child(kind: str, database_url: str, table: str, method: str, k: int, workdir: Path) -> dict:
    command = [sys.executable, "-m", "benchmarks.pipeline_child", kind, database_url, table, method, str(k),
               str(workdir)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(lines[-1][len("RESULT "):])


def report(rows: int, lwec: dict, naive: dict) -> str:
    def cell(result, key):
        value = result.get("stages", {}).get(key)
        return "" if value is None else f"{value:.1f}"

    lines = [f"### {rows:,} rows × {len(FEATURES)} features", "",
             "| pipeline | read | fit / base clusterings | ECI | consensus | stable ids | write | labelling model "
             "| MLflow | whole | peak MB | NMI |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, result in (("lwec flow", lwec), ("naive pandas + MiniBatchKMeans", naive)):
        if "error" in result:
            lines.append(f"| {name} | error: {result['error']} |||||||||||")
            continue
        lines.append(
            f"| {name} | {cell(result, 'load')} | {cell(result, 'generate')} | {cell(result, 'eci')} | "
            f"{cell(result, 'consensus')} | {cell(result, 'stable_ids')} | {cell(result, 'write')} | "
            f"{cell(result, 'model')} | {cell(result, 'mlflow')} | "
            f"{result['seconds']:.1f} | {result['peak_mb']:,.0f} | {result['nmi']:.4f} |"
        )
    if "error" not in lwec and "error" not in naive:
        lines += ["", f"lwec / naive: time {lwec['seconds'] / naive['seconds']:.2f}×, "
                      f"peak memory {lwec['peak_mb'] / naive['peak_mb']:.2f}×, "
                      f"NMI {lwec['nmi'] - naive['nmi']:+.4f}"]
    return "\n".join(lines)


def main(args) -> int:
    import tempfile

    sections = []
    for rows in args.rows or [1_000_000]:
        table = ensure_table(args.database_url, rows)
        with tempfile.TemporaryDirectory(prefix="lwec-bench-pipeline-") as workdir:
            started = time.perf_counter()
            print(f"# {rows:,} rows: lwec flow", file=sys.stderr, flush=True)
            lwec = run_child("lwec", args.database_url, table, args.method, args.n_clusters, Path(workdir))
            print(f"#   {lwec}", file=sys.stderr, flush=True)
            print(f"# {rows:,} rows: naive pipeline", file=sys.stderr, flush=True)
            naive = run_child("naive", args.database_url, table, args.method, args.n_clusters, Path(workdir))
            print(f"#   {naive}", file=sys.stderr, flush=True)
        sections.append(report(rows, lwec, naive) + f"\n\n(benchmark wall time {time.perf_counter() - started:.0f} s)")
    text = "\n\n".join(sections)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    return 0
