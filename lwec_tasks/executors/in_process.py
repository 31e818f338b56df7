"""The in-process executor: the pipeline's partition functions run in this process, on a thread pool.

It offers what :class:`~lwec_tasks.executors.dask.DaskSession` offers (``submit``, ``map``, ``gather``,
``share``), so every stage is written once. Tasks run when submitted; a handle (:class:`Done`) holds the
result, so nothing waits on a scheduler. ``map`` runs one task per partition on a pool of one thread per
core (numpy, numba and scikit-learn release the GIL in their loops); a single partition runs on the
calling thread, so a small table pays for no pool at all.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

from lwec_tasks.core.thread_pools import single_threaded

_keys = itertools.count()


class Done:
    """A finished in-process task, read like a Dask future: ``result()``, ``key``, ``status``."""

    __slots__ = ("key", "_value")

    status = "finished"

    def __init__(self, value, name: str):
        self.key = f"{name}-{next(_keys)}"
        self._value = value

    def result(self):
        return self._value


def _resolved(value):
    """``value`` with every :class:`Done` in it (also inside lists, tuples and dicts) replaced by its result."""
    if isinstance(value, Done):
        return value.result()
    if isinstance(value, (list, tuple)):
        return type(value)(_resolved(v) for v in value)
    if isinstance(value, dict):
        return {k: _resolved(v) for k, v in value.items()}
    return value


def cores() -> int:
    """The cores this process may run on: the in-process executor's default number of threads."""
    return len(os.sched_getaffinity(0))


class InProcess:
    """Runs partition functions in this process; ``n_threads`` of them at a time (default: every core)."""

    name = "in-process"
    address = None
    n_workers = 1
    #: Tasks run in this process.
    runs_here = True

    def __init__(self, n_threads: int | None = None):
        self.n_threads = max(1, n_threads or cores())
        self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="lwec") if self.n_threads > 1 else None

    def submit(self, function: Callable, *args, name: str | None = None, **kwargs) -> Done:
        return Done(function(*_resolved(args), **_resolved(kwargs)), name or function.__name__)

    def map(self, function: Callable, *iterables, name: str | None = None, spread: bool = False,
            **kwargs) -> list[Done]:
        """``function(*items, **kwargs)`` over the zipped ``iterables``, in parallel when there are several
        (``spread``, for the Dask executor's placement, changes nothing here: the pool's threads take the calls in
        turn)."""
        calls = [_resolved(items) for items in zip(*iterables)]
        kwargs = _resolved(kwargs)
        name = name or function.__name__
        if self._pool is None or len(calls) < 2:
            return [Done(function(*items, **kwargs), name) for items in calls]
        # One BLAS/OpenMP thread per task while the pool's threads share the cores.
        with single_threaded():
            running = [self._pool.submit(function, *items, **kwargs) for items in calls]
            wait(running)  # all of them, so a failure leaves nothing running when the caller cleans up
        return [Done(future.result(), name) for future in running]

    def gather(self, handles):
        return _resolved(handles)

    def share(self, value):
        return value

    def load_libraries(self, kinds) -> None:
        """Import what the generators ``kinds`` need here, in this thread, before the pool's threads fit them
        (:func:`~lwec_tasks.core.generators.load_libraries`)."""
        from lwec_tasks.core.generators import load_libraries

        load_libraries(kinds)

    def close(self) -> None:
        """Shut the thread pool down (``contextlib.closing`` calls this at the end of a run)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
