"""Where the pipeline's partition functions run: in this process (the default) or on a Dask cluster.

- :mod:`~lwec_tasks.executors.in_process` — a thread per core in the flow's own process
- :mod:`~lwec_tasks.executors.dask` — the workers of an existing Dask cluster (``dask_address``)
- :mod:`~lwec_tasks.executors.progress` — fixed-order tree reductions and progress lines, for both

Both offer ``submit``, ``map``, ``gather``, ``share`` and ``load_libraries`` over handles with ``result()``, so
the stages in :mod:`lwec_tasks.stages` are written once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any, Protocol

from lwec_tasks.executors.dask import DaskSession, DaskUnreachableError, connect
from lwec_tasks.executors.in_process import InProcess

Executor = InProcess | DaskSession


class Handle(Protocol):
    """A task's result as an executor hands it back: a Dask future, or the in-process executor's finished
    :class:`~lwec_tasks.executors.in_process.Done`."""

    key: str
    status: str

    def result(self) -> Any: ...


@contextmanager
def open_executor(dask_address: str | None = None) -> Iterator[Executor]:
    """The Dask cluster at ``dask_address`` (connecting first: an unreachable scheduler fails within
    seconds), or without one the in-process executor. Closed on exit."""
    if dask_address:
        with connect(dask_address) as session:
            yield session
    else:
        with closing(InProcess()) as executor:
            yield executor


__all__ = ["DaskSession", "DaskUnreachableError", "Executor", "Handle", "InProcess", "open_executor"]
