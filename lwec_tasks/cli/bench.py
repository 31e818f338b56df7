"""``lwec bench``: the benchmark suite in the project's ``benchmarks/`` folder.

``lwec bench [options]`` times the consensus steps against references (same
options as ``python -m benchmarks``); ``lwec bench pipeline ...`` times the
whole flow against a naive pandas pipeline (:mod:`benchmarks.pipeline`);
``lwec bench competent ...`` times the whole ``lwec run`` process against a
competent one-model script (:mod:`benchmarks.competent`); ``lwec bench battery
--data DIR`` scores LWEA and LWGP on a folder of clustering benchmark data sets
beside the published anchors (:mod:`benchmarks.battery`).
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
    import benchmarks.battery
    import benchmarks.competent
    import benchmarks.options
    import benchmarks.pipeline
    import benchmarks.runner

    return benchmarks


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="time LWEA/LWGP/ECI against references, or the whole pipeline against a naive one",
        description="Time lwec against straightforward references; each case in its own process. "
                    "`lwec bench pipeline --database-url URL` times the whole flow instead.",
    )
    suite = _import_benchmarks()
    if suite is not None:
        suite.options.add_arguments(parser)
        kinds = parser.add_subparsers(dest="bench_kind", metavar="{pipeline,competent,battery}")
        pipeline = kinds.add_parser(
            "pipeline", help="the whole flow against pandas.read_sql + MiniBatchKMeans + COPY",
            description=suite.pipeline.__doc__.split("\n\n")[0])
        suite.pipeline.add_arguments(pipeline)
        competent = kinds.add_parser(
            "competent", help="the whole `lwec run` process against ADBC + one KMeans on a sample",
            description=suite.competent.__doc__.split("\n\n")[0])
        suite.competent.add_arguments(competent)
        battery = kinds.add_parser(
            "battery", help="LWEA and LWGP on a folder of benchmark data sets, beside the anchors' scores",
            description=suite.battery.__doc__.split("\n\n")[0])
        suite.battery.add_arguments(battery)
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    suite = _import_benchmarks()
    if suite is None:
        from lwec_tasks.core.errors import LwecInputError

        raise LwecInputError(f"the benchmark suite is not here ({PROJECT_ROOT / 'benchmarks'} is missing): it ships "
                             "with the source checkout; install lwec from a checkout with `pip install -e .` to run "
                             "`lwec bench`")
    if getattr(args, "bench_kind", None) == "pipeline":
        return suite.pipeline.main(args)
    if getattr(args, "bench_kind", None) == "competent":
        return suite.competent.main(args)
    if getattr(args, "bench_kind", None) == "battery":
        return suite.battery.main(args)
    return suite.runner.main(args)
