"""Task: write the consensus labels back to the database."""

from __future__ import annotations

import time

import numpy as np
from prefect import get_run_logger
from prefect.runtime import flow_run

from lwec_tasks.io import (
    LabelRows,
    ensure_latest_view,
    mask_url,
    open_engine,
    prune_runs,
    stored_run_matches,
    write_labels,
)
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.load import LoadedFeatures
from lwec_tasks.tasks.retry import database_task
from lwec_tasks.tasks.timings import record_stage_time


@database_task("write-labels", on_completion=[record_stage_time])
def write_label_rows(request: ConsensusRequest, loaded: LoadedFeatures, labels: np.ndarray, k: int) -> int:
    """Replace this run's rows (its run key) of the labels table in one transaction; returns rows written.

    ``labels`` (N,) are the ids to write and ``k`` the number of clusters asked
    for (chosen, for ``n_clusters="auto"``). In the same transaction, runs of
    the source table beyond the ``request.keep_runs`` most recent are deleted.

    When the table already holds exactly these rows under this run key, with
    the same parameters (k, method, θ, M, seed, source table) — a rerun after a
    failure further on, e.g. at the MLflow step — nothing is rewritten and 0 is
    returned (their ``flow_run_id`` and ``written_at`` stay those of the run
    that wrote them).
    """
    rows = LabelRows(
        run_key=request.run_key, ids=loaded.features.ids, labels=labels, k=k,
        method=request.method, theta=request.theta, ensemble_size=request.ensemble_size, seed=request.seed,
        source_table=request.table, flow_run_id=flow_run.id,
    )
    logger = get_run_logger()
    output = request.resolved_output_table
    started = time.perf_counter()
    engine = open_engine(request.database_url)
    try:
        unchanged = stored_run_matches(engine, output, rows, rows.ids, rows.labels)
        if not unchanged:
            written = write_labels(engine, output, rows, id_type=loaded.id_type, keep_runs=request.keep_runs)
        elif request.keep_runs is not None:
            prune_runs(engine, output, request.table, request.keep_runs, keep_run_key=rows.run_key)
        view = ensure_latest_view(engine, output)
    finally:
        engine.dispose()
    seconds = time.perf_counter() - started
    if unchanged:
        logger.info("Labels for run key %r already in table %r; not rewritten (checked in %.2f s); view %r shows "
                    "the latest run of each source table", rows.run_key, output, seconds, view)
        return 0
    logger.info(
        "Wrote %d labels to table %r of %s in %.2f s (%.0f rows/s; run key %r, earlier rows of this key replaced%s);"
        " view %r shows the latest run of each source table",
        written, output, mask_url(request.database_url), seconds,
        written / max(seconds, 1e-9), rows.run_key,
        f"; runs of {request.table!r} beyond the latest {request.keep_runs} deleted" if request.keep_runs else "", view,
    )
    return written
