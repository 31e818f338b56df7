"""``python -m benchmarks.targets``: re-measure every figure the project has promised, one table row each.

    python -m benchmarks.targets --list                      # ids, targets, estimated minutes, needs
    python -m benchmarks.targets --quick                     # the cheap rows (about 5 minutes)
    python -m benchmarks.targets --database-url URL          # everything, whole runs included
    python -m benchmarks.targets --only battery-dev-half,paper-pools --markdown --json rows.json

Each row: the target's id, the target as promised, the figure measured, whether it holds (``yes``, ``NO``,
``skipped: reason`` when what it needs is absent, ``error: message``) and the seconds it took. Rows are
printed as they are measured (stdout; progress on stderr), then the whole table (``--markdown``: ready for
BENCHMARKS.md). Whole-run rows need ``--database-url`` (PostgreSQL; nothing is started without it) and are
skipped otherwise; rows on ``../shared/data`` are skipped when it is absent. Skipped rows count as neither
holding nor failing. Exit status 1 when a measured row does not hold or failed, 2 on bad options, else 0.
The targets themselves: :mod:`benchmarks.target_list`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.target_table import (
    Context,
    Target,
    exit_status,
    listing,
    markdown_table,
    measure_targets,
    progress_line,
    select,
    text_table,
)

PROG = "python -m benchmarks.targets"


def id_list(text: str) -> list[str]:
    """``--only``/``--skip``: comma-separated ids."""
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--only", type=id_list, action="extend", metavar="ID[,ID]",
                        help="measure only these targets (repeatable)")
    parser.add_argument("--skip", type=id_list, action="extend", default=[], metavar="ID[,ID]",
                        help="leave these targets out (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the targets (after --only/--skip/--quick) and stop")
    parser.add_argument("--quick", action="store_true", help="only the cheap rows")
    parser.add_argument("--database-url", metavar="URL",
                        help="SQLAlchemy URL of the PostgreSQL database for the whole-run rows (default: none; "
                             "those rows are skipped)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the rows as JSON to FILE")
    parser.add_argument("--markdown", action="store_true", help="print the final table as markdown")
    parser.add_argument("--workdir", metavar="DIR",
                        help="scratch folder of the whole runs (default: a new temporary one)")
    return parser


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None, targets: list[Target] | None = None) -> int:
    """Run the command; ``targets`` replaces :data:`benchmarks.target_list.TARGETS` (for tests)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if targets is None:
        from benchmarks.target_list import TARGETS as targets
    try:
        chosen = select(targets, args.only, args.skip, args.quick)
    except ValueError as error:
        parser.error(str(error))
    if args.list:
        print(listing(chosen))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="lwec-targets-") as scratch:
        context = Context(database_url=args.database_url, workdir=args.workdir or scratch, log=log)
        for row in measure_targets(chosen, context):
            rows.append(row)
            print(progress_line(row), flush=True)
    print()
    print(markdown_table(rows) if args.markdown else text_table(rows), flush=True)
    if args.json:
        args.json.write_text(json.dumps([row.as_dict() for row in rows], indent=1, ensure_ascii=False) + "\n")
    return exit_status(rows)


if __name__ == "__main__":
    sys.exit(main())
