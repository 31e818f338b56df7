"""Stage: write the labels — staged per partition, published in one transaction, then the latest-run view."""

from __future__ import annotations

import time

import sqlalchemy as sa

from lwec_tasks.executors.progress import Progress
from lwec_tasks.io import ensure_latest_view, open_engine, prune_runs
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.io.staging import (
    create_staging_table,
    drop_table_quietly,
    publish_labels,
    staged_run_matches,
    staging_table_name,
)
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.read import PartitionedTable


def write_labels(table: PartitionedTable, labels: list, output_table: str, run: RunMetadata, log,
                 keep_runs: int | None = None) -> int:
    """Each partition's labels (``labels``: one handle of (n_p,) ids per partition) go into a fresh staging
    table; one transaction then replaces the run key's rows of the labels table with them and, with
    ``keep_runs``, deletes the source table's runs beyond the ``keep_runs`` most recent. The staging table
    is dropped in every case; when any partition fails, the labels table is left as it was. Afterwards the
    view ``<output_table>_latest`` is created if missing.

    When the labels table already holds exactly these rows under this run key, with the same parameters
    (a rerun after a failure further on, e.g. at the MLflow step), nothing is rewritten and 0 is returned.
    """
    session = table.session
    id_type = table.id_type if table.id_type is not None else sa.BigInteger()
    engine = open_engine(table.database_url)
    staging = staging_table_name(output_table)
    started = time.perf_counter()
    try:
        create_staging_table(engine, staging, id_type)
        writes = [session.submit(part.write_partition, table.database_url, staging, keys, values, name="write")
                  for keys, values in zip(table.keys, labels)]
        Progress(log, "write labels to the staging table").wait(writes, rows=table.counts, settle=True)
        if staged_run_matches(engine, output_table, staging, id_type, run, table.n_rows):
            if keep_runs is not None:
                prune_runs(engine, output_table, run.source_table, keep_runs, keep_run_key=run.run_key)
            log.info("Labels for run key %r already in table %r; not rewritten (checked in %.2f s)", run.run_key,
                     output_table, time.perf_counter() - started)
            written = 0
        else:
            written, pruned = publish_labels(engine, output_table, staging, id_type, run, table.n_rows,
                                             keep_runs=keep_runs)
            log.info("Wrote %d labels to table %r in %.2f s (%.0f rows/s; run key %r, earlier rows of this key "
                     "replaced in one transaction)%s", written, output_table, time.perf_counter() - started,
                     written / max(time.perf_counter() - started, 1e-9), run.run_key,
                     f"; deleted {len(pruned)} run(s) of {run.source_table!r} beyond the latest {keep_runs}"
                     if pruned else "")
        view = ensure_latest_view(engine, output_table)
    finally:
        drop_table_quietly(engine, staging)
        engine.dispose()
    log.info("View %r shows the latest run of each source table in %r", view, output_table)
    return written
