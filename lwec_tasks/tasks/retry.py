"""Retry policies for tasks that talk to a database or an MLflow store: retry only when it did not answer.

:func:`database_task` and :func:`tracking_task` declare such tasks with their policy.
"""

from __future__ import annotations

import os

import prefect
from prefect.cache_policies import NO_CACHE

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import DatabaseUnreachableError

#: Attempts after the first for database tasks, and the waits (seconds) before each.
DB_RETRIES = 2
DB_RETRY_DELAYS = [2, 5]
#: Environment variable: attempts after the first for MLflow logging (a whole number, default 2).
TRACKING_RETRIES_ENV = "LWEC_MLFLOW_RETRIES"
#: Waits (seconds) before each further attempt at MLflow logging (the last one repeats).
TRACKING_RETRY_DELAYS = [3, 10]


def retries_from_environment(variable: str, default: int) -> int:
    """The whole number ≥ 0 in environment variable ``variable``, ``default`` when unset or empty.

    Raises :class:`~lwec_tasks.core.errors.LwecInputError` naming the variable for any other value.
    """
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise LwecInputError(f"{variable}={value!r}: expected a whole number ≥ 0 (attempts after the first)")
    return int(value)


#: Attempts after the first for MLflow logging, from $LWEC_MLFLOW_RETRIES when this module is imported.
TRACKING_RETRIES = retries_from_environment(TRACKING_RETRIES_ENV, 2)


def retry_if_unreachable(task, task_run, state) -> bool:
    """Prefect ``retry_condition_fn`` for database tasks: retry connection failures, never bad input."""
    return isinstance(state.result(raise_on_failure=False), DatabaseUnreachableError)


def retry_if_tracking_unreachable(task, task_run, state) -> bool:
    """Prefect ``retry_condition_fn`` for the MLflow task: retry when the store did not answer.

    That is a :class:`~lwec_tasks.tracking.TrackingError` marked ``retryable``:
    a database-backed or SQLite store that refused the connection, timed out or
    was locked. A store that answered with an error (a bad experiment, a
    permission problem) is not retried, nor is a tracking server (http/https):
    MLflow has already retried each of its requests (see
    :mod:`lwec_tasks.tracking.limits`), so the task fails within seconds.
    """
    from lwec_tasks.tracking import TrackingError

    error = state.result(raise_on_failure=False)
    return isinstance(error, TrackingError) and error.retryable


def database_task(name: str, **options):
    """``prefect.task`` decorator for a task that talks to the database: never cached, retried
    :data:`DB_RETRIES` times only when the database did not answer. ``options``: further task options."""
    return prefect.task(name=name, retries=DB_RETRIES, retry_delay_seconds=DB_RETRY_DELAYS,
                        retry_condition_fn=retry_if_unreachable, cache_policy=NO_CACHE, **options)


def tracking_task(name: str, **options):
    """``prefect.task`` decorator for a task that logs to MLflow: never cached, retried
    :data:`TRACKING_RETRIES` times (``$LWEC_MLFLOW_RETRIES``, default 2; after 3 s, then 10 s) only when
    :func:`retry_if_tracking_unreachable` says so. ``options``: further task options."""
    return prefect.task(name=name, retries=TRACKING_RETRIES, retry_delay_seconds=TRACKING_RETRY_DELAYS,
                        retry_condition_fn=retry_if_tracking_unreachable, cache_policy=NO_CACHE, **options)
