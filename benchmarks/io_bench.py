"""Database I/O: the fast paths against the portable ones.

``python -m benchmarks.io_bench [--rows 1000000] [--features 16] [--postgres-url URL]``

Times reading a feature table (integer id + float features, in id order) with
``read_rows`` (ADBC) and with ``LWEC_SQL_FAST_PATH=0`` (``pandas.read_sql``
in chunks), and writing that many labels with ``write_labels`` (ADBC
ingestion into the staging table) and with ``LWEC_SQL_FAST_PATH=0`` (``executemany``), on PostgreSQL (from
``--postgres-url``, else ``$LWEC_TEST_POSTGRES_URL``; skipped without one) and
on a SQLite file. Each case runs in its own subprocess, so its peak memory
is its own: *peak MB* is the process's peak resident size during the timed
call (``VmHWM``, reset before it), *extra MB* that peak minus the size just
before the call (for a read, the result frame is part of it). The read check compares a hash of the frames
(values, dtypes, order); the write check compares the stored rows (count and
sums of ids and labels, and the constant columns).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FEATURES_TABLE = "io_bench_features"
LABELS_TABLE = "io_bench_labels"


# ----------------------------------------------------------------------------- data


def make_data(n_rows: int, n_features: int, shuffle: bool = False, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Ids 1..n (in that order, or shuffled) and standard normal features."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1, n_rows + 1, dtype=np.int64)
    if shuffle:
        ids = rng.permutation(ids)
    return ids, rng.standard_normal((n_rows, n_features))


def create_features(url: str, n_rows: int, n_features: int, shuffle: bool = False) -> None:
    """The feature table (id bigint primary key, f0..f{d-1} double precision), filled in bulk.

    Rows are stored in id order unless ``shuffle``; then reading them in id
    order makes the database itself jump around the table (an index scan or
    a sort), which costs both paths the same and hides their difference.
    """
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    table = sa.Table(
        FEATURES_TABLE, sa.MetaData(),
        sa.Column("id", sa.BigInteger, primary_key=True),
        *(sa.Column(f"f{j}", sa.Double) for j in range(n_features)),
    )
    ids, X = make_data(n_rows, n_features, shuffle)
    with engine.begin() as connection:
        table.drop(connection, checkfirst=True)
        table.create(connection)
    if engine.dialect.name == "postgresql":
        import adbc_driver_postgresql.dbapi
        import pyarrow as pa

        from lwec_tasks.io.bulk_read import postgres_uri

        arrow = pa.table({"id": ids, **{f"f{j}": X[:, j] for j in range(n_features)}})
        with adbc_driver_postgresql.dbapi.connect(postgres_uri(engine.url)) as connection:
            with connection.cursor() as cursor:
                cursor.adbc_ingest(FEATURES_TABLE, arrow, mode="append")
                cursor.execute(f"ANALYZE {engine.dialect.identifier_preparer.format_table(table)}")
            connection.commit()
    else:
        import adbc_driver_sqlite.dbapi
        import pyarrow as pa

        arrow = pa.table({"id": ids, **{f"f{j}": X[:, j] for j in range(n_features)}})
        insert = sa.insert(table).compile(dialect=engine.dialect, column_keys=arrow.column_names)
        with adbc_driver_sqlite.dbapi.connect(engine.url.database) as connection:
            with connection.cursor() as cursor:
                cursor.executemany(str(insert), arrow.select(list(insert.positiontup)))
            connection.commit()
    engine.dispose()


def drop_tables(url: str, *names: str) -> None:
    """Drop tables, and labels storage (its views, runs and rows tables) under those names."""
    import sqlalchemy as sa

    from lwec_tasks.io.names import parse_table_name
    from lwec_tasks.io.storage_setup import drop_storage

    engine = sa.create_engine(url)
    with engine.begin() as connection:
        for name in names:
            drop_storage(connection, parse_table_name(name))
            if name in sa.inspect(connection).get_table_names():
                sa.Table(name, sa.MetaData()).drop(connection)
    engine.dispose()


def labels_summary(url: str, table: str) -> dict:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    labels = sa.Table(table, sa.MetaData(), autoload_with=engine)
    c = labels.c
    statement = sa.select(
        sa.func.count(), sa.func.sum(c.id), sa.func.sum(c.label), sa.func.min(c.run_key), sa.func.min(c.k),
        sa.func.min(c.theta), sa.func.min(c.method), sa.func.count(c.seed), sa.func.count(sa.distinct(c.written_at)),
    )
    with engine.connect() as connection:
        row = connection.execute(statement).one()
    engine.dispose()
    return {"rows": int(row[0]), "id_sum": int(row[1]), "label_sum": int(row[2]),
            "constants": [str(v) for v in row[3:]]}


# ----------------------------------------------------------------------------- one case (subprocess)


def _status_mb(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process from /proc (ru_maxrss would include the parent's size at fork)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _start_measuring() -> float:
    """Reset the peak (VmHWM) to the current size; return that size in MB."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        pass
    return _status_mb("VmRSS")


def run_case(url: str, operation: str, path: str, repeats: int) -> dict:
    import pandas as pd
    import sqlalchemy as sa

    from lwec_tasks.io import LabelRows, describe_source
    from lwec_tasks.io.names import parse_table_name
    from lwec_tasks.io.source import read_rows
    from lwec_tasks.io.staging import write_labels

    engine = sa.create_engine(url)
    source = describe_source(engine, parse_table_name(FEATURES_TABLE))
    columns = list(source.columns)
    times, info, extra, peaks = [], {}, [], []
    for _ in range(repeats):
        if operation == "read":
            if path != "fast":
                os.environ["LWEC_SQL_FAST_PATH"] = "0"  # pandas.read_sql in chunks
            read = read_rows
            baseline = _start_measuring()
            started = time.perf_counter()
            frame = read(engine, source, columns, order_by="id")
            times.append(time.perf_counter() - started)
            peaks.append(_status_mb("VmHWM"))
            extra.append(peaks[-1] - baseline)
            info = {
                "rows": len(frame),
                "hash": str(int(pd.util.hash_pandas_object(frame, index=False).to_numpy().sum(dtype=np.uint64))),
                "dtypes": sorted({str(t) for t in frame.dtypes}),
                "result_mb": frame.memory_usage(index=False).sum() / 2**20,
            }
            del frame
        else:
            n_rows = int(os.environ["IO_BENCH_ROWS"])
            ids = np.arange(1, n_rows + 1, dtype=np.int64)
            labels = (ids * 7919) % 10
            rows = LabelRows(run_key="bench", ids=ids, labels=labels, k=10, method="lwea", theta=0.4,
                             ensemble_size=10, seed=0, source_table=FEATURES_TABLE, flow_run_id=None)
            if path != "fast":
                os.environ["LWEC_SQL_FAST_PATH"] = "0"  # the staging rows by executemany
            write = write_labels
            drop_tables(url, LABELS_TABLE)
            baseline = _start_measuring()
            started = time.perf_counter()
            written = write(engine, LABELS_TABLE, rows)
            times.append(time.perf_counter() - started)
            peaks.append(_status_mb("VmHWM"))
            extra.append(peaks[-1] - baseline)
            info = {"rows": written}
    engine.dispose()
    return {**info, "seconds": times, "peak_mb": max(peaks), "extra_mb": max(extra)}


def _child(argv: list[str]) -> int:
    url, operation, path, repeats = argv
    print("RESULT " + json.dumps(run_case(url, operation, path, int(repeats))))
    return 0


# ----------------------------------------------------------------------------- driver


def _spawn(url: str, operation: str, path: str, repeats: int, rows: int) -> dict:
    env = {**os.environ, "IO_BENCH_ROWS": str(rows), "PYTHONPATH": str(PROJECT_ROOT)}
    command = [sys.executable, "-m", "benchmarks.io_bench", "--child", url, operation, path, str(repeats)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=PROJECT_ROOT)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"case {operation}/{path} on {url} failed:\n{done.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.io_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each fast case (best is shown)")
    parser.add_argument("--portable-repeats", type=int, default=1)
    parser.add_argument("--shuffle", action="store_true", help="store the rows in random id order")
    parser.add_argument("--postgres-url", default=os.environ.get("LWEC_TEST_POSTGRES_URL"))
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child)

    from lwec_tasks.io.source import DEFAULT_CHUNK_SIZE

    workdir = tempfile.mkdtemp(prefix="lwec-io-bench-")
    databases = [("SQLite", f"sqlite:///{workdir}/bench.db")]
    if args.postgres_url:
        databases.insert(0, ("PostgreSQL", args.postgres_url))
    else:
        print("PostgreSQL skipped: no --postgres-url and no $LWEC_TEST_POSTGRES_URL")
    print(f"{args.rows:,} rows × {args.features} float64 features + int64 id "
          f"(stored in {'random' if args.shuffle else 'id'} order); read in id order "
          f"(portable chunk size {DEFAULT_CHUNK_SIZE:,}); writes: {args.rows:,} labels into a new labels table")
    header = f"{'database':<11} {'operation':<6} {'path':<9} {'seconds':>8} {'first s':>8} {'rows/s':>11} " \
             f"{'peak MB':>8} {'extra MB':>9} {'speed-up':>9} {'check':<6}"
    print(header)
    print("-" * len(header))
    results = []
    try:
        for name, url in databases:
            started = time.perf_counter()
            create_features(url, args.rows, args.features, args.shuffle)
            print(f"({name}: feature table created in {time.perf_counter() - started:.1f} s)", file=sys.stderr)
            for operation in ("read", "write"):
                cases = {}
                for path, repeats in (("portable", args.portable_repeats), ("fast", args.repeats)):
                    cases[path] = _spawn(url, operation, path, repeats, args.rows)
                    if operation == "write":
                        cases[path]["stored"] = labels_summary(url, LABELS_TABLE)
                if operation == "read":
                    same = all(cases["fast"][key] == cases["portable"][key] for key in ("rows", "hash", "dtypes"))
                else:
                    fast, portable = cases["fast"]["stored"], cases["portable"]["stored"]
                    same = fast["rows"] == portable["rows"] == args.rows and \
                        {k: v for k, v in fast.items() if k != "constants"} == \
                        {k: v for k, v in portable.items() if k != "constants"} and \
                        fast["constants"][:-1] == portable["constants"][:-1]  # written_at differs
                portable_best = min(cases["portable"]["seconds"])
                for path in ("portable", "fast"):
                    case = cases[path]
                    best = min(case["seconds"])
                    ratio = f"{portable_best / best:.1f}×" if path == "fast" else ""
                    print(f"{name:<11} {operation:<6} {path:<9} {best:>8.2f} {case['seconds'][0]:>8.2f} "
                          f"{args.rows / best:>11,.0f} "
                          f"{case['peak_mb']:>8.0f} {case['extra_mb']:>9.0f} {ratio:>9} "
                          f"{('same' if same else 'DIFFER') if path == 'fast' else '':<6}")
                    results.append({"database": name, "operation": operation, "path": path, **case})
            drop_tables(url, FEATURES_TABLE, LABELS_TABLE)
    finally:
        for leftover in Path(workdir).glob("*"):
            leftover.unlink()
        os.rmdir(workdir)
    read_mb = args.rows * (args.features + 1) * 8 / 2**20
    print(f"result frame: {read_mb:.0f} MB; 'extra MB' = peak RSS during the call − RSS before it (largest of the "
          f"runs); 'seconds' = best of {args.repeats} runs for the fast paths, 'first s' = the first run (in a new "
          "process: it includes loading numba's cached COPY scanner)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
