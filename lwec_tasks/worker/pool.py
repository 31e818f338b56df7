"""The work pool a warm worker polls: made when missing, refused when it is of another type."""

from __future__ import annotations

from prefect.client.orchestration import PrefectClient
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.exceptions import ObjectNotFound

from lwec_tasks.worker.warm_process import WORKER_TYPE, WarmProcessWorker


async def ensure_warm_pool(client: PrefectClient, name: str) -> None:
    """Create work pool ``name`` of type ``lwec-warm-process`` (its default job template) unless it exists.

    Raises ValueError naming the pool and its type when a pool of that name exists with another type: a warm
    worker cannot run its flow runs.
    """
    try:
        pool = await client.read_work_pool(name)
    except ObjectNotFound:
        await client.create_work_pool(WorkPoolCreate(
            name=name, type=WORKER_TYPE, base_job_template=WarmProcessWorker.get_default_base_job_template(),
            description="lwec's flow runs, each forked from a warm process (deployments/serve.py)"))
        return
    if pool.type != WORKER_TYPE:
        raise ValueError(f"work pool {name!r} is of type {pool.type!r}, not {WORKER_TYPE!r}: choose another "
                         f"pool name (--work-pool) or delete that pool")
