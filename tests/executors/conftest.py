"""A real Dask cluster per test module: a scheduler and two single-threaded worker processes on loopback.

Per module, not per session: an idle cluster's scheduler (in the test process) and workers keep using CPU,
and the rest of the suite should not pay for them after these tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def dask_scheduler():
    """The address (tcp://127.0.0.1:PORT) of a scheduler with two worker processes."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, memory_limit="4GiB")
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture
def dask_client(dask_scheduler):
    """A client of the session's cluster, for registering worker plugins."""
    from distributed import Client

    client = Client(dask_scheduler, set_as_default=False)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(params=["in-process", "dask"])
def executor(request):
    """The ``dask_address`` of each executor: None (in-process, the default) and the session's Dask cluster."""
    if request.param == "in-process":
        return None
    return request.getfixturevalue("dask_scheduler")
