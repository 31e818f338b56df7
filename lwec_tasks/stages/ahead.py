"""A run's first stages done by ``lwec run`` before its flow run starts.

The command imports Prefect, the flow and MLflow for several seconds, on one core. With a Prefect server
already up, the other core is idle meanwhile: a child process (:func:`start_work_ahead`) reads the table and
generates the base clusterings on it. A process, not a thread: imports hold the interpreter lock, and a C
extension loaded by one thread while another scans the loaded libraries (threadpoolctl does, around
scikit-learn's BLAS calls) can deadlock. ``lwec run`` forks the child as soon as it has parsed the request
(a fresh interpreter when the command already runs other threads); the child imports the numeric libraries
and plans its read itself, on the core the command's own imports leave idle. It runs at a lower priority so
the command's start-up comes first, and hands its arrays over through a memory-mapped file without a name
(not copied, and not left behind if either process dies);
:meth:`WorkAheadProcess.collect` keeps the work for the run. Without a Prefect API, both cores are busy with
the imports and Prefect's temporary server booting; the command then does the same work itself, after its
imports, while the server finishes booting (:func:`keep_work_ahead`).

The flow's ``load-features`` and ``generate-base-clusterings`` tasks take that work (:func:`taken_table`,
:func:`taken_ensemble`) instead of doing it again, log its lines and count its seconds as their stages'. Bad
input raises :class:`LwecInputError` before the flow run starts; any other failure is left for the tasks to
meet again, with their retries, and nothing is kept.

Once its work is taken, the child stays to draw the run's figures (:func:`figures_drawn_ahead`): they are drawn
while the labels are written, and the command's own core is then busy with the write, so the command needs no
matplotlib at all. Figures the child cannot draw (it died, or failed) are drawn by the command.
"""

from __future__ import annotations

import logging
import mmap
import multiprocessing
import os
import pickle
import tempfile
import threading
import time
from contextlib import closing, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.preflight import request_key

if TYPE_CHECKING:  # imported by the work itself: the child may be forked before the numeric libraries load
    from lwec_tasks.stages.generate import PartitionedEnsemble
    from lwec_tasks.stages.read import PartitionedTable

#: Where the child writes its arrays: memory (tmpfs) when the system has it, else the temporary directory.
SHARED_DIRECTORY = "/dev/shm"
#: Byte alignment of each array in the handed-over file.
ALIGNMENT = 64
#: How much the child gives way to the command (``os.nice`` increment).
CHILD_NICENESS = 10


@dataclass
class WorkAhead:
    """The table read ahead (``table``, the (level, message) lines its read logged) and, unless the run's
    ensemble is read from base columns, its base clusterings (``ensemble`` with its lines and seconds, for
    ``ensemble_key``: the ensemble size and seed they follow)."""

    table: PartitionedTable
    table_lines: list[tuple[int, str]]
    ensemble: PartitionedEnsemble | None = None
    ensemble_lines: list[tuple[int, str]] = field(default_factory=list)
    ensemble_seconds: float = 0.0
    ensemble_key: tuple = ()


#: The work :meth:`WorkAheadProcess.collect` kept last, by request (:func:`~lwec_tasks.preflight.request_key`).
_AHEAD: dict[str, WorkAhead] = {}


class WorkAheadProcess:
    """The child process doing a request's work ahead (:func:`start_work_ahead`): ``process`` (started by
    ``start_method``, ``fork`` or ``spawn``) and ``connection``, this process's end of their pipe."""

    def __init__(self, request, process, start_method: str, connection):
        self.request, self.process, self.start_method, self.connection = request, process, start_method, connection

    def collect(self) -> None:
        """Wait for the child and keep its work for the run's tasks. Raises :class:`LwecInputError` for bad
        input; after any other failure (the child's, or its death) nothing is kept."""
        _AHEAD.clear()  # one run's work at most
        key = request_key(self.request)
        if not self.connection.poll():
            open_write_connections(self.request)
        try:
            outcome, value = self.connection.recv()
        except (EOFError, OSError):  # the child died
            outcome, value = "failed", None
        try:
            if outcome == "bad input":
                raise LwecInputError(value)
            if outcome == "done":
                with suppress(OSError):  # its file gone with it: the tasks do the work
                    _AHEAD[key] = _unpacked(*value, self.process.pid)
        finally:
            if key in _AHEAD:
                _DRAWER[:] = [self]  # its work taken, it draws the run's figures
            else:
                self.cancel()

    def draw(self, arguments: tuple) -> dict[str, bytes] | None:
        """The figures :func:`~lwec_tasks.tracking.figures.consensus_figures` draws from ``arguments``, drawn
        by the child as PNG bytes; None (and the child stopped) when it cannot."""
        try:
            self.connection.send(("draw", arguments))
            outcome, figures = self.connection.recv()
        except (EOFError, OSError):
            outcome, figures = "failed", None
        if outcome != "drawn":
            self.cancel()
            return None
        return figures

    def cancel(self) -> None:
        """Stop the child if it still runs. Calling it again does nothing."""
        if self in _DRAWER:
            _DRAWER.clear()
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


#: The child whose work :meth:`WorkAheadProcess.collect` kept, while it waits to draw the run's figures.
_DRAWER: list[WorkAheadProcess] = []


def drawing_ahead() -> bool:
    """Whether a child that did the run's work ahead will draw its figures (:func:`figures_drawn_ahead`)."""
    return bool(_DRAWER) and _DRAWER[0].process.is_alive()


def figures_drawn_ahead(arguments: tuple) -> dict[str, bytes] | None:
    """Artifact name → PNG bytes of the figures drawn from ``arguments`` (those of
    :func:`~lwec_tasks.tracking.figures.consensus_figures`) by the child that did the run's work ahead, on the
    core the label write leaves idle; None when there is no such child or it could not draw them."""
    return _DRAWER[0].draw(arguments) if drawing_ahead() else None


def open_write_connections(request, count: int | None = None) -> None:
    """Open the ADBC connections the run's label write will take (one per writing thread of the in-process
    executor, or ``count``) and leave them idle in this process's pool (:mod:`lwec_tasks.io.adbc_pool`): 0.1–0.2 s
    each, paid while the command waits for its child rather than when the labels are written. PostgreSQL only
    (elsewhere nothing is pooled); failures are left for the write to meet."""
    from contextlib import ExitStack

    from lwec_tasks.executors.in_process import cores
    from lwec_tasks.io.bulk_read import adbc_connector
    from lwec_tasks.io.connection import opened_engine, resolve_database_url

    with suppress(Exception), opened_engine(resolve_database_url(request.database_url)) as engine:
        if engine.dialect.name != "postgresql" or (connect := adbc_connector(engine, read_only=False)) is None:
            return
        with ExitStack() as opened:  # all open at once, then given back to the pool together
            for _ in range(count or cores()):
                opened.enter_context(connect())


def start_work_ahead(request) -> WorkAheadProcess:
    """Start reading the table of ``request`` and generating its base clusterings in a child process; collect
    the work with :meth:`WorkAheadProcess.collect`.

    The child is forked (it shares the libraries this process has imported) when this process runs no other
    thread, and is a fresh interpreter otherwise: a fork copies the locks other threads may hold."""
    start_method = "fork" if threading.active_count() == 1 else "spawn"
    context = multiprocessing.get_context(start_method)
    ours, theirs = context.Pipe()
    process = context.Process(target=_work_in_child, args=(request, theirs), name="lwec-work-ahead", daemon=True)
    process.start()
    theirs.close()
    return WorkAheadProcess(request, process, start_method, ours)


def keep_work_ahead(request) -> None:
    """Do the work of :func:`work_ahead` in this process and keep it for the run's tasks. Bad input raises
    :class:`LwecInputError`; after any other failure nothing is kept."""
    _AHEAD.clear()  # one run's work at most
    work = work_ahead(request)
    if work is not None:
        _AHEAD[request_key(request)] = work


def work_ahead(request) -> WorkAhead | None:
    """Read the table of ``request`` and generate its base clusterings in this process (what the child does).
    Bad input raises :class:`LwecInputError`; after any other failure, None."""
    from lwec_tasks.executors.in_process import InProcess
    from lwec_tasks.stages.generate import base_clusterings
    from lwec_tasks.stages.read import load_table

    table_log, table_lines = _held_logger()
    ensemble_log, ensemble_lines = _held_logger()
    try:
        with closing(InProcess()) as executor:
            table = load_table(executor, request, table_log)
            work = WorkAhead(table, table_lines)
            if request.base_columns is None:
                started = time.perf_counter()
                work.ensemble = base_clusterings(table, request.ensemble_size, request.seed, ensemble_log,
                                                 request.generators)
                work.ensemble_lines = ensemble_lines
                work.ensemble_seconds = time.perf_counter() - started
                work.ensemble_key = (request.ensemble_size, request.seed, request.generators)
    except LwecInputError:
        raise
    except Exception:  # noqa: BLE001 - the tasks do the work again and report what they meet
        return None
    table.session = None  # the executor is closed; the taking task's executor serves the partitions
    return work


def _work_in_child(request, connection) -> None:
    os.nice(CHILD_NICENESS)
    import lwec_tasks.stages.generate  # noqa: F401 - what the work runs on, imported before collections resume
    import lwec_tasks.stages.read  # noqa: F401
    from lwec_tasks.collector import collect_from_here

    collect_from_here()  # a forked child holds collections off as the command did (lwec_tasks.collector)
    # A file without a name (in memory where the system has /dev/shm): nothing is left behind when either
    # process dies. The command opens it through /proc while this process waits, and stops it when it is done.
    with tempfile.TemporaryFile(dir=_shared_directory()) as file:
        work = None
        try:
            work = work_ahead(request)
            message = ("failed", None) if work is None else ("done", (*_packed(work, file), file.fileno()))
        except LwecInputError as error:
            message = ("bad input", str(error))
        except Exception:  # noqa: BLE001 - the tasks do the work again and report what they meet
            message = ("failed", None)
        del work  # its arrays are in the file now
        with suppress(EOFError, OSError):  # the command gone
            connection.send(message)
            if message[0] == "done":
                _draw_on_request(connection)
            connection.recv()  # nothing comes: the command stops this process, or is gone (end of file)


def _draw_on_request(connection) -> None:
    """Draw the run's figures whenever the command asks (:meth:`WorkAheadProcess.draw`) until it stops this
    process; matplotlib is imported first, while the command computes the consensus."""
    from lwec_tasks.tracking.figures import consensus_pngs, prepare_figures

    prepare_figures()
    while True:
        _, arguments = connection.recv()
        try:
            reply = ("drawn", consensus_pngs(*arguments))
        except Exception:  # noqa: BLE001 - the command draws them itself and meets the failure there
            reply = ("failed", None)
        connection.send(reply)


def _packed(work: WorkAhead, file) -> tuple[bytes, list[tuple[int, int]]]:
    """``work`` pickled without its arrays' bytes, which are written to ``file``: (pickle, (offset, length) of
    each array's bytes in the file)."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(work, protocol=5, buffer_callback=buffers.append)
    spans = []
    for buffer in buffers:
        view = buffer.raw()
        start = -(-file.tell() // ALIGNMENT) * ALIGNMENT
        file.seek(start)
        file.write(view)
        spans.append((start, view.nbytes))
    file.flush()
    return data, spans


def _unpacked(data: bytes, spans: list[tuple[int, int]], descriptor: int, pid: int) -> WorkAhead:
    """The work :func:`_packed` wrote to the file open as ``descriptor`` in process ``pid``, its arrays mapped
    from the file (copy on write) rather than read."""
    if not spans:
        return pickle.loads(data)
    with open(f"/proc/{pid}/fd/{descriptor}", "rb") as file:
        mapped = memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY))
    return pickle.loads(data, buffers=[mapped[start:start + length] for start, length in spans])


def _shared_directory() -> str | None:
    return SHARED_DIRECTORY if os.access(SHARED_DIRECTORY, os.W_OK) else None


def taken_table(request, session, log) -> PartitionedTable | None:
    """The table read ahead for ``request``, its partitions now the executor ``session``'s, its read's lines
    logged to ``log``; None when none was."""
    work = _AHEAD.get(request_key(request))
    if work is None or (work.ensemble is not None and work.ensemble_key != (request.ensemble_size, request.seed,
                                                                      request.generators)):
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


def _replay(lines: list[tuple[int, str]], log) -> None:
    for level, message in lines:
        log.log(level, "%s", message)


class _HeldLines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelno, record.getMessage()))


def _held_logger() -> tuple[logging.Logger, list[tuple[int, str]]]:
    """A logger whose lines go only to the returned list of (level, message) (it is not registered with
    :mod:`logging`)."""
    held = _HeldLines()
    log = logging.Logger("lwec.ahead")
    log.addHandler(held)
    return log, held.lines
