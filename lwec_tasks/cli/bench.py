"""``lwec bench``: the benchmark suite of :mod:`benchmarks` (same options)."""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="time LWEA/LWGP/ECI against dense and sparse references (wall time, peak memory)",
        description="Time lwec against straightforward references; each case in its own process.",
    )
    from benchmarks.options import add_arguments

    add_arguments(parser)
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    from benchmarks.runner import main

    return main(args)
