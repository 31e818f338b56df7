"""Console output of the command line: one-line errors, printed last, and Prefect's log lines without tracebacks."""

from __future__ import annotations

import copy
import logging
import sys
import traceback

#: Longest error line printed; a longer message is cut (``--verbose`` prints it whole, with its traceback).
MAX_ERROR_CHARACTERS = 1000


def one_line(text: str, limit: int = MAX_ERROR_CHARACTERS) -> str:
    """``text`` on one line: line breaks and runs of blanks become single spaces; cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def describe(error: BaseException) -> str:
    """What went wrong, for an operator: the message of errors that name their problem (bad input, a service
    that did not answer, a run held by its quality gate), else the error's type and message."""
    from lwec_tasks.core.errors import LwecInputError
    from lwec_tasks.gate import RunHeld

    if isinstance(error, LwecInputError | ConnectionError | RunHeld) and str(error):
        return one_line(str(error))
    return one_line(f"{type(error).__name__}: {error}")


def exit_code(error: BaseException) -> int:
    """2 for bad input (:class:`~lwec_tasks.core.errors.LwecInputError`), 1 for every other failure."""
    from lwec_tasks.core.errors import LwecInputError

    return 2 if isinstance(error, LwecInputError) else 1


def report_failure(command: str, error: BaseException, verbose: bool = False) -> int:
    """Print ``error`` as one line, ``lwec COMMAND: error: ...``, after any traceback (``verbose``); return the
    exit code.

    Commands that run a flow stop their temporary Prefect server before (:func:`lwec_tasks.cli.run.run_after_checks`),
    so that this line is also the last of their output; against a configured Prefect API, the log lines and events
    Prefect still holds are sent first, so that its workers have nothing left to say at exit.
    """
    if verbose:
        traceback.print_exception(error)
    if "prefect" in sys.modules:
        from lwec_tasks.cli.prefect_server import drain_prefect_workers

        drain_prefect_workers()
    sys.stdout.flush()
    print(f"lwec {command}: error: {describe(error)}", file=sys.stderr, flush=True)
    return exit_code(error)


class _WithoutTraceback(logging.Formatter):
    """Formats records like ``inner`` but leaves out exception tracebacks and stack info."""

    def __init__(self, inner: logging.Formatter | None):
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        # A copy: the same record also reaches Prefect's API handler, which keeps the traceback.
        record = copy.copy(record)
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return self.inner.format(record)


def hide_tracebacks_on_console() -> None:
    """Make every console (stream) handler of Prefect's loggers print one line per record.

    Call after Prefect is imported (it configures logging on import). The flow
    run's logs in the Prefect UI keep their tracebacks.
    """
    names = ["", *[name for name in logging.Logger.manager.loggerDict if name.startswith("prefect")]]
    for name in names:
        for handler in logging.getLogger(name).handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler.formatter, _WithoutTraceback):
                handler.setFormatter(_WithoutTraceback(handler.formatter))
