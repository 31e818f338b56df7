"""The ``lwec`` command line.

Each sub-command lives in its own module in this package and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` to a
function taking the parsed arguments and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from lwec_tasks import __version__
from lwec_tasks.core.errors import LwecInputError

# Sub-command modules, in the order `lwec --help` lists them.
COMMAND_MODULES = ("demo", "run", "assign", "reproduce", "study", "bench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lwec",
        description="Locally weighted ensemble clustering (LWEA / LWGP) pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"lwec {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"lwec_tasks.cli.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"lwec_tasks.cli.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    try:
        return int(args.handler(args) or 0)
    except LwecInputError as error:
        print(f"lwec {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
