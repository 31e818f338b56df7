"""What the column plan and the encoding need to know about a table's values, asked of the database once.

:func:`column_stats`: one aggregate query — non-NULL rows of every column, whether each numeric column is constant
(its smallest and largest value agree) — and the distinct values of the text and boolean columns. :func:`level_counts`:
each categorical column's levels and their rows, so the levels are the whole table's whichever executor reads the
partitions. SQLAlchemy only (no pandas), so the preflight checks can use it.

On PostgreSQL the text and boolean columns are counted by one scan for all of them (:func:`grouped_levels`: one
hashed, parallel ``GROUP BY`` of all of them, then ``GROUPING SETS`` over its combinations, where
``count(DISTINCT ...)`` sorts each column), which also hands back the levels and rows of every column with at most
:data:`LEVELS_KEPT` levels; :func:`level_counts` takes those rather than scanning again. (A column of many
distinct values makes the combinations as many, at worst one per row: about what sorting it for
``count(DISTINCT ...)`` cost.) Other databases: ``count(DISTINCT ...)`` in the aggregate query, one ``GROUP BY``
per column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from lwec_tasks.io.catalog import SourceTable
from lwec_tasks.io.columns import CATEGORICAL_KINDS, MAX_EXPLICIT_LEVELS, MAX_LEVELS, ColumnStats
from lwec_tasks.io.errors import database_errors

#: A column's levels are handed back by :func:`grouped_levels` when it has at most this many (NULL included):
#: more than any column the plan may keep (:data:`~lwec_tasks.io.columns.MAX_EXPLICIT_LEVELS`).
LEVELS_KEPT = max(MAX_LEVELS, MAX_EXPLICIT_LEVELS) + 1
#: Columns per ``GROUPING(...)`` (PostgreSQL takes at most 31 arguments).
GROUPING_COLUMNS = 31


def grouping_sets_supported(engine: sa.Engine) -> bool:
    return engine.dialect.name == "postgresql"


def column_stats(engine: sa.Engine, source: SourceTable, columns: Sequence[str]) -> dict[str, ColumnStats]:
    """:class:`~lwec_tasks.io.columns.ColumnStats` of ``columns``: for text and boolean columns their distinct
    values (NULL not counted), non-NULL rows and, when :func:`grouped_levels` found them, their levels; for the
    others their smallest and largest value. On PostgreSQL with text or boolean columns among ``columns``, all of
    it from :func:`grouped_levels`' scans; otherwise one aggregate query."""
    table, kinds = source.table, source.kinds
    categorical = [name for name in columns if kinds.get(name) in CATEGORICAL_KINDS]
    numeric = [name for name in columns if name not in categorical]
    if not columns:
        return {}
    if categorical and grouping_sets_supported(engine):
        found = grouped_levels(engine, source, categorical, numeric)
        rows, totals = found.rows, found.totals
        stats = {}
        for name in columns:
            if name in found.levels:
                groups, listed = found.levels[name]
                non_null = int(totals[name])
                distinct = groups - (non_null < rows)  # the NULL group is no distinct value
                stats[name] = ColumnStats(distinct, non_null, distinct + (non_null < rows) <= 1, listed)
            else:
                low, high, non_null = totals[name]
                stats[name] = ColumnStats(None, int(non_null), low is None or low == high)
        return stats
    aggregates = [sa.func.count()]
    for name in columns:
        column = table.c[name]
        if name in categorical:
            aggregates += [sa.func.count(sa.distinct(column)), sa.func.count(column)]
        else:
            aggregates += [sa.func.min(column), sa.func.max(column), sa.func.count(column)]
    with database_errors(engine, f"count the values of table {source.name!r}"), engine.connect() as connection:
        values = list(connection.execute(sa.select(*aggregates).select_from(table)).one())
    rows, position, stats = int(values[0]), 1, {}
    for name in columns:
        if name in categorical:
            distinct, non_null = int(values[position]), int(values[position + 1])
            position += 2
            stats[name] = ColumnStats(distinct, non_null, distinct + (non_null < rows) <= 1)
        else:
            low, high, non_null = values[position], values[position + 1], int(values[position + 2])
            position += 3
            stats[name] = ColumnStats(None, non_null, low is None or low == high)
    return stats


@dataclass
class GroupedLevels:
    """What :func:`grouped_levels` found: ``rows`` of the table; ``levels``: categorical column → (groups,
    ((value, rows), ...) or None); ``totals``: categorical column → non-NULL rows, numeric column → (smallest,
    largest, non-NULL rows)."""

    rows: int = 0
    levels: dict = field(default_factory=dict)
    totals: dict = field(default_factory=dict)


def grouped_levels(engine: sa.Engine, source: SourceTable, columns: Sequence[str],
                   numeric: Sequence[str] = ()) -> GroupedLevels:
    """The levels of ``columns`` (text, boolean) by one scan of the table per :data:`GROUPING_COLUMNS` of them
    (PostgreSQL; :func:`_grouped_batch`): each column's groups (distinct values, a NULL counting as one) and, when
    there are at most :data:`LEVELS_KEPT`, its ((value, rows), ...) (NULL as None), else None (only the number of
    groups comes back); their non-NULL rows; and the smallest and largest value and non-NULL rows of the
    ``numeric`` columns (in the first scan)."""
    out = GroupedLevels()
    with database_errors(engine, f"count the levels of table {source.name!r}"), engine.connect() as connection:
        for start in range(0, len(columns), GROUPING_COLUMNS):
            batch = list(columns[start:start + GROUPING_COLUMNS])
            rows, levels, totals = _grouped_batch(connection, source.table, batch, numeric if start == 0 else ())
            out.rows = rows
            out.levels.update(levels)
            out.totals.update(totals)
    return out


def _grouped_batch(connection, table: sa.Table, names: list[str], numeric: Sequence[str] = ()):
    """(rows, levels, totals) of :func:`grouped_levels` for ``names`` (at most :data:`GROUPING_COLUMNS`): the rows
    per combination of their values (one hashed, parallel ``GROUP BY`` of the table, with each numeric column's
    smallest and largest value and non-NULL rows per combination), then each column's groups and the table's totals
    from those (``GROUPING SETS`` over the combinations, not the table's rows; the empty set is the whole table)."""
    k = len(names)
    aggregates = [sa.func.count().label("n"), *(sa.func.count(table.c[name]).label(f"c{j}")
                                                for j, name in enumerate(names))]
    for j, name in enumerate(numeric):
        column = table.c[name]
        aggregates += [sa.func.min(column).label(f"low{j}"), sa.func.max(column).label(f"high{j}"),
                       sa.func.count(column).label(f"set{j}")]
    joint = sa.select(*(table.c[name].label(f"v{j}") for j, name in enumerate(names)), *aggregates
                      ).select_from(table).group_by(*(sa.literal_column(str(j + 1)) for j in range(k))).subquery()
    cols = [joint.c[f"v{j}"] for j in range(k)]
    which = sa.func.grouping(*cols)
    summed = [sa.func.sum(joint.c.n).label("n"), *(sa.func.sum(joint.c[f"c{j}"]).label(f"c{j}") for j in range(k))]
    for j in range(len(numeric)):
        summed += [sa.func.min(joint.c[f"low{j}"]).label(f"low{j}"), sa.func.max(joint.c[f"high{j}"]).label(f"high{j}"),
                   sa.func.sum(joint.c[f"set{j}"]).label(f"set{j}")]
    grouped = sa.select(which.label("which"), *cols, *summed,
                        sa.func.count().over(partition_by=which).label("groups"),
                        sa.func.row_number().over(partition_by=which).label("position")
                        ).group_by(sa.func.grouping_sets(*cols, sa.tuple_())).subquery()
    statement = sa.select(grouped).where(sa.or_(grouped.c.groups <= LEVELS_KEPT, grouped.c.position == 1))
    everything = (1 << k) - 1  # GROUPING(c_0, ..., c_{k-1}) of the empty set: every bit set
    # ... and of the rows grouped by c_j alone: bit k − 1 − j clear
    set_of = {everything ^ (1 << (k - 1 - j)): j for j in range(k)}
    found: dict[int, tuple[int, list]] = {}
    rows, totals = 0, {}
    for row in connection.execute(statement):
        mapping = row._mapping
        if int(row.which) == everything:
            rows = int(mapping["n"] or 0)
            totals.update({name: int(mapping[f"c{j}"] or 0) for j, name in enumerate(names)})
            totals.update({name: (mapping[f"low{j}"], mapping[f"high{j}"], int(mapping[f"set{j}"] or 0))
                           for j, name in enumerate(numeric)})
            continue
        j = set_of[int(row.which)]
        groups, levels = found.setdefault(j, (int(row.groups), []))
        levels.append((mapping[f"v{j}"], int(mapping["n"])))
    if not totals:  # an empty table: no combinations, and the empty set's row may be missing too
        totals = {**dict.fromkeys(names, 0), **{name: (None, None, 0) for name in numeric}}
    levels_of = {}
    for j, name in enumerate(names):
        groups, levels = found.get(j, (0, []))
        levels_of[name] = (groups, tuple(levels) if groups <= LEVELS_KEPT else None)
    return rows, levels_of, totals


def level_counts(engine: sa.Engine, source: SourceTable, columns: Sequence[str],
                 stats: Mapping[str, ColumnStats] | None = None) -> Mapping[str, list[tuple]]:
    """Column → [(value, rows)] of each of ``columns`` (NULL as None): the levels ``stats`` holds
    (:func:`column_stats`), the others by one :func:`grouped_levels` scan (PostgreSQL) or one ``GROUP BY`` each."""
    known = {name: list(stats[name].levels) for name in columns
             if stats is not None and name in stats and stats[name].levels is not None}
    rest = [name for name in columns if name not in known]
    if rest and grouping_sets_supported(engine):
        levels = grouped_levels(engine, source, rest).levels
        known.update({name: list(levels[name][1]) for name in rest if levels[name][1] is not None})
        rest = [name for name in rest if name not in known]
    if rest:
        table = source.table
        with database_errors(engine, f"count the levels of table {source.name!r}"), engine.connect() as connection:
            for name in rest:
                column = table.c[name]
                rows = connection.execute(sa.select(column, sa.func.count()).select_from(table).group_by(column)).all()
                known[name] = [(value, int(count)) for value, count in rows]
    return {name: known[name] for name in columns}
