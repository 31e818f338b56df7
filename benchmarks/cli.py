"""``python -m benchmarks``: the command line of the benchmark suite.

``python -m benchmarks [options]`` times the consensus steps against references (:mod:`benchmarks.runner`);
``python -m benchmarks pipeline ...`` times the whole flow against a naive pandas pipeline
(:mod:`benchmarks.pipeline`); ``python -m benchmarks competent ...`` times the whole ``lwec run`` process
against a competent one-model script (:mod:`benchmarks.competent`); ``python -m benchmarks battery --data DIR``
scores LWEA and LWGP on a folder of clustering benchmark data sets beside the published anchors
(:mod:`benchmarks.battery`).

The suite is not installed with the package: it runs from the source checkout, with ``lwec`` installed.
"""

from __future__ import annotations

import argparse
import sys

PROG = "python -m benchmarks"


def build_parser() -> argparse.ArgumentParser:
    """The suite's parser: the reference cases' options, and one sub-command per whole-pipeline benchmark.

    Each sets ``handler``, a function of the parsed arguments returning an exit code.
    """
    from benchmarks import battery, competent, options, pipeline, runner

    parser = argparse.ArgumentParser(
        prog=PROG, description="Time lwec against straightforward references; each case in its own process. "
                               f"`{PROG} pipeline --database-url URL` times the whole flow instead.")
    options.add_arguments(parser)
    parser.set_defaults(handler=runner.main)
    kinds = parser.add_subparsers(dest="bench_kind", metavar="{pipeline,competent,battery}")
    for name, module, summary in (
            ("pipeline", pipeline, "the whole flow against pandas.read_sql + MiniBatchKMeans + COPY"),
            ("competent", competent, "the whole `lwec run` process against ADBC + one KMeans on a sample"),
            ("battery", battery, "LWEA and LWGP on a folder of benchmark data sets, beside the anchors' scores")):
        kind = kinds.add_parser(name, help=summary, description=module.__doc__.split("\n\n")[0])
        module.add_arguments(kind)
        kind.set_defaults(handler=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark ``argv`` names (default: this process's arguments); bad input ends with one line."""
    from lwec_tasks.core.errors import LwecInputError

    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (LwecInputError, ConnectionError) as error:
        sys.stdout.flush()
        print(f"{PROG}: error: {error}", file=sys.stderr, flush=True)
        return 2 if isinstance(error, LwecInputError) else 1
