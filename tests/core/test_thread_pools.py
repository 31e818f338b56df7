"""Native thread pools are found by the importing or calling thread: threads fitting base clusterings side by
side never walk the loaded libraries, which deadlocks against another thread loading an extension module."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import threadpoolctl
from sklearn.datasets import make_blobs

from lwec_tasks import generate_base_clusterings
from lwec_tasks.core.thread_pools import find_pools_again, single_threaded, thread_pools
from lwec_tasks.executors.in_process import InProcess
from lwec_tasks.stages.base_clusterings import base_plan, fit_base_model


@pytest.fixture
def library_walks(monkeypatch):
    """The names of the threads that walk the loaded libraries (threadpoolctl's lookup of the pools)."""
    walks = []
    original = threadpoolctl.ThreadpoolController._load_libraries

    def recorded(self):
        walks.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(threadpoolctl.ThreadpoolController, "_load_libraries", recorded)
    return walks


def test_single_threaded_sets_every_pool_to_one_thread_and_restores_it():
    find_pools_again()  # what earlier tests loaded since
    before = {info["filepath"]: info["num_threads"] for info in threadpoolctl.threadpool_info()}
    with single_threaded():
        inside = threadpoolctl.threadpool_info()
    assert inside and all(info["num_threads"] == 1 for info in inside), inside
    assert {info["filepath"]: info["num_threads"] for info in threadpoolctl.threadpool_info()} == before


def test_sections_left_in_the_other_order_give_the_pools_their_sizes_back():
    """Two threads (of a program fitting base clusterings in each, say) each enter a one-thread section, and the
    first to enter may leave first: here the two sections are entered and left in that order by hand."""
    find_pools_again()

    def sizes(kind=None):
        return {pool.filepath: pool.num_threads for pool in thread_pools().lib_controllers
                if kind in (None, pool.user_api)}

    with thread_pools().limit(limits=2):  # a known size above one, whatever the environment set
        before = sizes()
        first, second = single_threaded(), single_threaded(user_api="blas")
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        blas_while_second_inside = sizes("blas")
        second.__exit__(None, None, None)
        after = sizes()
    assert set(before.values()) == {2}, before
    assert set(blas_while_second_inside.values()) == {1}
    assert after == before


def test_base_clusterings_fitted_side_by_side_never_walk_the_libraries(library_walks):
    X, _ = make_blobs(600, 4, centers=4, random_state=0)
    labels = generate_base_clusterings(X, n_clusterings=6, random_state=0, n_jobs=2,
                                       generators="kmeans:1,genie:1,gmm:1")
    assert labels.shape == (600, 6)
    assert set(library_walks) <= {threading.current_thread().name}  # the caller's, after its imports


def test_the_pipelines_fits_on_the_in_process_executor_never_walk_the_libraries(library_walks):
    X, _ = make_blobs(600, 4, centers=4, random_state=1)
    thread_pools.cache_clear()  # not found yet: the executor's map finds them, in its caller's thread
    plan = base_plan(len(X), 6, 0, "kmeans:1,genie:1,gmm:1")
    models = InProcess(2).map(fit_base_model, plan.samples, plan.ks.tolist(), plan.seeds.tolist(), plan.kinds,
                              [plan.budget] * 6, rows=X[plan.positions], positions=plan.positions)
    assert len(models) == 6 and all(np.asarray(model.result().predict(X)).shape == (600,) for model in models)
    assert set(library_walks) == {threading.current_thread().name}  # the executor's caller's, before the threads


FORKED_AFTER_OPENMP_WORKED = """
import os, sys, time
import numpy as np
from sklearn.cluster import KMeans
from lwec_tasks.core.thread_pools import thread_pools

KMeans(n_clusters=3, n_init=1, random_state=0).fit(np.random.default_rng(0).normal(size=(20_000, 4)))
child = os.fork()
if child == 0:  # the pools not found yet in the parent: the child finds them first
    thread_pools()
    os._exit(0)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    done, status = os.waitpid(child, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(child, 9)
sys.exit("the child hung")
"""


def test_a_process_forked_after_openmp_threads_worked_finds_its_pools_without_hanging():
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FORKED_AFTER_OPENMP_WORKED], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr[-2000:]
