"""Checks that a run can start, made before anything runs: no Prefect, no MLflow, no full read.

:func:`check_consensus_request` and :func:`check_assign_request` connect once,
through a labels store of their own opened as a run opens its
(:func:`~lwec_tasks.io.label_store.open_label_store`), and check, in this
order, that the database answers, the table exists, its columns plan is valid
(feature, id and label columns; no feature column NULL in every row), the
table has enough rows, and the output table can take the
labels (a table, not a view; the labels-table columns; ids of the same kind).
The command line's check looks only at as many rows as show that the values
are there (milliseconds on a table that passes); when they do not show it, or
for the load task, which needs the counts to plan its read, one aggregate query
counts them (a pass over the table on the server: counts, not rows). They raise
:class:`~lwec_tasks.core.errors.LwecInputError` (bad input; its subclass
:class:`~lwec_tasks.io.errors.DatabaseRefusedError` when the database refused,
e.g. permission denied) or :class:`~lwec_tasks.io.errors.DatabaseUnreachableError`.

The load tasks run the same checks (:func:`plan_consensus_read`,
:func:`plan_assign_read`) on their own connection, then read the rows; what
only the values can show (NaN and infinities, duplicate ids, text in a
feature column) is checked there.

Light imports only (SQLAlchemy and the light :mod:`lwec_tasks.io` modules), so
the command line can call these before Prefect's temporary server starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sqlalchemy as sa

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.validation import check_non_empty_text
from lwec_tasks.io.catalog import (
    NOT_CHECKED,
    SourceTable,
    check_label_table,
    count_values,
    describe_source,
    text_holding_numbers,
    values_seen_early,
)
from lwec_tasks.io.columns import (
    ColumnPlan,
    high_cardinality,
    looks_like_key,
    plan_columns,
    require_columns,
    resolve_id_column,
)
from lwec_tasks.io.connection import URL_RESOLVERS, is_reference
from lwec_tasks.io.identifiers import check_new_table_name, default_output_table
from lwec_tasks.io.label_store import open_label_store
from lwec_tasks.io.levels import column_stats, level_counts
from lwec_tasks.io.names import TableName, table_name

if TYPE_CHECKING:
    from lwec_tasks.request import ConsensusRequest


@dataclass(frozen=True)
class ReadPlan:
    """What a load reads, settled by the checks.

    Attributes
    ----------
    source : the reflected source table
    columns : the column roles; ``columns.feature_columns`` is empty for an
        assign check made without the model's feature columns
    n_rows : rows of the table when it was checked
    output_table : the labels table
    id_low, id_high : the smallest and largest id then (None without an id column)
    """

    source: SourceTable
    columns: ColumnPlan
    n_rows: int
    output_table: TableName
    id_low: object = None
    id_high: object = None
    #: categorical feature column → [(level, rows)] over the whole table (:func:`lwec_tasks.io.levels.level_counts`)
    levels: Mapping[str, list] = field(default_factory=dict)
    #: without an id column, the text columns that could be it (:func:`key_candidates`)
    key_candidates: tuple[str, ...] = ()

    @property
    def id_type(self) -> sa.types.TypeEngine | None:
        """The declared type of the id column (None: row positions)."""
        return None if self.columns.id_column is None else self.source.table.c[self.columns.id_column].type


def check_consensus_request(request: ConsensusRequest) -> None:
    """Check that the consensus run ``request`` can start; see the module docstring for what is checked.

    A ``database_url`` that names a Prefect block or secret (``block:NAME``,
    ``secret:NAME``) cannot be resolved without Prefect: then nothing is checked here.
    """
    if not _resolvable(request.database_url):
        return
    with open_label_store(request.database_url, request.output_name) as store:
        if not _passes_without_counting(store.engine, request):
            plan_consensus_read(store.engine, request)


def _passes_without_counting(engine: sa.Engine, request: ConsensusRequest) -> bool:
    """The checks of :func:`plan_consensus_read` with :func:`values_seen_early` for the counts: True when the
    request passes them all. False when the first rows leave something open; the full checks then settle it
    (with their exact errors). The load task counts anyway, so a run that starts pays for one count, not two.
    """
    if request.base_columns is not None:
        return False
    source = describe_source(engine, request.source_name)
    columns = _plan_consensus_columns(source, request)
    if not values_seen_early(engine, source, columns.feature_columns, columns.id_column,
                             needed_rows=2 * _smallest_k(request)):
        return False
    check_label_table(engine, request.output_name, request.source_name,
                      id_type=_id_type(source, columns.id_column), id_column=columns.id_column)
    return True


def check_assign_request(
    database_url: str,
    table: str,
    model_uri: str | None = None,
    feature_columns: Sequence[str] | None = None,
    id_column: str | None = None,
    output_table: str | None = None,
) -> None:
    """Check that ``lwec assign`` / ``assign_flow`` with these parameters can start.

    The parameters are ``assign_flow``'s. ``model_uri`` is only checked to be a
    non-empty string (the model is looked up in MLflow later); without
    ``feature_columns`` the features are not checked (they are the model's). Rows with NULL features pass: a
    model with typed columns fills them in, and the flow, which has loaded the model, refuses them for one
    that cannot (before anything is written).
    """
    check_non_empty_text("database_url", database_url)
    check_non_empty_text("table", table)
    if model_uri is not None:
        check_non_empty_text("model_uri", model_uri)
    output = None if output_table is None else check_new_table_name(output_table)  # fits, before connecting
    if not _resolvable(database_url):
        return
    source = table_name("table", table)
    output = output or default_output_table(source)
    with open_label_store(database_url, output) as store:
        plan_assign_read(store.engine, source, feature_columns, id_column, output, allow_missing=True)


def _resolvable(database_url: str) -> bool:
    """Whether ``database_url`` is a URL, or a reference resolved without Prefect (``env:``, or a prefix with a
    registered resolver)."""
    prefix = database_url.partition(":")[0]
    return not is_reference(database_url) or prefix == "env" or prefix in URL_RESOLVERS


def plan_consensus_read(engine: sa.Engine, request: ConsensusRequest) -> ReadPlan:
    """The checks of :func:`check_consensus_request` on ``engine``; the resulting :class:`ReadPlan`."""
    source = describe_source(engine, request.source_name)
    if request.base_columns is not None:
        return _plan_base_columns_read(engine, request, source)
    columns = _plan_consensus_columns(source, request)
    counted = [*columns.feature_columns, *([columns.id_column] if columns.id_column else [])]
    bounds_of = _bounded_id(source, columns.id_column)
    candidates = None
    if request.feature_columns is None:
        # every candidate's stats, with its non-NULL rows, which count_values then need not count again
        candidates = column_stats(engine, source, columns.feature_columns)
    counts = count_values(engine, source, counted, any_null_of=columns.feature_columns, bounds_of=bounds_of,
                          known_non_null={name: s.non_null for name, s in (candidates or {}).items()})
    _check_not_empty(request.table, counts.rows)
    all_null = [name for name in columns.feature_columns if counts.non_null[name] == 0]
    stats = None
    if candidates is not None:
        stats = {name: candidates[name] for name in columns.feature_columns if name not in all_null}
        wide_text = [name for name, found in stats.items()
                     if source.kinds.get(name) == "text" and high_cardinality(found)]
        for name in text_holding_numbers(engine, source, wide_text) if wide_text else ():
            stats[name] = dataclasses.replace(stats[name], holds_numbers=True)
    elif columns.categorical_features:
        stats = column_stats(engine, source, [n for n in columns.categorical_features if source.kinds.get(n) == "text"])
    if all_null or stats:
        replanned = _plan_consensus_columns(source, request, all_null, stats)
        if replanned.feature_columns != columns.feature_columns:
            counted = [*replanned.feature_columns, *([replanned.id_column] if replanned.id_column else [])]
            counts = count_values(engine, source, counted, any_null_of=replanned.feature_columns, bounds_of=bounds_of)
        columns = replanned
    _check_ids(columns, counts)
    k = _smallest_k(request)
    usable = counts.rows - counts.rows_with_null if request.drop_nonfinite else counts.rows
    if usable < 2 * k:
        nulls = f" ({counts.rows_with_null} of its {counts.rows} rows have NULL features)" if counts.rows_with_null \
            else ""
        raise LwecInputError(f"table {request.table!r} has only {usable} usable rows{nulls}, but n_clusters={k} "
                             f"needs at least 2·k = {2 * k} rows")
    output = request.output_name
    check_label_table(engine, output, request.source_name, id_type=_id_type(source, columns.id_column),
                      id_column=columns.id_column)
    levels = level_counts(engine, source, columns.categorical_features, stats) if columns.categorical_features else {}
    keys = key_candidates(candidates, counts.rows) if columns.id_column is None else ()
    return ReadPlan(source, columns, counts.rows, output, counts.low, counts.high, levels, keys)


def key_candidates(stats: Mapping | None, n_rows: int) -> tuple[str, ...]:
    """The columns among ``stats`` (column → :class:`~lwec_tasks.io.columns.ColumnStats`, the default features'
    candidates) named like a key (``customer_id``, ``order_key``, ...) with a distinct value in each of the table's
    ``n_rows`` rows: what ``id_column`` could be for a table without a primary key or an ``id`` column."""
    return tuple(name for name, found in (stats or {}).items()
                 if looks_like_key(name) and found.non_null == n_rows and found.distinct == n_rows)


def _plan_consensus_columns(source: SourceTable, request: ConsensusRequest, all_null: Sequence[str] = (),
                            stats=None) -> ColumnPlan:
    """The feature, id and label columns of ``request`` on ``source``, leaving out the ``all_null`` columns
    (and, with ``stats``, constant and high-cardinality text columns) when the features are chosen
    automatically."""
    return plan_columns(source.columns, source.numeric_columns, source.primary_key,
                        feature_columns=request.feature_columns, id_column=request.id_column,
                        label_column=request.label_column, table=request.table, kinds=source.kinds,
                        all_null=all_null, stats=stats)


def _smallest_k(request: ConsensusRequest) -> int:
    """The k whose 2·k rows a run needs at least: ``n_clusters``, or 2 (the smallest searched) with auto k."""
    return 2 if request.auto_k else request.n_clusters


def _plan_base_columns_read(engine: sa.Engine, request: ConsensusRequest, source: SourceTable) -> ReadPlan:
    """:func:`plan_consensus_read` for ``request.base_columns``: the label columns exist, take no other role,
    and (unless ``missing_labels="own_cluster"``) hold no NULL."""
    table, base = request.table, list(request.base_columns)
    id_column = resolve_id_column(source.columns, source.primary_key, request.id_column, table)
    require_columns(source.columns, base, "base_columns", table)
    if request.label_column is not None:
        require_columns(source.columns, [request.label_column], "label_column", table)
    duplicated = sorted({name for name in base if base.count(name) > 1})
    clashing = [name for name in base if name in (id_column, request.label_column)]
    if duplicated or clashing:
        raise LwecInputError(f"base_columns lists {duplicated} more than once" if duplicated
                             else f"base_columns {clashing} are also the id or label column")
    counts = count_values(engine, source, [*base, *([id_column] if id_column else [])],
                          bounds_of=_bounded_id(source, id_column))
    _check_not_empty(table, counts.rows)
    columns = ColumnPlan((), id_column, request.label_column, base_columns=tuple(base))
    _check_ids(columns, counts)
    nulls = {name: counts.rows - counts.non_null[name] for name in base if counts.non_null[name] < counts.rows}
    if nulls and request.missing_labels == "error":
        raise LwecInputError(missing_labels_message(table, nulls))
    k = _smallest_k(request)
    if counts.rows < 2 * k:
        raise LwecInputError(f"table {table!r} has only {counts.rows} rows, but n_clusters={k} needs at least "
                             f"2·k = {2 * k} rows")
    output = request.output_name
    check_label_table(engine, output, request.source_name, id_type=_id_type(source, id_column), id_column=id_column)
    return ReadPlan(source, columns, counts.rows, output, counts.low, counts.high)


def missing_labels_message(table: str, nulls: dict[str, int]) -> str:
    """The error for missing labels in base columns: ``nulls`` maps each such column to its count."""
    listed = ", ".join(f"{name!r} has {n} NULL label(s)" for name, n in nulls.items())
    return (f"base column(s) of table {table!r} with missing labels: {listed}; fill them, or pass "
            f"missing_labels='own_cluster' (CLI: --missing-labels own_cluster) to give each its own cluster")


def plan_assign_read(engine: sa.Engine, source_table: TableName, feature_columns: Sequence[str] | None,
                     id_column: str | None, output: TableName, base_columns: bool = False,
                     allow_missing: bool = False) -> ReadPlan:
    """The checks of :func:`check_assign_request` on ``engine`` for the rows of ``source_table`` and their labels
    table ``output``; the resulting :class:`ReadPlan`.

    Rows with a NULL feature are refused (the model cannot place them) unless ``allow_missing`` (a model with
    typed columns fills them in). With ``base_columns`` the
    ``feature_columns`` are a label model's base columns, read as labels (NULLs allowed: the model places
    such rows by their other columns).
    """
    table = str(source_table)
    source = describe_source(engine, source_table)
    if base_columns:
        require_columns(source.columns, list(feature_columns), "base_columns", table)
        id_column = resolve_id_column(source.columns, source.primary_key, id_column, table)
        columns = ColumnPlan((), id_column, None, base_columns=tuple(feature_columns))
    elif feature_columns is None:
        id_column = resolve_id_column(source.columns, source.primary_key, id_column, table)
        columns = ColumnPlan((), id_column, None)
    else:
        columns = plan_columns(source.columns, source.numeric_columns, source.primary_key,
                               feature_columns=list(feature_columns), id_column=id_column, table=table,
                               kinds=source.kinds)
    counted = [*columns.feature_columns, *([columns.id_column] if columns.id_column else [])]
    counts = count_values(engine, source, counted, any_null_of=columns.feature_columns,
                          bounds_of=_bounded_id(source, columns.id_column))
    _check_not_empty(table, counts.rows, " (no rows to label)")
    _check_ids(columns, counts)
    if counts.rows_with_null and not allow_missing:
        raise LwecInputError(
            f"{counts.rows_with_null} row(s) of table {table!r} have missing or non-finite values in the feature "
            f"columns {list(columns.feature_columns)}; such rows cannot be labelled — clean them first"
        )
    check_label_table(engine, output, source_table, id_type=_id_type(source, columns.id_column),
                      id_column=columns.id_column)
    return ReadPlan(source, columns, counts.rows, output, counts.low, counts.high)


def _id_type(source: SourceTable, id_column: str | None):
    """The id column's declared type for the output check; None for row positions."""
    if id_column is None:
        return None
    return source.table.c[id_column].type if source.kinds.get(id_column) != "untyped" else NOT_CHECKED


def _bounded_id(source: SourceTable, id_column: str | None) -> str | None:
    """The id column when its smallest and largest value can plan id-range partitions (integers, or SQLite
    columns without a declared type, whose min/max any values have); else None."""
    if id_column is None:
        return None
    integer = isinstance(source.table.c[id_column].type, sa.Integer)
    return id_column if integer or source.kinds.get(id_column) == "untyped" else None


def _check_not_empty(table: str, rows: int, why: str = "") -> None:
    if rows == 0:
        raise LwecInputError(f"table {table!r} is empty{why}")


def _check_ids(columns: ColumnPlan, counts) -> None:
    if columns.id_column is not None and counts.non_null[columns.id_column] < counts.rows:
        raise LwecInputError(
            f"id column {columns.id_column!r} has {counts.rows - counts.non_null[columns.id_column]} missing values"
        )
