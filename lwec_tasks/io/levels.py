"""What the column plan and the encoding need to know about a table's values, asked of the database once.

:func:`column_stats`: one aggregate query — distinct values of text and boolean columns, whether each numeric
column is constant (its smallest and largest value agree). :func:`level_counts`: each categorical column's
levels and their rows, one ``GROUP BY`` per column, so the levels are the whole table's whichever executor
reads the partitions. SQLAlchemy only (no pandas), so the preflight checks can use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from lwec_tasks.io.catalog import SourceTable
from lwec_tasks.io.columns import CATEGORICAL_KINDS, ColumnStats
from lwec_tasks.io.errors import database_errors


def column_stats(engine: sa.Engine, source: SourceTable, columns: Sequence[str]) -> dict[str, ColumnStats]:
    """:class:`~lwec_tasks.io.columns.ColumnStats` of ``columns`` in one aggregate query: for text and boolean
    columns their distinct values and non-NULL rows, for the others their smallest and largest value."""
    table, kinds = source.table, source.kinds
    aggregates, plan = [sa.func.count()], []
    for name in columns:
        column = table.c[name]
        if kinds.get(name) in CATEGORICAL_KINDS:
            aggregates += [sa.func.count(sa.distinct(column)), sa.func.count(column)]
            plan.append((name, "category"))
        else:
            aggregates += [sa.func.min(column), sa.func.max(column), sa.func.count(column)]
            plan.append((name, "numeric"))
    if not plan:
        return {}
    with database_errors(engine, f"count the values of table {source.name!r}"), engine.connect() as connection:
        values = list(connection.execute(sa.select(*aggregates).select_from(table)).one())
    rows, position, stats = int(values[0]), 1, {}
    for name, kind in plan:
        if kind == "category":
            distinct, non_null = int(values[position]), int(values[position + 1])
            position += 2
            stats[name] = ColumnStats(distinct, non_null, distinct + (non_null < rows) <= 1)
        else:
            low, high, non_null = values[position], values[position + 1], int(values[position + 2])
            position += 3
            stats[name] = ColumnStats(None, non_null, low is None or low == high)
    return stats


def level_counts(engine: sa.Engine, source: SourceTable, columns: Sequence[str]) -> Mapping[str, list[tuple]]:
    """Column → [(value, rows)] of each of ``columns`` (NULL as None), by one ``GROUP BY`` each."""
    table, out = source.table, {}
    with database_errors(engine, f"count the levels of table {source.name!r}"), engine.connect() as connection:
        for name in columns:
            column = table.c[name]
            rows = connection.execute(sa.select(column, sa.func.count()).select_from(table).group_by(column)).all()
            out[name] = [(value, int(count)) for value, count in rows]
    return out
