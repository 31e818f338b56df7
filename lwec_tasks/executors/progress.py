"""What every executor's stages share: fixed-order tree reductions and progress in rows per second.

Handles are Dask futures or the in-process executor's finished handles (:class:`~lwec_tasks.executors.
in_process.Done`); both have ``key``, ``status`` and ``result()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from lwec_tasks.executors.in_process import Done

#: Partial results combined per reduction task.
FAN_IN = 8
#: Seconds between progress lines of a long stage.
PROGRESS_SECONDS = 10


def tree_reduce(session, parts: Sequence, combine: Callable, name: str, fan_in: int = FAN_IN):
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
    """Waits for one future per partition and logs rows per second while they finish.

    The in-process executor has finished the work before its handles are waited on, so there is nothing to
    time: for its handles, no progress lines are logged (the stages log their own totals)."""

    def __init__(self, log, stage: str):
        self.log, self.stage = log, stage
        self.started = self._last = time.perf_counter()
        self.quiet = False

    def wait(self, futures: list, rows: Sequence[int], settle: bool = False) -> float:
        """Block until every future is done; returns the stage's seconds.

        The first task error is raised at once, or — with ``settle`` — once every task has finished (so
        nothing is still running when the caller cleans up).
        """
        self.quiet = bool(futures) and isinstance(futures[0], Done)
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
        self.quiet = bool(futures) and isinstance(futures[0], Done)
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
        if not self.quiet and done < total and now - self._last >= PROGRESS_SECONDS:
            self._last = now
            self.log.info("%s: %d/%d partitions, %d rows, %.0f rows/s", self.stage, done, total, rows,
                          rows / max(now - self.started, 1e-9))

    def finish(self, total_rows: int) -> float:
        seconds = time.perf_counter() - self.started
        if self.quiet:
            return seconds
        self.log.info("%s: %d rows in %.2f s (%.0f rows/s)", self.stage, total_rows, seconds,
                      total_rows / max(seconds, 1e-9))
        return seconds


def _as_completed(handles: list, **options):
    """The handles as they finish: ``distributed.as_completed`` for Dask futures (of a client that is not the
    default one), in order for the in-process executor's finished handles."""
    if not handles or isinstance(handles[0], Done):
        return ((handle, handle.result()) for handle in handles) if options.get("with_results") else iter(handles)
    from distributed import as_completed

    return as_completed(handles, loop=handles[0].client.loop, **options)
