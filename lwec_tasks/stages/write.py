"""Stage: write the labels — appended per partition under an unpublished run, published in one transaction."""

from __future__ import annotations

import time
from functools import partial

import sqlalchemy as sa

from lwec_tasks.executors.progress import Progress
from lwec_tasks.io import ensure_latest_view, open_engine
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.io.staging import begin_run, discard_run, drop_table_quietly, finish_run
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.read import PartitionedTable


def write_labels(table: PartitionedTable, labels: list, output_table: str, run: RunMetadata, log,
                 keep_runs: int | None = None) -> int:
    """Each partition's labels (``labels``: one handle of (n_p,) ids per partition) are appended to the labels
    storage under a new, not yet visible run (:func:`lwec_tasks.io.staging.begin_run`; a wide labels table of
    an earlier release is converted first); one transaction then publishes it, replacing the earlier run of
    its run key and, with ``keep_runs``, deleting the source table's runs beyond the ``keep_runs`` most recent.
    When any partition fails, the new run's rows are removed and the labels are left as they were.
    Afterwards the view ``<output_table>_latest`` is created if missing.

    When the labels table already holds exactly these rows under this run key, with the same parameters
    (a rerun after a failure further on, e.g. at the MLflow step), the new rows are dropped and 0 is returned.
    """
    session = table.session
    id_type = table.id_type if table.id_type is not None else sa.BigInteger()
    engine = open_engine(table.database_url)
    started = time.perf_counter()
    try:
        pending = begin_run(engine, output_table, id_type, run)
        try:
            append = partial(part.write_partition, table.database_url, pending.target)
            if engine.dialect.name == "sqlite":  # one writer at a time: in this process, one partition after another
                writes = [session.submit(append, keys, values, pending.append_run, name="write")
                          for keys, values in zip(table.keys, labels)]
            else:
                writes = session.map(append, table.keys, labels, run=pending.append_run, name="write")
            Progress(log, "write labels").wait(writes, rows=table.counts, settle=True)
            appended = sum(session.gather(writes))
            written, pruned = finish_run(engine, pending, run, table.n_rows, appended, keep_runs=keep_runs,
                                         skip_unchanged=True)
        except BaseException:
            discard_run(engine, pending)
            raise
        if pending.staged:
            drop_table_quietly(engine, pending.target)
        elapsed = time.perf_counter() - started
        if not written:
            log.info("Labels for run key %r already in table %r; not rewritten (checked in %.2f s)", run.run_key,
                     output_table, elapsed)
        else:
            log.info("Wrote %d labels to table %r in %.2f s (%.0f rows/s; run key %r, an earlier run of this key "
                     "replaced in one transaction)%s", written, output_table, elapsed,
                     written / max(elapsed, 1e-9), run.run_key,
                     f"; deleted {len(pruned)} run(s) of {run.source_table!r} beyond the latest {keep_runs}"
                     if pruned else "")
        view = ensure_latest_view(engine, output_table)
    finally:
        engine.dispose()
    log.info("View %r shows the latest run of each source table in %r", view, output_table)
    return written
