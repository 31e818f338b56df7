"""A failed run's error in its log once.

Prefect logs a task's exception when the task fails (with its traceback), again as the task's final state, again
when it reaches the flow ("Encountered exception during execution", with a second traceback) and again as the
flow's final state: four copies of one error. :class:`ErrorLoggedOnce`, on Prefect's flow-run and task-run
loggers (:func:`log_errors_once`), keeps the first and shortens the rest:

- the first record of an exception stays; for an error whose message says everything
  (:data:`ONE_LINE_ERRORS`: bad input, a held run, an unreachable database or MLflow store) it is that message
  alone, without the traceback; any other error keeps its traceback there;
- later records of the same exception are dropped;
- ``Finished in state Failed("... encountered an exception <the error again>")``, the task's and the flow's,
  becomes :data:`FAILED_STATE_LINE`: the error reaches the flow, whose record of it is the one kept (a task
  whose failure is not retried logs none of its own).
"""

from __future__ import annotations

import contextlib
import logging

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.gate import RunHeld
from lwec_tasks.io.errors import DatabaseUnreachableError
from lwec_tasks.tracking.store import TrackingError

#: Prefect's loggers of flow runs and task runs, where the engines log failures.
ENGINE_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
#: Errors logged as their message alone: the message names the problem and what to do (bad input or a refusal
#: by the database, a run held by its gate, a database that did not answer, MLflow logging that failed).
ONE_LINE_ERRORS = (LwecInputError, RunHeld, DatabaseUnreachableError, TrackingError)
#: What a final-state line says instead of repeating the error.
FAILED_STATE_LINE = "Finished in state Failed (its error is logged once, on its own line)"
_LOGGED = "_lwec_logged"


class ErrorLoggedOnce(logging.Filter):
    """Logging filter: each exception's first ERROR record kept (one line for :data:`ONE_LINE_ERRORS`), its
    repeats dropped, and final-state lines quoting an exception shortened. An exception is known by a mark set
    on it when first logged: the task's exception is the very object that reaches the flow, and the same error
    in another run is another object, logged again."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, BaseException) and record.levelno >= logging.ERROR:
            return self._first_time(record, error)
        if isinstance(record.msg, str) and record.msg.startswith("Finished in state Failed(") \
                and "encountered an exception" in record.getMessage():
            record.msg, record.args = FAILED_STATE_LINE, ()
        return True

    def _first_time(self, record: logging.LogRecord, error: BaseException) -> bool:
        if getattr(error, _LOGGED, False):
            return False
        with contextlib.suppress(AttributeError):  # an exception type without a __dict__
            setattr(error, _LOGGED, True)
        if isinstance(error, ONE_LINE_ERRORS):
            record.msg, record.args, record.exc_info, record.exc_text = str(error), (), None, None
        return True


def log_errors_once() -> ErrorLoggedOnce:
    """Put one :class:`ErrorLoggedOnce` on each of :data:`ENGINE_LOGGERS` (once per process; later calls return
    the one in place)."""
    loggers = [logging.getLogger(name) for name in ENGINE_LOGGERS]
    present = [f for f in loggers[0].filters if isinstance(f, ErrorLoggedOnce)]
    errors_once = present[0] if present else ErrorLoggedOnce()
    for logger in loggers:
        if errors_once not in logger.filters:
            logger.addFilter(errors_once)
    return errors_once
