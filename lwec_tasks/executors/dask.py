"""The Dask executor: the flow's connection to an existing Dask cluster (connecting fails fast), submitting.

Only the flow process imports :mod:`distributed`; the workers run the plain functions of
:mod:`lwec_tasks.stages.partitions` and :mod:`lwec_tasks.stages.reductions`.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.masking import mask_url

#: Seconds to wait for the scheduler to answer before giving up.
CONNECT_TIMEOUT_SECONDS = 5
#: Seconds to wait for the scheduler to have at least one worker.
WORKER_WAIT_SECONDS = 30


class DaskUnreachableError(ConnectionError):
    """The Dask scheduler did not answer, or has no workers (nothing was read or written)."""


class DaskSession:
    """A client of the scheduler at ``address`` and a unique prefix for this run's task keys."""

    name = "dask"
    #: Tasks run on the cluster's workers, not in this process.
    runs_here = False

    def __init__(self, client, address: str):
        self.client = client
        self.address = address
        self.prefix = f"lwec-{uuid.uuid4().hex[:8]}"
        self._numbers = itertools.count(1)  # the flow submits from two threads while the labels are written

    def key(self, name: str) -> str:
        return f"{self.prefix}-{name}-{next(self._numbers)}"

    def submit(self, function: Callable, *args, name: str | None = None, **kwargs):
        """One task (never deduplicated with another run's: keys are unique)."""
        return self.client.submit(function, *args, key=self.key(name or function.__name__), pure=False, **kwargs)

    def map(self, function: Callable, *iterables, name: str | None = None, spread: bool = False, **kwargs) -> list:
        """One task per partition: ``function(*items, **kwargs)`` over zipped ``iterables``.

        ``spread`` (default False) places the tasks on the workers in turn, each still free to run elsewhere: for
        tasks that all read one input held by one worker (the base models' fitting rows), which the scheduler
        would otherwise keep beside that input, one worker fitting while the others wait.
        """
        calls = list(zip(*iterables))
        if not spread:
            return [self.submit(function, *items, name=name, **kwargs) for items in calls]
        workers = sorted(self.client.scheduler_info()["workers"])
        return [self.submit(function, *items, name=name, workers=[workers[i % len(workers)]],
                            allow_other_workers=True, **kwargs) for i, items in enumerate(calls)]

    def gather(self, futures):
        return self.client.gather(futures)

    def share(self, array):
        """Put ``array`` on the cluster once; tasks that take the returned future fetch it once per worker
        (instead of carrying a copy in every task, through the scheduler)."""
        return self.client.scatter(array, hash=False)

    def load_libraries(self, kinds) -> None:
        """Import what the generators ``kinds`` need on every worker, before their tasks fit them
        (:func:`~lwec_tasks.core.generators.load_libraries`); the flow process, which fits nothing, imports
        none of it."""
        from lwec_tasks.core.generators import load_libraries

        self.client.run(load_libraries, list(kinds))

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
    with _open_client(address, timeout) as client:
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        except Exception:  # noqa: BLE001 - distributed raises TimeoutError or its own wrappers
            shown = mask_url(address)
            raise DaskUnreachableError(
                f"the Dask scheduler at {shown!r} has no workers (waited {WORKER_WAIT_SECONDS} s); "
                f"start some with `dask worker {shown}`") from None
        check_workers(client, address)
        yield DaskSession(client, address)


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


#: The module that imports the code the workers run (``--preload`` it when starting them); a worker that cannot
#: import it would fail every task.
WORKER_MODULE = "lwec_tasks.stages.worker_code"


def worker_facts() -> dict:
    """What the flow checks about a worker: its lwec version and process id.

    Run on the worker, it imports :data:`WORKER_MODULE` there (at once, when the worker preloaded it), and finds its
    native thread pools before tasks run on its threads (:func:`~lwec_tasks.core.thread_pools.thread_pools`).
    It names the module rather than importing it here: the executors sit below the stages they run.
    """
    import importlib

    import lwec_tasks
    from lwec_tasks.core.thread_pools import thread_pools

    importlib.import_module(WORKER_MODULE)
    thread_pools()
    return {"lwec": lwec_tasks.__version__, "pid": os.getpid()}


def check_workers(client, address: str) -> None:
    """Refuse workers that cannot import this package (they would fail every task)."""
    try:
        client.run(worker_facts)
    except Exception as error:  # noqa: BLE001 - an import failure arrives as any exception type
        raise LwecInputError(
            f"the workers of the Dask scheduler at {mask_url(address)!r} cannot run lwec tasks "
            f"({type(error).__name__}: {_first_line(error)}); install lwec and the database driver on every worker"
        ) from None


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""
