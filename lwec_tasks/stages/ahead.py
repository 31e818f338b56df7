"""A run's first stages done by ``lwec run`` before its flow run starts.

While Prefect's temporary server boots (several seconds, in another process), the command reads the table and
generates the base clusterings (:func:`work_ahead`). The flow's ``load-features`` and
``generate-base-clusterings`` tasks take that work (:func:`taken_table`, :func:`taken_ensemble`) instead of
doing it again, log its lines and count its seconds as their stages'. Bad input raises
:class:`LwecInputError` before the flow run starts; any other failure is left for the tasks to meet again,
with their retries, and nothing is kept.
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import closing
from dataclasses import dataclass, field
from logging.handlers import BufferingHandler

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.executors.in_process import InProcess
from lwec_tasks.preflight import request_key
from lwec_tasks.stages.ensemble import PartitionedEnsemble, base_clusterings
from lwec_tasks.stages.read import PartitionedTable, load_table


@dataclass
class WorkAhead:
    """The table read ahead (``table``, the lines its read logged) and, unless the run's ensemble is read from
    base columns, its base clusterings (``ensemble`` with its lines and seconds, for ``ensemble_key``:
    the ensemble size and seed they follow)."""

    table: PartitionedTable
    table_lines: list[logging.LogRecord]
    ensemble: PartitionedEnsemble | None = None
    ensemble_lines: list[logging.LogRecord] = field(default_factory=list)
    ensemble_seconds: float = 0.0
    ensemble_key: tuple = ()


#: The work :func:`work_ahead` did last, by request (:func:`~lwec_tasks.preflight.request_key`).
_AHEAD: dict[str, WorkAhead] = {}


def work_ahead(request) -> None:
    """Read the table of ``request`` and generate its base clusterings now, in this process, and keep them for
    the tasks of its run. Bad input raises :class:`LwecInputError`; after any other failure nothing is kept."""
    _AHEAD.clear()  # one run's work at most
    table_log, table_lines = _held_logger()
    ensemble_log, ensemble_lines = _held_logger()
    try:
        with closing(InProcess()) as executor:
            table = load_table(executor, request, table_log)
            work = WorkAhead(table, table_lines)
            if request.base_columns is None:
                started = time.perf_counter()
                work.ensemble = base_clusterings(table, request.ensemble_size, request.seed, ensemble_log)
                work.ensemble_lines = ensemble_lines
                work.ensemble_seconds = time.perf_counter() - started
                work.ensemble_key = (request.ensemble_size, request.seed)
    except LwecInputError:
        raise
    except Exception:  # noqa: BLE001 - the tasks do the work again and report what they meet
        return
    _AHEAD[request_key(request)] = work


def taken_table(request, session, log) -> PartitionedTable | None:
    """The table read ahead for ``request``, its partitions now the executor ``session``'s, its read's lines
    logged to ``log``; None when none was."""
    work = _AHEAD.get(request_key(request))
    if work is None or (work.ensemble is not None and work.ensemble_key != (request.ensemble_size, request.seed)):
        return None  # (the base clusterings released the table's rows: it serves only with them)
    if work.ensemble is None:
        del _AHEAD[request_key(request)]
    log.info("Table %r was read before the flow run started, while the command started up", request.table)
    _replay(work.table_lines, log)
    work.table.session = session  # in-process partitions are plain values: any in-process executor serves them
    return work.table


def taken_ensemble(request, table: PartitionedTable, log) -> tuple[PartitionedEnsemble, float] | None:
    """The base clusterings generated ahead for ``request`` on ``table`` (the table taken from the same work) and
    their seconds, their lines logged to ``log``; None when none were."""
    work = _AHEAD.pop(request_key(request), None)
    if work is None or work.ensemble is None or work.table is not table:
        return None
    log.info("The base clusterings were generated before the flow run started, while the command started up")
    _replay(work.ensemble_lines, log)
    return work.ensemble, work.ensemble_seconds


def _replay(records: list[logging.LogRecord], log) -> None:
    for record in records:
        log.log(record.levelno, "%s", record.getMessage())


def _held_logger() -> tuple[logging.Logger, list[logging.LogRecord]]:
    """A logger whose lines go only to the returned list (it is not registered with :mod:`logging`)."""
    held = BufferingHandler(capacity=sys.maxsize)  # keeps every record, in ``held.buffer``
    log = logging.Logger("lwec.ahead")
    log.addHandler(held)
    return log, held.buffer
