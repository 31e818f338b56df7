"""Retry policies for tasks that talk to a database or an MLflow store: retry only when it did not answer.

:func:`database_task` and :func:`tracking_task` declare such tasks with their policy.
"""

from __future__ import annotations

import re

import prefect
from prefect.cache_policies import NO_CACHE

from lwec_tasks.io import DatabaseUnreachableError

#: Attempts after the first for database tasks, and the waits (seconds) before each.
DB_RETRIES = 2
DB_RETRY_DELAYS = [2, 5]
#: Attempts after the first for MLflow logging, and the waits before each.
TRACKING_RETRIES = 2
TRACKING_RETRY_DELAYS = [3, 10]

#: What MLflow's REST and SQL clients say when the store does not answer (as opposed to refusing the run).
_UNREACHABLE = re.compile(
    r"Max retries exceeded|Connection refused|ConnectionError|ConnectTimeout|timed out|"
    r"Name or service not known|Temporary failure in name resolution|could not connect|"
    r"server closed the connection|database is locked",
    re.IGNORECASE,
)


def _raised(state) -> BaseException | None:
    try:
        state.result()
    except BaseException as error:  # noqa: BLE001 - the state's own exception, inspected below
        return error
    return None


def retry_if_unreachable(task, task_run, state) -> bool:
    """Prefect ``retry_condition_fn`` for database tasks: retry connection failures, never bad input."""
    return isinstance(_raised(state), DatabaseUnreachableError)


def retry_if_tracking_unreachable(task, task_run, state) -> bool:
    """Prefect ``retry_condition_fn`` for the MLflow task: retry when the store did not answer.

    A store that answers with an error (a bad experiment, a permission problem)
    is not retried.
    """
    from lwec_tasks.tracking import TrackingError

    error = _raised(state)
    return isinstance(error, (TrackingError, ConnectionError)) and bool(_UNREACHABLE.search(str(error)))


def database_task(name: str, **options):
    """``prefect.task`` decorator for a task that talks to the database: never cached, retried
    :data:`DB_RETRIES` times only when the database did not answer. ``options``: further task options."""
    return prefect.task(name=name, retries=DB_RETRIES, retry_delay_seconds=DB_RETRY_DELAYS,
                        retry_condition_fn=retry_if_unreachable, cache_policy=NO_CACHE, **options)


def tracking_task(name: str, **options):
    """``prefect.task`` decorator for a task that logs to MLflow: never cached, retried
    :data:`TRACKING_RETRIES` times only when the store did not answer. ``options``: further task options."""
    return prefect.task(name=name, retries=TRACKING_RETRIES, retry_delay_seconds=TRACKING_RETRY_DELAYS,
                        retry_condition_fn=retry_if_tracking_unreachable, cache_policy=NO_CACHE, **options)
