"""Database drivers against the hand-written PostgreSQL binary COPY codec they replaced.

``python -m benchmarks.io_drivers [--rows 1000000] [--features 16] [--postgres-url URL] [--repeat 3]``

On a PostgreSQL table of ``--rows`` rows (``id bigint`` + ``--features``
``float8`` columns; URL from ``--postgres-url``, else ``$LWEC_TEST_POSTGRES_URL``)
it times, in the same run and process:

* reads in id order: the old decoder (``read_fast`` of the last commit of
  ``main`` that had ``lwec_tasks/io/pgcopy.py``, loaded from ``git show`` into a
  temporary package) against ``read_rows`` (ADBC);
* label writes of ``--rows`` (id, label) rows: the old binary COPY writer
  (``copy_labels`` inside the same publishing transaction) against ADBC
  ingestion into a staging table alone (``append_to``) and the whole
  ``write_labels`` (staging + ingestion + ``INSERT … SELECT``).

Each figure is the best of ``--repeat`` runs, in seconds; the ratio is old / new
(above 1: the old codec is faster). Both reads are checked to give the same frame.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

OLD_MODULES = ("pgcopy", "bulk_read", "bulk_write")
OLD_REVISION = os.environ.get("LWEC_OLD_IO_REVISION", "9746900")  # the last commit with the codec


def old_io(directory: Path):
    """The hand-written codec's modules from ``OLD_REVISION``, as package ``old_io`` under ``directory``."""
    root = Path(__file__).resolve().parents[1]
    package = directory / "old_io"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in OLD_MODULES:
        text = subprocess.run(["git", "show", f"{OLD_REVISION}:lwec_tasks/io/{name}.py"], cwd=root, check=True,
                              capture_output=True, text=True).stdout
        for other in OLD_MODULES:
            text = text.replace(f"lwec_tasks.io.{other}", f"old_io.{other}")
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(directory))
    return importlib.import_module("old_io.bulk_read"), importlib.import_module("old_io.bulk_write")


def best(repeat: int, call) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return min(times), result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres-url", default=os.environ.get("LWEC_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    if not args.postgres_url:
        sys.exit("give --postgres-url or set LWEC_TEST_POSTGRES_URL")

    from lwec_tasks.io import LabelRows, describe_source, open_engine, read_rows, write_labels
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from helpers.wide_labels import label_table_schema, replace_run_key  # the write of earlier releases
    from lwec_tasks.io.names import parse_table_name
    from lwec_tasks.io.staging import append_to, create_staging_table, drop_table_quietly
    from lwec_tasks.io.storage_setup import drop_storage

    engine = open_engine(args.postgres_url)
    name, out, old_out = "bench_io_drivers", "bench_io_drivers_labels", "bench_io_drivers_old_labels"
    columns = ["id", *(f"f{j}" for j in range(args.features))]
    table = sa.Table(name, sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True),
                     *(sa.Column(c, sa.Double) for c in columns[1:]))
    with engine.begin() as connection:
        drop_storage(connection, parse_table_name(out))
        for drop in (name, out, old_out):
            sa.Table(drop, sa.MetaData()).drop(connection, checkfirst=True)
        table.create(connection)
        connection.execute(sa.insert(table).from_select(columns, sa.select(
            sa.literal_column("g"), *(sa.func.random() for _ in columns[1:])).select_from(
            sa.func.generate_series(1, args.rows).alias("g"))))  # the series' column is named g too
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(f"VACUUM ANALYZE {name}")
    source = describe_source(engine, parse_table_name(name))
    print(f"table: {args.rows:,} rows x {len(columns)} columns (id bigint + {args.features} float8), "
          f"PostgreSQL {engine.dialect.server_version_info}; best of {args.repeat}")

    with tempfile.TemporaryDirectory() as directory:
        old_read, old_write = old_io(Path(directory))
        t_old_read, old_frame = best(args.repeat, lambda: old_read.read_fast(
            engine, source.table, columns, ["id"], 50_000))
        t_new_read, new_frame = best(args.repeat, lambda: read_rows(engine, source, columns, order_by="id"))
        pd.testing.assert_frame_equal(old_frame, new_frame, check_exact=True)

        rng = np.random.default_rng(0)
        ids, labels = np.arange(1, args.rows + 1, dtype=np.int64), rng.integers(0, 8, args.rows)
        rows = LabelRows(run_key="bench", ids=ids, labels=labels, k=8, method="lwea", theta=0.4,
                         ensemble_size=10, seed=0, source_table=name)
        labels_table = label_table_schema(old_out, sa.BigInteger())

        def old_write_labels():
            constants = rows.column_values()

            def insert(connection):
                assert old_write.copy_labels(connection, labels_table, constants, ids, labels)

            replace_run_key(engine, labels_table, rows.run_key, name, None, insert)

        def new_ingest():
            staging = "bench_io_drivers_stage"
            drop_table_quietly(engine, parse_table_name(staging))
            create_staging_table(engine, parse_table_name(staging), sa.BigInteger())
            try:
                return append_to(engine, parse_table_name(staging), ids, labels)
            finally:
                drop_table_quietly(engine, parse_table_name(staging))

        def old_copy_only():
            with engine.begin() as connection:
                sa.Table("bench_io_drivers_stage_old", sa.MetaData()).drop(connection, checkfirst=True)
                stage = label_table_schema("bench_io_drivers_stage_old", sa.BigInteger())
                stage.create(connection)
                old_write.copy_labels(connection, stage, rows.column_values(), ids, labels)
                stage.drop(connection)

        t_old_copy, _ = best(args.repeat, old_copy_only)
        t_new_ingest, _ = best(args.repeat, new_ingest)
        t_old_write, _ = best(args.repeat, old_write_labels)
        t_new_write, _ = best(args.repeat, lambda: write_labels(engine, parse_table_name(out), rows))
        with engine.connect() as connection:
            counted = [connection.execute(sa.text(f"select count(*), sum(id), sum(label) from {t}")).one()
                       for t in (old_out, out)]
        assert counted[0] == counted[1], counted

    print(f"{'case':<52}{'old s':>9}{'new s':>9}{'old/new':>9}")
    for case, old, new in (
        ("read 1 table in id order (decoder vs ADBC read_rows)", t_old_read, t_new_read),
        ("write labels, rows only (COPY writer vs ADBC ingest)", t_old_copy, t_new_ingest),
        ("write_labels, whole (COPY in txn vs ingest+publish)", t_old_write, t_new_write),
    ):
        print(f"{case:<52}{old:>9.3f}{new:>9.3f}{old / new:>9.2f}")
    with engine.begin() as connection:
        drop_storage(connection, parse_table_name(out))
        for drop in (name, out, old_out):
            sa.Table(drop, sa.MetaData()).drop(connection, checkfirst=True)
    engine.dispose()


if __name__ == "__main__":
    main()
