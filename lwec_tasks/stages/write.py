"""Stage: write the labels — appended per partition under an unpublished run, published in one transaction."""

from __future__ import annotations

import time
from functools import partial

import sqlalchemy as sa

from lwec_tasks.executors.progress import Progress
from lwec_tasks.io.catalog import describe_source
from lwec_tasks.io.label_store import LabelStore
from lwec_tasks.io.names import TableName
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.read import PartitionedTable
from lwec_tasks.stopping import publishing


def write_labels(table: PartitionedTable, labels: list, store: LabelStore, run: RunMetadata, log,
                 keep_runs: int | None = None, confidence: list | None = None) -> int:
    """Each partition's labels (``labels``: one handle of (n_p,) ids per partition; ``confidence``: one handle
    of the rows' (n_p,) confidences per partition, or None) are appended to the labels
    storage ``store`` under a new, not yet visible run (:meth:`LabelStore.begin`; a wide labels table of
    an earlier release is converted first); one transaction then publishes it, replacing the earlier run of
    its run key and, with ``keep_runs``, deleting the source table's runs beyond the ``keep_runs`` most recent.
    When any partition fails, the new run's rows are removed and the labels are left as they were.
    Afterwards what deleted or abandoned runs left is removed, or deferred to a later run when a reader holds
    it (:func:`lwec_tasks.io.cleanup.remove_leftovers`, logged), and the view ``<output_table>_latest`` is
    created if missing.

    When the labels table already holds exactly these rows under this run key, with the same parameters
    (a rerun after a failure further on, e.g. at the MLflow step; :func:`labels_already_stored`), nothing is
    written, only the pruning of ``keep_runs`` applies, and 0 is returned.
    """
    started = time.perf_counter()
    output_table = store.names
    what = f"labels of run key {run.run_key!r} in table {output_table!r}"
    with publishing(what) as publish:
        if labels_already_stored(table, labels, store, run, log):
            written = 0
            publish.cross()  # nothing is published once the run was asked to stop (lwec_tasks.stopping)
            pruned = store.prune(run, keep_runs)
            log.info("Labels for run key %r already in table %r; not rewritten (checked in %.2f s)%s", run.run_key,
                     output_table, time.perf_counter() - started, pruned_note(pruned, run, keep_runs))
        else:
            written, pruned = append_and_publish(table, labels, store, run, log, keep_runs, confidence,
                                                 before_publish=publish.cross)
            elapsed = time.perf_counter() - started
            log.info("Wrote %d labels to table %r in %.2f s (%.0f rows/s; run key %r, an earlier run of this key "
                     "replaced in one transaction)%s", written, output_table, elapsed,
                     written / max(elapsed, 1e-9), run.run_key, pruned_note(pruned, run, keep_runs))
        store.tidy(log)
        view = store.ensure_views()
    log.info("View %r shows the latest run of each source table in %r", view, output_table)
    return written


def labels_already_stored(table: PartitionedTable, labels: list, store: LabelStore, run: RunMetadata,
                          log) -> bool:
    """Whether the published run of ``run.run_key`` in ``store`` holds exactly the partitions' ``labels``
    (one handle of (n_p,) ids per partition) with ``run``'s parameters. One small query on the runs table
    (:meth:`LabelStore.matching_run`) decides for a new run key or other parameters;
    only when they agree does each partition read that run's rows of its id range and compare them
    (:func:`lwec_tasks.stages.partitions.stored_labels_equal`). Changes nothing."""
    stored_run = store.matching_run(run, table.n_rows)
    if stored_run is None:
        return False
    stored = describe_source(store.engine, store.names.rows)
    equal = table.session.map(part.stored_labels_equal, table.specs, table.keys, labels, name="compare-stored",
                              stored=stored, run=stored_run)
    Progress(log, f"compare with the stored labels of run key {run.run_key!r}").wait(equal, rows=table.counts)
    return all(table.session.gather(equal))


def append_and_publish(table: PartitionedTable, labels: list, store: LabelStore, run: RunMetadata, log,
                       keep_runs: int | None, confidence: list | None = None,
                       before_publish=lambda: None) -> tuple[int, list[str]]:
    """Append the partitions' ``labels`` under a new run and publish it (:func:`write_labels`); returns (rows
    published, run keys deleted by the pruning). ``before_publish()`` is called once the rows are appended, before
    the publishing transaction (raising stops the publish). On failure the new run is discarded and the error
    raised."""
    session = table.session
    id_type = table.id_type if table.id_type is not None else sa.BigInteger()
    pending = store.begin(id_type, run)

    def append() -> int:
        write = partial(write_with_confidence, table.database_url, pending.target)
        scores = confidence if confidence is not None else [None] * len(labels)
        if store.engine.dialect.name == "sqlite":  # one writer at a time: in this process, one partition after another
            writes = [session.submit(write, keys, values, score, pending.append_run, pending.target_columns,
                                     name="write") for keys, values, score in zip(table.keys, labels, scores)]
        else:
            writes = session.map(write, table.keys, labels, scores, run=pending.append_run,
                                 columns=pending.target_columns, name="write")
        Progress(log, "write labels").wait(writes, rows=table.counts, settle=True)
        appended = sum(session.gather(writes))
        before_publish()
        return appended

    return store.publish(pending, run, table.n_rows, append, keep_runs)


def write_with_confidence(database_url: str, target: TableName, keys, labels, confidence, run=None,
                          columns=None) -> int:
    """:func:`lwec_tasks.stages.partitions.write_partition` with the rows' ``confidence`` (None: none) taken
    positionally, as the executors' ``map`` hands each partition's handles."""
    if confidence is None:
        return part.write_partition(database_url, target, keys, labels, run, columns)
    return part.write_partition(database_url, target, keys, labels, run, columns, confidence=confidence)


def pruned_note(pruned: list[str], run: RunMetadata, keep_runs: int | None) -> str:
    """The end of the write's log line naming the runs the pruning deleted; empty when none."""
    if not pruned:
        return ""
    return f"; deleted {len(pruned)} run(s) of {run.source_table!r} beyond the latest {keep_runs}"
