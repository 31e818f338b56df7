"""The flow's side of the database: id-range partition bounds and the earlier run.

Statements are built with SQLAlchemy Core from reflected or validated names; nothing is pasted into SQL.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import SourceTable
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.label_storage import StorageNames

#: Target rows per partition (a partition is read, held and processed by one task at a time, on either
#: executor); the environment variable ``LWEC_DASK_PARTITION_ROWS`` of the flow process overrides it.
PARTITION_ROWS = 500_000
PARTITION_ROWS_ENV = "LWEC_DASK_PARTITION_ROWS"
#: No partition is made smaller than this to keep every worker thread busy.
MIN_PARTITION_ROWS = 10_000


def partition_count(n_rows: int, n_threads: int) -> int:
    """Partitions for ``n_rows`` rows: about :data:`PARTITION_ROWS` each, at least two per worker thread
    while each keeps :data:`MIN_PARTITION_ROWS` rows."""
    wanted = max(math.ceil(n_rows / partition_rows()), 2 * n_threads)
    return max(1, min(wanted, n_rows // MIN_PARTITION_ROWS))


def partition_rows() -> int:
    """:data:`PARTITION_ROWS`, or the positive integer in ``$LWEC_DASK_PARTITION_ROWS``."""
    value = os.environ.get(PARTITION_ROWS_ENV, "").strip()
    if not value:
        return PARTITION_ROWS
    if not value.isdigit() or int(value) < 1:
        raise LwecInputError(f"{PARTITION_ROWS_ENV}={value!r} must be a positive number of rows")
    return int(value)


def id_bounds(engine: sa.Engine, source: SourceTable, id_column: str, n_rows: int, low, high,
              n_partitions: int) -> list[tuple[object, object]]:
    """[low, high) id ranges (None: open end) that cover the table, in id order.

    ``n_rows``, ``low`` and ``high`` are the table's row count and smallest and largest id
    (:class:`~lwec_tasks.preflight.ReadPlan`). Integer ids split [low, high] into equal widths (no query,
    balanced when ids are dense); other ids split at every ⌈N / P⌉-th id in id order (one window-function pass
    over the id column).
    """
    if n_partitions <= 1 or n_rows == 0:
        return [(None, None)]
    if isinstance(low, int) and isinstance(high, int) and not isinstance(low, bool):
        span = high - low + 1
        n_partitions = min(n_partitions, span)
        cuts = [low + (span * p) // n_partitions for p in range(1, n_partitions)]
    else:
        column = source.table.c[id_column]
        step = math.ceil(n_rows / n_partitions)
        numbered = sa.select(column.label("id"), sa.func.row_number().over(order_by=column).label("n")).subquery()
        statement = sa.select(numbered.c.id).where((numbered.c.n - 1) % step == 0).order_by(numbered.c.id)
        with database_errors(engine, "plan the partitions"), engine.connect() as connection:
            cuts = [row[0] for row in connection.execute(statement)][1:]
    edges = [None, *cuts, None]
    return list(zip(edges[:-1], edges[1:]))


def absolute_sqlite_url(database_url: str) -> str:
    """A SQLite URL with an absolute file path (workers do not share the flow's working directory)."""
    url = sa.make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") and "uri" not in url.query:
        url = url.set(database=os.path.abspath(url.database))
        return url.render_as_string(hide_password=False)
    return database_url


@dataclass(frozen=True)
class EarlierRun:
    """The source table's latest earlier run in the labels table: its key, and its number in the runs table
    (``run``) when the labels are stored narrow (None for a wide labels table of an earlier release)."""

    run_key: str
    run: int | None


def earlier_run(engine: sa.Engine, labels_table: StorageNames, source_table: str,
                exclude_run_key: str) -> EarlierRun | None:
    """The most recent run of ``source_table`` in ``labels_table`` other than ``exclude_run_key`` (recency as
    :func:`lwec_tasks.io.history.runs_by_recency` orders runs); None when the table does not exist or holds no
    such run. One or two small queries."""
    from lwec_tasks.io.catalog import NARROW, labels_layout
    from lwec_tasks.io.history import runs_by_recency
    from lwec_tasks.io.label_storage import published_runs, runs_clause

    with database_errors(engine, "find the earlier run"), engine.connect() as connection:
        layout = labels_layout(connection, labels_table)
        if layout is None:
            return None
        run_key = connection.execute(runs_by_recency(labels_table, source_table, exclude_run_key, layout)
                                     .limit(1)).scalar()
        if run_key is None:
            return None
        if layout != NARROW:
            return EarlierRun(run_key, None)
        runs = runs_clause(labels_table)
        number = connection.execute(sa.select(runs.c.run).where(
            runs.c.run_key == run_key, published_runs(runs))).scalar_one()
    return EarlierRun(run_key, int(number))
