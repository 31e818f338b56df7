"""Console output of the command line: Prefect's log lines without tracebacks."""

from __future__ import annotations

import copy
import logging


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
