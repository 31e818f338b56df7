"""Retry policy for tasks that talk to a database: retry only when it did not answer."""

from __future__ import annotations

from lwec_tasks.io import DatabaseUnreachableError

#: Attempts after the first, and the waits (seconds) before each.
DB_RETRIES = 2
DB_RETRY_DELAYS = [2, 5]


def retry_if_unreachable(task, task_run, state) -> bool:
    """Prefect ``retry_condition_fn``: retry connection failures, never bad input."""
    try:
        state.result()
    except DatabaseUnreachableError:
        return True
    except Exception:
        return False
    return False
