"""``python -m benchmarks``: time lwec against the references in one run."""

from __future__ import annotations

import argparse
import sys

from benchmarks.runner import main


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--pools", nargs="*", default=["LR", "PD"],
                        help="authors' pools to run on (default: LR PD)")
    parser.add_argument("--scale-n", type=int, default=10_000_000,
                        help="objects in the synthetic scale ensemble (0 to skip; default 10,000,000)")
    parser.add_argument("--quick", action="store_true",
                        help="skip the slow references (dense LWEA on LR, the 10M sparse reference) "
                             "and the 50,000-microcluster LWEA")
    parser.add_argument("--unset-openblas-env", action="store_true",
                        help="remove OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE from the cases' environment")
    parser.add_argument("--output", metavar="FILE", help="also write the report (markdown) to FILE")
    return parser


if __name__ == "__main__":
    parser = add_arguments(argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__))
    sys.exit(main(parser.parse_args()))
