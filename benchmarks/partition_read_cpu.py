"""CPU that a worker spends reading one partition: ``read_partition`` followed by ``summarise``.

``python -m benchmarks.partition_read_cpu --url URL --table TABLE [--rows 500000] [--partitions 2]``

Reads ``--partitions`` id ranges of ``--rows`` rows each (ids from the table's smallest one on) of a table
with an integer id column, a ``target`` label column and float feature columns (by default every column
named ``f<number>``), and prints per partition the process CPU seconds (all threads, this process only —
the database server's own work is not counted) of the whole read and summary, of the driver's fetch
alone (the Arrow table, :func:`lwec_tasks.io.bulk_read._read_postgres` / ``_read_sqlite``) and of the
rest: the frame, the feature matrix, the checks and the moments, which is lwec's own share.

With ``--numpy`` it also times the pure numpy steps on a random (rows, features) matrix, each next to the
plain numpy way: the feature matrix (against column-wise copies), the finite check (against
``np.isfinite(X).all(axis=1)``) and :meth:`Moments.of` (against numpy's mean and squared deviations).
"""

from __future__ import annotations

import argparse
import re
import time

import numpy as np
import pandas as pd
import sqlalchemy as sa

from lwec_tasks.io import bulk_read
from lwec_tasks.io.catalog import describe_source
from lwec_tasks.io.features import feature_matrix
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.stages import partitions
from lwec_tasks.stages.sums import Moments


class FetchClock:
    """Wraps the drivers' fetch functions of :mod:`lwec_tasks.io.bulk_read`, adding up their CPU seconds."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._originals = {name: getattr(bulk_read, name) for name in ("_read_postgres", "_read_sqlite")}

    def __enter__(self) -> FetchClock:
        for name, original in self._originals.items():
            setattr(bulk_read, name, self._timed(original))
        return self

    def __exit__(self, *exc) -> None:
        for name, original in self._originals.items():
            setattr(bulk_read, name, original)

    def _timed(self, function):
        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.process_time() - start
        return timed


def partition_specs(url: str, table: str, rows: int, n_partitions: int, features: list[str] | None):
    """``n_partitions`` consecutive id ranges of ``rows`` ids each, from the table's smallest id."""
    engine = sa.create_engine(url)
    try:
        # reflected once, as the flow hands it to every partition
        source = describe_source(engine, parse_table_name(table))
        with engine.connect() as connection:
            low = connection.execute(sa.select(sa.func.min(source.table.c.id))).scalar_one()
    finally:
        engine.dispose()
    if features is None:
        features = [name for name in source.columns if re.fullmatch(r"f\d+", name)]
    return [partitions.PartitionSpec(p, url, parse_table_name(table), "id", "target", tuple(features), low + p * rows,
                                     low + (p + 1) * rows, 50_000, drop_nonfinite=False, source=source)
            for p in range(n_partitions)]


def time_partitions(specs, repeats: int) -> None:
    """Read and summarise each partition ``repeats`` times, printing its median CPU seconds: total, the fetch
    and the rest."""
    partitions.summarise(partitions.read_partition(specs[0]))  # warm-up: imports, compiled kernels, connections
    for spec in specs:
        totals, fetches = [], []
        for _ in range(repeats):
            with FetchClock() as fetch:
                start = time.process_time()
                summary = partitions.summarise(partitions.read_partition(spec))
                totals.append(time.process_time() - start)
            fetches.append(fetch.seconds)
        total, fetched = float(np.median(totals)), float(np.median(fetches))
        after = float(np.median(np.subtract(totals, fetches)))
        print(f"partition {spec.index}: {summary.n_read:,} rows x {len(spec.feature_columns)}  "
              f"total {total:.3f} s  fetch {fetched:.3f} s  after the fetch {after:.3f} s  (medians of {repeats})")


def time_numpy(n_rows: int, n_features: int, repeats: int = 5) -> None:
    """CPU seconds of the numpy steps of a partition read on a random (n_rows, n_features) matrix."""
    rng = np.random.default_rng(0)
    columns = [rng.standard_normal(n_rows) for _ in range(n_features)]
    X = np.column_stack(columns)

    def clock(label: str, step) -> None:
        start = time.process_time()
        for _ in range(repeats):
            step()
        print(f"{label:<40} {(time.process_time() - start) / repeats:.4f} s")

    def column_copies():
        matrix = np.empty((n_rows, n_features))
        for j, column in enumerate(columns):
            matrix[:, j] = column

    frame = pd.DataFrame({f"f{j}": column for j, column in enumerate(columns)}, copy=False)
    clock("column-wise copies into (n, d)", column_copies)
    clock("feature_matrix (blocks of rows)", lambda: feature_matrix(frame, list(frame.columns)))
    clock("np.isfinite(X).all(axis=1)", lambda: np.isfinite(X).all(axis=1))
    clock("finite_rows (column sums first)", lambda: partitions.finite_rows(X))
    clock("X.mean, ((X - mean) ** 2).sum", lambda: ((X - X.mean(axis=0)) ** 2).sum(axis=0))
    clock("Moments.of(X)", lambda: Moments.of(X))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="SQLAlchemy URL of the database")
    parser.add_argument("--table", required=True)
    parser.add_argument("--rows", type=int, default=500_000, help="rows per partition")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--features", nargs="*", help="feature columns (default: every column f<number>)")
    parser.add_argument("--repeats", type=int, default=5, help="reads of each partition (medians are printed)")
    parser.add_argument("--numpy", action="store_true", help="also time the numpy steps alone")
    arguments = parser.parse_args()
    specs = partition_specs(arguments.url, arguments.table, arguments.rows, arguments.partitions, arguments.features)
    time_partitions(specs, arguments.repeats)
    if arguments.numpy:
        time_numpy(arguments.rows, len(specs[0].feature_columns))


if __name__ == "__main__":
    main()
