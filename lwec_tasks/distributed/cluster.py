"""The flow's connection to an existing Dask cluster: connecting (failing fast), submitting, reducing, progress.

Only the flow process imports :mod:`distributed`; the workers run the plain functions of
:mod:`lwec_tasks.distributed.partitions` and :mod:`lwec_tasks.distributed.reductions`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.masking import mask_url

#: Seconds to wait for the scheduler to answer before giving up.
CONNECT_TIMEOUT_SECONDS = 5
#: Seconds to wait for the scheduler to have at least one worker.
WORKER_WAIT_SECONDS = 30
#: Partial results combined per reduction task.
FAN_IN = 8
#: Seconds between progress lines of a long stage.
PROGRESS_SECONDS = 10


class DaskUnreachableError(ConnectionError):
    """The Dask scheduler did not answer, or has no workers (nothing was read or written)."""


class DaskSession:
    """A client of the scheduler at ``address`` and a unique prefix for this run's task keys."""

    def __init__(self, client, address: str):
        self.client = client
        self.address = address
        self.prefix = f"lwec-{uuid.uuid4().hex[:8]}"
        self._count = 0

    def key(self, name: str) -> str:
        self._count += 1
        return f"{self.prefix}-{name}-{self._count}"

    def submit(self, function: Callable, *args, name: str | None = None, **kwargs):
        """One task (never deduplicated with another run's: keys are unique)."""
        return self.client.submit(function, *args, key=self.key(name or function.__name__), pure=False, **kwargs)

    def map(self, function: Callable, *iterables, name: str | None = None, **kwargs) -> list:
        """One task per partition: ``function(*items, **kwargs)`` over zipped ``iterables``."""
        return [self.submit(function, *items, name=name, **kwargs) for items in zip(*iterables)]

    def gather(self, futures):
        return self.client.gather(futures)

    def share(self, array):
        """Put ``array`` on the cluster once; tasks that take the returned future fetch it once per worker
        (instead of carrying a copy in every task, through the scheduler)."""
        return self.client.scatter(array, hash=False)

    @property
    def n_threads(self) -> int:
        return sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values()) or 1

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info()["workers"])


@contextmanager
def connect(address: str, timeout: float | None = None) -> Iterator[DaskSession]:
    """Connect to the scheduler at ``address``; the client (and every future of the run) closes on exit.

    Raises :class:`DaskUnreachableError` naming the address within ``timeout`` seconds (default
    :data:`CONNECT_TIMEOUT_SECONDS`) when the scheduler does not answer, and after
    :data:`WORKER_WAIT_SECONDS` when it has no workers; :class:`LwecInputError` when ``distributed`` is not
    installed here or the workers cannot import ``lwec``.
    """
    client = _open_client(address, timeout)
    shown = mask_url(address)
    try:
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        except Exception:  # noqa: BLE001 - distributed raises TimeoutError or its own wrappers
            raise DaskUnreachableError(
                f"the Dask scheduler at {shown!r} has no workers (waited {WORKER_WAIT_SECONDS} s); "
                f"start some with `dask worker {shown}`") from None
        check_workers(client, address)
        yield DaskSession(client, address)
    finally:
        client.close()


def check_scheduler(address: str, timeout: float | None = None) -> None:
    """Raise as :func:`connect` does when the scheduler at ``address`` does not answer within ``timeout`` s.

    Connects and disconnects at once, without waiting for workers: a check to make before a run starts.
    """
    _open_client(address, timeout).close()


def _open_client(address: str, timeout: float | None):
    """A ``distributed.Client`` of the scheduler at ``address`` (not the default client of this process)."""
    try:
        from distributed import Client
    except ImportError as error:
        raise LwecInputError(
            f"dask_address={mask_url(address)!r} needs Dask's distributed scheduler client, which is not "
            "installed: pip install 'lwec[dask]'") from error
    timeout = CONNECT_TIMEOUT_SECONDS if timeout is None else timeout
    try:
        return Client(address, timeout=timeout, set_as_default=False)
    except Exception as error:  # noqa: BLE001 - every failure to connect means the same to the operator
        shown = mask_url(address)
        reason = _first_line(error).replace(address, shown)
        raise DaskUnreachableError(
            f"cannot reach the Dask scheduler at {shown!r} (waited {timeout:g} s): {type(error).__name__}: "
            f"{reason}; check dask_address and that `dask scheduler` runs there") from None


def check_workers(client, address: str) -> None:
    """Refuse workers that cannot import this package (they would fail every task)."""
    from lwec_tasks.distributed.partitions import worker_facts

    try:
        client.run(worker_facts)
    except Exception as error:  # noqa: BLE001 - an import failure arrives as any exception type
        raise LwecInputError(
            f"the workers of the Dask scheduler at {mask_url(address)!r} cannot run lwec tasks "
            f"({type(error).__name__}: {_first_line(error)}); install lwec and the database driver on every worker"
        ) from None


def tree_reduce(session: DaskSession, parts: Sequence, combine: Callable, name: str, fan_in: int = FAN_IN):
    """Combine ``parts`` (futures) with ``combine(*group)`` in groups of consecutive parts, level by level.

    The grouping depends only on the number of parts, so floating-point sums come out the same on every
    run, however the tasks are scheduled. Returns one future.
    """
    level = list(parts)
    while len(level) > 1:
        level = [level[i] if len(level[i:i + fan_in]) == 1 else session.submit(combine, *level[i:i + fan_in], name=name)
                 for i in range(0, len(level), fan_in)]
    return level[0]


class Progress:
    """Waits for one future per partition and logs rows per second while they finish."""

    def __init__(self, log, stage: str):
        self.log, self.stage = log, stage
        self.started = time.perf_counter()

    def wait(self, futures: list, rows: Sequence[int], settle: bool = False) -> float:
        """Block until every future is done; returns the stage's seconds.

        The first task error is raised at once, or — with ``settle`` — once every task has finished (so
        nothing is still running when the caller cleans up).
        """
        position = {future.key: i for i, future in enumerate(futures)}
        rows = [int(r) for r in rows]
        failed = None
        done_rows = 0
        for done, future in enumerate(_as_completed(futures), start=1):
            if future.status == "error":
                if not settle:
                    future.result()
                failed = failed or future
            done_rows += rows[position[future.key]]
            self._report(done, len(futures), done_rows)
        if failed is not None:
            failed.result()
        return self.finish(sum(rows))

    def wait_results(self, futures: list, rows_of: Callable) -> list:
        """Like :meth:`wait` for futures of small results, counting ``rows_of(result)`` rows; returns the results."""
        position = {future.key: i for i, future in enumerate(futures)}
        results = [None] * len(futures)
        done_rows = 0
        for done, (future, result) in enumerate(_as_completed(futures, with_results=True), start=1):
            results[position[future.key]] = result
            done_rows += int(rows_of(result))
            self._report(done, len(futures), done_rows)
        self.finish(done_rows)
        return results

    def _report(self, done: int, total: int, rows: int) -> None:
        now = time.perf_counter()
        if done < total and now - getattr(self, "_last", self.started) >= PROGRESS_SECONDS:
            self._last = now
            self.log.info("%s: %d/%d partitions, %d rows, %.0f rows/s", self.stage, done, total, rows,
                          rows / max(now - self.started, 1e-9))

    def finish(self, total_rows: int) -> float:
        seconds = time.perf_counter() - self.started
        self.log.info("%s: %d rows in %.2f s (%.0f rows/s)", self.stage, total_rows, seconds,
                      total_rows / max(seconds, 1e-9))
        return seconds


def _as_completed(futures: list, **options):
    """``distributed.as_completed`` for futures of a client that is not the default one."""
    from distributed import as_completed

    return as_completed(futures, loop=futures[0].client.loop if futures else None, **options)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""
