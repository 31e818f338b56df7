"""``lwec bench``: the benchmark suite in the project's ``benchmarks/`` folder (same options).

The suite is not installed with the package; it is found in the checkout the
package was installed from (``pip install -e .``).
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The checkout that holds ``benchmarks/`` next to ``lwec_tasks/``.
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _import_benchmarks():
    if not (PROJECT_ROOT / "benchmarks" / "runner.py").exists():
        return None
    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))
    import benchmarks.options
    import benchmarks.runner

    return benchmarks


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="time LWEA/LWGP/ECI against dense and sparse references (wall time, peak memory)",
        description="Time lwec against straightforward references; each case in its own process.",
    )
    suite = _import_benchmarks()
    if suite is not None:
        suite.options.add_arguments(parser)
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    suite = _import_benchmarks()
    if suite is None:
        from lwec_tasks.core.errors import LwecInputError

        raise LwecInputError(
            f"the benchmark suite is not here ({PROJECT_ROOT / 'benchmarks'} is missing): it ships with the "
            "source checkout; install lwec from a checkout with `pip install -e .` to run `lwec bench`"
        )
    return suite.runner.main(args)
