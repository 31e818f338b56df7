"""The ``lwec`` command line.

Each sub-command lives in its own module in this package and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` to a
function taking the parsed arguments and returning an exit code. Only the
module of the command being run is imported. A command that runs a flow also
sets ``exit_promptly``: run as the program, it ends the process once its
outcome is printed (:func:`exit_promptly`).

Failures end the output with one line, ``lwec COMMAND: error: ...``: bad input
(exit status 2) and unreachable services (1) for every command, and every other
failure (1) for commands with ``--verbose``, which adds the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from lwec_tasks import __version__
from lwec_tasks.core.errors import LwecInputError

# Sub-command modules, in the order `lwec --help` lists them.
COMMAND_MODULES = ("demo", "run", "assign", "reproduce", "study")


def csv_list(text: str) -> list[str]:
    """An option's comma-separated values, blanks dropped: ``"a, b,"`` → ``["a", "b"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The ``lwec`` parser; given ``argv`` that names a command, with that command's parser only."""
    command = next((arg for arg in argv or () if not arg.startswith("-")), None)
    modules = (command,) if command in COMMAND_MODULES else COMMAND_MODULES
    parser = argparse.ArgumentParser(prog="lwec",
                                     description="Locally weighted ensemble clustering (LWEA / LWGP) pipelines.")
    parser.add_argument("--version", action="version", version=f"lwec {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(f"lwec_tasks.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command in ``argv`` (default: this process's arguments) and return its exit code.

    Called without ``argv`` (as the ``lwec`` program), a command that ran a flow ends the process as soon as
    it has printed its outcome (:func:`exit_promptly`).
    """
    as_program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    from lwec_tasks.run_context import RunContext, running_with

    with running_with(RunContext()):  # the command's one run context: where its stop requests are recorded
        return _command(argv, as_program)


def _command(argv: list[str], as_program: bool) -> int:
    from lwec_tasks.stopping import exit_status, stop_on_signals, stop_requested

    try:
        # The command's imports under lwec's own handler: a signal is recorded even when an imported library
        # catches the KeyboardInterrupt it raises (some import optional modules under a bare ``except``).
        with stop_on_signals():
            parser = build_parser(argv)
            args = parser.parse_args(argv)
    except KeyboardInterrupt:
        pass
    if stop_requested() is not None:  # stopped before the command started
        name = signal.Signals(stop_requested()).name
        print(f"lwec: Stopped ({name}) before anything was published", file=sys.stderr, flush=True)
        return exit_status()
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    try:
        code = int(args.handler(args) or 0)
    except Exception as error:  # noqa: BLE001 - re-raised unless the command reports it in one line
        if not isinstance(error, LwecInputError | ConnectionError) and not hasattr(args, "verbose"):
            raise
        from lwec_tasks.cli.console import report_failure

        code = report_failure(args.command, error, verbose=getattr(args, "verbose", False))
    if as_program and getattr(args, "exit_promptly", False):
        exit_promptly(code)
    return code


def exit_promptly(code: int) -> None:
    """End the process with ``code`` now: run its exit handlers (Prefect sends its pending logs and events),
    flush the output, and skip the interpreter's teardown of the modules a flow loads (about 2 s)."""
    import logging
    import os

    from lwec_tasks.frameworks import run_exit_handlers

    run_exit_handlers()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
