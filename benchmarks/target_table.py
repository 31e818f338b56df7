"""The guard's table: declarative targets, measuring them one by one, and the rows they give.

A :class:`Target` names one promised figure: what is measured, the bound it must meet (a :class:`Comparison`),
the function that measures it, its estimated cost and what it needs. :func:`measure_targets` runs a list of
them in order against one :class:`Context` and yields a :class:`Row` per target as soon as it is known; a row
is *holds* (``"yes"``), *does not hold* (``"NO"``), *skipped* (a need is missing, with the reason) or
*error* (the measurement raised). :func:`exit_status` is non-zero when a measured row does not hold or failed.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

HOLDS, FAILS, SKIPPED, ERROR = "yes", "NO", "skipped", "error"


@dataclass(frozen=True)
class Comparison:
    """``value op bound``, ``op`` one of ``"≤"`` and ``"≥"``."""

    op: str
    bound: float

    def holds(self, value: float, bound: float | None = None) -> bool:
        """Whether ``value`` meets ``bound`` (default: this comparison's own); NaN never holds."""
        limit = self.bound if bound is None else bound
        if math.isnan(value):
            return False
        return value <= limit if self.op == "≤" else value >= limit


def at_most(bound: float) -> Comparison:
    return Comparison("≤", bound)


def at_least(bound: float) -> Comparison:
    return Comparison("≥", bound)


@dataclass(frozen=True)
class Measured:
    """What a measure function returns.

    ``values``: name → number, each compared with the target's bound (all must meet it; a single figure may
    be named ``""``); ``note``: text shown after the numbers; ``bound``: the bound to use instead of the
    target's, when it is read from the data (e.g. published anchors).
    """

    values: dict[str, float]
    note: str = ""
    bound: float | None = None


@dataclass(frozen=True)
class Need:
    """Something a target needs: its name (shown by ``--list``) and a check of a context returning the reason
    it is missing, or None when present."""

    name: str
    missing: Callable[[Context], str | None]


@dataclass(frozen=True)
class Target:
    """One promised figure.

    ``id``: short name for ``--only``/``--skip``; ``what``: the figure in words; ``target``: the bound in
    words, as promised; ``comparison``: the bound as a number; ``measure``: a function of the :class:`Context`
    returning :class:`Measured`; ``minutes``: estimated cost on the project's 2-core machine; ``needs``;
    ``quick``: among the cheap rows of ``--quick``; ``figure_format``: how each value is printed (e.g.
    ``"{:.2f}×"``); ``shares``: the key of a measurement other targets read too (its cost is counted once).
    """

    id: str
    what: str
    target: str
    comparison: Comparison
    measure: Callable[[Context], Measured]
    minutes: float
    needs: tuple[Need, ...] = ()
    quick: bool = False
    figure_format: str = "{:.3g}"
    shares: str | None = None


@dataclass
class Context:
    """What every measure function gets: the options of the run and a store of shared measurements.

    ``database_url``: the database of the whole-run rows (None: those rows are skipped); ``workdir``: a scratch
    folder for the run; ``log``: progress lines (to stderr). :meth:`once` runs an expensive measurement once
    for every target that reads it.
    """

    database_url: str | None = None
    workdir: str | None = None
    log: Callable[[str], None] = lambda line: None
    shared: dict = field(default_factory=dict)

    def once(self, key: str, measure: Callable[[], object]) -> object:
        """``measure()``, computed at the first call with ``key`` and reused after (a failure is re-raised to every
        target that asks)."""
        if key not in self.shared:
            try:
                self.shared[key] = ("value", measure())
            except (Exception, SystemExit) as error:  # noqa: BLE001 - every target reading it reports the same
                self.shared[key] = ("error", error)
        kind, value = self.shared[key]
        if kind == "error":
            raise value
        return value


@dataclass(frozen=True)
class Row:
    """One line of the table: ``status`` is HOLDS, FAILS, SKIPPED or ERROR, ``reason`` why skipped or failed."""

    id: str
    target: str
    figure: str
    status: str
    reason: str = ""
    seconds: float = 0.0
    what: str = ""

    @property
    def holds_text(self) -> str:
        return f"{self.status}: {self.reason}" if self.status in (SKIPPED, ERROR) else self.status

    def as_dict(self) -> dict:
        return {"id": self.id, "target": self.target, "what": self.what, "figure": self.figure,
                "holds": self.holds_text, "status": self.status, "reason": self.reason,
                "seconds": round(self.seconds, 1)}


def figure_text(target: Target, measured: Measured) -> str:
    """The measured values as the table shows them: ``"LWEA 0.812, LWGP 0.819 (note)"``."""
    parts = [(f"{name} " if name else "") + target.figure_format.format(value)
             for name, value in measured.values.items()]
    text = ", ".join(parts)
    if measured.note:
        text = f"{text} ({measured.note})" if text else measured.note
    return text


def measure_one(target: Target, context: Context, clock: Callable[[], float] = time.perf_counter) -> Row:
    """The row of ``target``: skipped when a need is missing, else measured and compared."""
    for need in target.needs:
        reason = need.missing(context)
        if reason:
            return Row(target.id, target.target, "", SKIPPED, reason, what=target.what)
    started = clock()
    try:
        measured = target.measure(context)
    except (Exception, SystemExit) as error:  # noqa: BLE001 - a failed measurement must not stop the others
        # (the benchmark modules end with SystemExit when a server or a run does not come up)
        context.log("".join(traceback.format_exception(error)).rstrip())
        message = " ".join(str(error).split()) or type(error).__name__
        return Row(target.id, target.target, "", ERROR, message[:200], clock() - started, target.what)
    seconds = clock() - started
    if not measured.values:
        return Row(target.id, target.target, figure_text(target, measured), ERROR, "no figure measured", seconds,
                   target.what)
    holds = all(target.comparison.holds(value, measured.bound) for value in measured.values.values())
    return Row(target.id, target.target, figure_text(target, measured), HOLDS if holds else FAILS, "", seconds,
               target.what)


def measure_targets(targets: Iterable[Target], context: Context) -> Iterator[Row]:
    """A row per target, in order, each yielded as soon as it is known."""
    for target in targets:
        yield measure_one(target, context)


def exit_status(rows: Iterable[Row]) -> int:
    """0 when every measured row holds (skipped rows count for nothing), else 1."""
    return 1 if any(row.status in (FAILS, ERROR) for row in rows) else 0


def select(targets: list[Target], only: list[str] | None = None, skip: list[str] | None = None,
           quick: bool = False) -> list[Target]:
    """The targets to run, in the list's order: ``only`` those ids (all when None), less ``skip``, less the
    expensive ones with ``quick``. Raises ValueError naming any unknown id."""
    known = [target.id for target in targets]
    unknown = [name for name in (only or []) + (skip or []) if name not in known]
    if unknown:
        raise ValueError(f"unknown target id {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    chosen = [target for target in targets if (only is None or target.id in only) and target.id not in (skip or [])]
    return [target for target in chosen if target.quick] if quick else chosen


# ----------------------------------------------------------------------------------------------- formatting

COLUMNS = ("id", "target", "figure", "holds", "s")


def _cells(row: Row) -> list[str]:
    return [row.id, row.target, row.figure, row.holds_text, f"{row.seconds:.0f}"]


def text_table(rows: list[Row]) -> str:
    """The rows as aligned plain text, a header line first."""
    table = [list(COLUMNS), *(_cells(row) for row in rows)]
    widths = [max(len(line[j]) for line in table) for j in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in table)


def markdown_table(rows: list[Row]) -> str:
    """The rows as a markdown table (``|`` inside a cell escaped)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|---:|"]
    for row in rows:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in _cells(row)) + " |")
    return "\n".join(lines)


def progress_line(row: Row) -> str:
    """One row as printed the moment it is measured."""
    figure = f" — {row.figure}" if row.figure else ""
    return f"{row.id}: {row.holds_text}{figure} [{row.seconds:.0f} s]"


def listing(targets: list[Target]) -> str:
    """``--list``: id, estimated minutes, quick or not, needs, the target and what is measured, one per line."""
    table = [["id", "min", "quick", "needs", "target", "measured"]]
    for target in targets:
        table.append([target.id, f"{target.minutes:g}", "yes" if target.quick else "", ", ".join(
            need.name for need in target.needs), target.target, target.what])
    widths = [max(len(line[j]) for line in table) for j in range(len(table[0]))]
    costs = {target.shares or target.id: target.minutes for target in targets}
    total = sum(costs.values())
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
                     for line in table) + f"\n\n{len(targets)} targets, about {total:.0f} minutes in all"
