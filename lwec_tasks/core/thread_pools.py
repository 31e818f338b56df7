"""One BLAS/OpenMP thread while work runs side by side, without looking the native thread pools up again.

threadpoolctl's ``threadpool_limits`` finds the pools anew on every call, by walking the loaded libraries
(``dl_iterate_phdr``) with a Python callback, which holds the dynamic loader's lock while it waits for the
GIL. Done in one thread while another imports an extension module (``dlopen``, waiting for that lock while it
holds the GIL), the two wait for each other forever: a run whose threads fit base clusterings hung so. The
pools are found on the first :func:`thread_pools` call and again by :func:`find_pools_again` (a stage about to
fit in threads calls it after its imports); :func:`single_threaded` only sets their sizes and restores them
(also some milliseconds a call cheaper). scikit-learn keeps a controller of its own, made on its first
k-means fit; one tiny fit then makes it in the same thread.

Whoever runs work on threads enters :func:`single_threaded` (or calls :func:`thread_pools`) in its own thread
before the threads start: the in-process executor's ``map``, the base clusterings' thread pool, and a Dask
worker when the flow first checks it (:func:`~lwec_tasks.executors.dask.worker_facts`). Two threads may be
inside at once (say, two threads of a program calling ``generate_base_clusterings``): the pools go to one
thread when the first enters and back to their sizes when the last leaves, not when the first leaves.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController


@cache
def thread_pools() -> ThreadpoolController:
    """The process's BLAS and OpenMP thread pools, found once, by the calling thread (scikit-learn's own
    controller made there too, by a tiny k-means fit on one OpenMP thread: in a process forked from one whose
    OpenMP threads had worked, a parallel region would wait for threads the child does not have)."""
    from sklearn.cluster import KMeans

    controller = ThreadpoolController()
    with controller.limit(limits=1, user_api="openmp"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        KMeans(n_clusters=1, n_init=1).fit(np.zeros((2, 1)))
    return controller


def find_pools_again() -> None:
    """Look the pools up again, in the calling thread: after importing a library that brings a pool of its own
    (an OpenMP runtime, say), before threads work side by side."""
    thread_pools.cache_clear()
    thread_pools()


class _OneThreadSections:
    """Counts the threads inside :func:`single_threaded` per kind of pool, and keeps each pool's size from before
    the first entered: threadpoolctl's limiter restores the sizes it found on entry, which, entered by two
    threads that leave in the other order, would leave the pools at one thread for good."""

    KINDS = ("blas", "openmp")

    def __init__(self):
        self._lock = threading.Lock()
        self._inside = dict.fromkeys(self.KINDS, 0)
        self._sizes = {}  # kind -> [(the pool's controller, its size before)]

    @contextlib.contextmanager
    def entered(self, user_api: str | None):
        kinds = self.KINDS if user_api is None else (user_api,)
        with self._lock:
            for kind in kinds:
                if self._inside[kind] == 0:
                    pools = [pool for pool in thread_pools().lib_controllers if pool.user_api == kind]
                    self._sizes[kind] = [(pool, pool.num_threads) for pool in pools]
                    for pool in pools:
                        pool.set_num_threads(1)
                self._inside[kind] += 1
        try:
            yield
        finally:
            with self._lock:
                for kind in kinds:
                    self._inside[kind] -= 1
                    if self._inside[kind] == 0:
                        for pool, size in self._sizes.pop(kind):
                            pool.set_num_threads(size)


_sections = _OneThreadSections()


def single_threaded(user_api: str | None = None):
    """Context manager: every pool (``user_api`` "blas" or "openmp": only those) at one thread inside the block,
    as before the first of the threads inside entered after the last has left."""
    return _sections.entered(user_api)
