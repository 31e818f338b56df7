"""Command-line options of the benchmark suite, checked as they are parsed."""

from __future__ import annotations

import argparse

#: Pool names the benchmarks know (the authors' bc_pool_<NAME>.mat files).
KNOWN_POOLS = ("IS", "LR", "LS", "MF", "MNIST", "ODR", "PD", "SPF", "Semeion", "VS")
DEFAULT_SCALE_N = 1_000_000
FULL_SCALE_N = 10_000_000
#: Fewer objects than this make the scale case meaningless (0 skips it).
MIN_SCALE_N = 1_000


def _scale_n(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--scale-n must be an integer, got {text!r}") from None
    if value != 0 and value < MIN_SCALE_N:
        raise argparse.ArgumentTypeError(
            f"--scale-n must be 0 (skip) or at least {MIN_SCALE_N:,} objects, got {value}"
        )
    return value


def _repeats(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--repeats must be an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--repeats must be 0 or more, got {value}")
    return value


def _pool(text: str) -> str:
    by_lower = {name.lower(): name for name in KNOWN_POOLS}
    if text.lower() not in by_lower:
        raise argparse.ArgumentTypeError(f"unknown pool {text!r}; known pools: {', '.join(KNOWN_POOLS)}")
    return by_lower[text.lower()]


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--pools", nargs="*", type=_pool, default=["LR", "PD"],
                        help="authors' pools to run on (default: LR PD; skipped when the pools are absent)")
    parser.add_argument("--scale-n", type=_scale_n, default=None,
                        help=f"objects in the synthetic scale ensemble, 0 to skip (default {DEFAULT_SCALE_N:,}; "
                             f"{FULL_SCALE_N:,} with --full, which needs about 10 GB)")
    parser.add_argument("--full", action="store_true",
                        help="add the big cases: dense LWEA on LR (6.5 GB), the sparse reference at scale, the "
                             "50,000-microcluster LWEA, and a 10,000,000-object scale case unless --scale-n is given")
    parser.add_argument("--repeats", type=_repeats, default=None, metavar="N",
                        help="at most N warm repeats per case after its cold run (default: each case's own, 2 to 5); "
                             "0 times the cold runs only, a quick check that every case runs")
    parser.add_argument("--unset-openblas-env", action="store_true",
                        help="remove OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE from the cases' environment")
    parser.add_argument("--output", metavar="FILE", help="also write the report (markdown) to FILE")
    return parser


def resolve_scale_n(args: argparse.Namespace) -> int:
    """``--scale-n`` as given, else the default for the chosen size of run."""
    if args.scale_n is not None:
        return args.scale_n
    return FULL_SCALE_N if args.full else DEFAULT_SCALE_N
