"""Stage: read the source table into partitions held by the executor, checked as one table.

The flow process runs the checks of :func:`lwec_tasks.preflight.plan_consensus_read` (or takes the plan the
command line made before Prefect started), plans id-range partitions, and from then on sees only per-partition
summaries: row counts, non-finite counts, column moments, an id example. A table without an id column is
read as one partition sorted by every column read; its ids are the row positions in that order.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.executors.progress import Progress
from lwec_tasks.io import check_label_table, id_key_type, mask_url
from lwec_tasks.io.duckdb_dialect import refuse_other_processes
from lwec_tasks.io.features import useless_columns_message
from lwec_tasks.io.label_store import LabelStore, open_label_store
from lwec_tasks.io.names import TableName
from lwec_tasks.preflight import plan_consensus_read
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.planning import absolute_sqlite_url, id_bounds, partition_count
from lwec_tasks.stages.sums import Moments, standard_scale

if TYPE_CHECKING:
    from sqlalchemy.types import TypeEngine

    from lwec_tasks.core.encoding import TableEncoding
    from lwec_tasks.executors import Executor, Handle
    from lwec_tasks.io.columns import ColumnPlan


@dataclass(frozen=True, eq=False, repr=False)
class PartitionedTable:
    """The source table as partitions in the executor's memory.

    Attributes
    ----------
    session : the executor
    plan : the columns read
    id_type : SQL type of the labels' id column (None: row positions)
    database_url : resolved
    specs : the P partitions' read specifications
    rows : handles of the P partitions' :class:`~lwec_tasks.stages.partitions.PartitionRows` (features as read,
        numeric gaps filled); emptied by :meth:`release_rows` once the last stage that reads them is done
    keys : handles of the P partitions' :class:`~lwec_tasks.stages.partitions.PartitionKeys`
    counts : (P,) int64 rows per partition
    n_read, n_dropped : rows read, rows dropped (non-finite features with ``drop_nonfinite``)
    mean, scale : (d,) the standardisation; default None (a table read to be labelled: the model's own)
    moments : the whole table's column moments (the cluster profiles' z-scores); default None
    encoding : the typed features' encoding with its fill values (the matrix columns are its ``encoded_names``);
        default None (base columns, or a table read to be labelled)
    imputed_counts : values imputed per source column (numeric gaps), logged and reported; default empty
    seconds : how long reading took; default None
    offsets : (P + 1,) int64 position of each partition's first row, then the row count (from ``counts``)
    """

    session: Executor
    plan: ColumnPlan
    id_type: TypeEngine | None
    database_url: str
    specs: list[part.PartitionSpec]
    rows: list[Handle]
    keys: list[Handle]
    counts: np.ndarray
    n_read: int
    n_dropped: int
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None
    moments: Moments | None = None
    encoding: TableEncoding | None = None
    imputed_counts: dict[str, int] = field(default_factory=dict)
    seconds: float | None = None

    def release_rows(self) -> None:
        """Free the partitions' rows (the features, or the base columns' labels): the table's one change after it
        is built.

        The rows are the run's largest data (about 10M × d floats at scale). Prefect may keep a task's return
        value, this table, referenced until the flow ends, so a copy of the table without the rows would leave
        them held; emptying the list the table owns drops the executor's last handles on them.
        """
        self.rows.clear()

    @property
    def holds_rows(self) -> bool:
        """Whether the partitions' rows are still held (not yet released)."""
        return bool(self.rows)

    @property
    def holds_features(self) -> bool:
        """Whether the partitions still hold standardisable features (not base columns' labels, not released)."""
        return self.mean is not None and self.holds_rows

    @cached_property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)

    @property
    def n_rows(self) -> int:
        """Rows kept (read, less those dropped)."""
        return int(self.counts.sum())

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The names of the matrix's columns: the feature columns, a text or boolean one as ``name=level``."""
        return tuple(self.encoding.encoded_names) if self.encoding is not None else tuple(self.plan.feature_columns)

    @property
    def n_partitions(self) -> int:
        return len(self.specs)


def load_table(session, request, log, store: LabelStore | None = None) -> PartitionedTable:
    """Check the table and the output table, plan the partitions, have the executor read them, through the run's
    labels ``store`` (default None: one opened for the read, on ``request``'s database and output table).

    Nothing is written. Raises :class:`LwecInputError` on bad input (missing columns, text in a feature
    column, a feature column without a finite value, non-finite values unless ``drop_nonfinite``,
    duplicate or missing ids, too few rows).
    """
    started = time.perf_counter()
    k_min = 2 if request.auto_k else request.n_clusters  # auto: the smallest k searched
    with nullcontext(store) if store is not None else \
            open_label_store(request.database_url, request.output_name) as store:
        planned = plan_consensus_read(store.engine, request)
        encoding = feature_encoding(planned.columns, planned.levels)
        table, summaries = read_partitions(session, store, request.source_name, planned, request.chunk_size,
                                           request.drop_nonfinite, log, encoding)
    plan = planned.columns
    names = list(encoding.encoded_names)
    _refuse_unusable(summaries, names, request.table, table.n_read)
    if table.n_rows < 2 * k_min:
        dropped = f" after dropping {table.n_dropped} rows with missing values" if table.n_dropped else ""
        raise LwecInputError(f"table {request.table!r} has only {table.n_rows} usable rows{dropped}, but "
                             f"n_clusters={k_min} needs at least 2·k = {2 * k_min} rows")
    d = len(names)
    if encoding.has_categories:  # each categorical column weighted by how much it goes with the rest
        relevance, nulls = _relevance(table, encoding)
        encoding = encoding.with_relevance(relevance, nulls=nulls)
        if not len(encoding.numeric_positions) and not encoding.weighted_categories:
            raise LwecInputError(_nothing_to_cluster_message(request.table, encoding, plan))
    rows, imputed_counts = table.rows, {}
    moments = sum((s.moments for s in summaries), Moments(0, np.zeros(d), np.zeros(d)))
    if any(s.column_moments is not None for s in summaries):
        rows, moments, imputed_counts = _impute(table, summaries, encoding)
    null_positions = encoding.imputed_null_positions
    if len(null_positions) and not request.drop_nonfinite:  # else the NULL rows were dropped
        rows = list(table.session.map(part.count_imputed_nulls, rows, name="imputed-nulls", positions=null_positions))
        imputed_counts.update({code.name: code.null_rows for code in encoding.columns if code.null_imputed})
    numeric = encoding.numeric_positions
    encoding = encoding.with_fill(dict(zip([c.name for c in encoding.columns if c.kind == "numeric"],
                                           moments.mean[numeric].tolist())))
    mean, scale = (moments.mean, standard_scale(moments)) if request.standardize else (np.zeros(d), np.ones(d))
    mean, scale = encoding.scales(mean[numeric], scale[numeric])
    _log_columns(log, request.table, plan, summaries, table.n_read, planned.key_candidates)
    _log_encoding(log, request.table, encoding, imputed_counts)
    seconds = time.perf_counter() - started
    table = dataclasses.replace(table, rows=rows, mean=mean, scale=scale, moments=moments, encoding=encoding,
                                imputed_counts=imputed_counts, seconds=seconds)
    log.info("Loaded %d rows × %d features from table %r of %s in %.2f s (%.0f rows/s; %d partition%s; id column: "
             "%s, ground truth: %s%s)", table.n_rows, d, request.table, mask_url(table.database_url), seconds,
             table.n_read / max(seconds, 1e-9), table.n_partitions, "s" if table.n_partitions != 1 else "",
             plan.id_column or "row position", plan.label_column or "none",
             f"; dropped {table.n_dropped} rows with non-finite features" if table.n_dropped else "")
    return table


def feature_encoding(plan, levels):
    """The run's :class:`~lwec_tasks.core.encoding.TableEncoding` of the plan's feature columns: numeric ones as
    they are, text and boolean ones one-hot over their ``levels`` ([(value, rows)] per column, the whole
    table's), weighted as :func:`~lwec_tasks.core.encoding.column_weight` says."""
    from lwec_tasks.core.encoding import TableEncoding, category_code, numeric_code

    kinds = plan.feature_kinds or ("float",) * len(plan.feature_columns)
    categorical = set(plan.categorical_features)
    return TableEncoding(tuple(category_code(name, kind, levels.get(name, ())) if name in categorical
                               else numeric_code(name, kind) for name, kind in zip(plan.feature_columns, kinds)))


def _relevance(table: PartitionedTable, encoding) -> tuple[dict[str, float], dict[str, float]]:
    """Each categorical column's :func:`~lwec_tasks.core.encoding.column_relevance` and, for those with NULLs, its
    NULL indicator's (:func:`~lwec_tasks.core.encoding.null_relevance`), from per-partition sums reduced in a fixed
    order (the same on either executor)."""
    from lwec_tasks.core.encoding import column_relevance, null_relevance
    from lwec_tasks.executors.progress import tree_reduce
    from lwec_tasks.stages.sums import add_tables

    session = table.session
    parts = session.map(part.association_partition, table.rows, name="association", encoding=encoding)
    sums = tree_reduce(session, parts, add_tables, "association-sum").result()
    return column_relevance(sums, encoding), null_relevance(sums, encoding)


def _nothing_to_cluster_message(table: str, encoding, plan) -> str:
    """Why a table whose feature columns are all text or boolean, and each goes with no other (its relevance at most
    the gate), gives nothing to cluster on; names the text columns holding numbers that were left out."""
    from lwec_tasks.core.encoding import DEFAULT_RELEVANCE_GATE
    from lwec_tasks.io.columns import NUMBERS_IN_TEXT

    measured = ", ".join(f"{code.name!r} {code.relevance or 0.0:.3f}" for code in encoding.columns)
    numbers = [name for name, reason in plan.left_out if reason.startswith(NUMBERS_IN_TEXT)]
    hint = (f"; text columns holding numbers were left out: {numbers} (name them in feature_columns to cluster on "
            "them as numbers)" if numbers else "; add numeric feature columns")
    return (f"table {table!r} gives nothing to cluster on: no feature column is numeric, and the text and boolean "
            f"ones go with no other column (relevance at most {DEFAULT_RELEVANCE_GATE}: {measured}){hint}")


def _impute(table: PartitionedTable, summaries, encoding) -> tuple[list[Handle], Moments, dict[str, int]]:
    """Fill every numeric gap (NULL, NaN, ±inf) with its column's mean over the whole table's finite values;
    returns (the filled partitions' rows, the table's column moments after filling (n = all rows; a filled value
    adds nothing to M2), the values filled per numeric column that had any)."""
    kept = [s for s in summaries if s.n_rows > 0]
    d = encoding.width
    columns = []
    for j in range(d):
        total = Moments(0, np.zeros(1), np.zeros(1))
        for s in kept:
            total = total + (s.column_moments[j] if s.column_moments is not None
                             else Moments(s.moments.n, s.moments.mean[j:j + 1], s.moments.m2[j:j + 1]))
        columns.append(total)
    mean = np.array([c.mean[0] for c in columns])
    m2 = np.array([c.m2[0] for c in columns])
    positions = encoding.numeric_positions
    rows = list(table.session.map(part.impute_partition, table.rows, name="impute", positions=positions,
                                  fill=mean[positions]))
    nan = np.sum([s.nan_counts for s in summaries], axis=0)
    inf = np.sum([s.inf_counts for s in summaries], axis=0)
    numeric = [c.name for c in encoding.columns if c.kind == "numeric"]
    imputed = {name: int(nan[j] + inf[j]) for name, j in zip(numeric, positions) if nan[j] + inf[j]}
    return rows, Moments(table.n_rows, mean, m2), imputed


def _log_encoding(log, table_name: str, encoding, imputed_counts: dict[str, int]) -> None:
    """How the text and boolean columns are encoded, and what was imputed or is a NULL level."""
    for code in encoding.columns:
        if code.kind == "category":
            nulls = code.null_rows
            if not nulls:
                said = ""
            elif code.null_imputed:
                said = (f"; {nulls} NULL value(s) missing at random (NULL relevance {code.null_relevance:.3f}): "
                        "unknown, as far from every level as a new value, and counted as imputed")
            else:
                said = f"; {nulls} NULL value(s) are a level of their own"
            log.info("Feature column %r of table %r: %s, %d levels one-hot (relevance %.3f, weight %.3f each)%s",
                     code.name, table_name, code.source_kind, len(code.levels), code.relevance or 0.0,
                     code.weight[0] if code.weight else 0.0, said)
    if imputed_counts:
        listed = ", ".join(f"{name!r}: {n}" for name, n in imputed_counts.items())
        log.info("Imputed missing values of table %r (numbers: each column's mean; text and boolean NULLs missing at "
                 "random: unknown) (%s); those rows' confidence is scaled down by the share of their features "
                 "imputed", table_name, listed)


def read_partitions(session, store: LabelStore, table_name: TableName, planned, chunk_size: int, drop_nonfinite: bool,
                    log, encoding=None, impute: bool = False) -> tuple[PartitionedTable, list]:
    """Plan id-range partitions of the checked table (``planned``, a :class:`~lwec_tasks.preflight.ReadPlan`) in
    the database of ``store`` (whose output table the labels go to) and have the executor read them (given the
    store's resolved URL); returns the table (without standardisation) and the summaries of its
    non-empty partitions. The labels' id type is settled here, before any computation."""
    plan = planned.columns
    n_partitions = partition_count(planned.n_rows, session.n_threads) if plan.id_column else 1
    bounds = [(None, None)]
    if n_partitions > 1:
        bounds = id_bounds(store.engine, planned.source, plan.id_column, planned.n_rows, planned.id_low,
                           planned.id_high, n_partitions)
    url = absolute_sqlite_url(store.database_url)
    refuse_other_processes(url, session.address)
    specs = [part.PartitionSpec(p, url, table_name, plan.id_column, plan.label_column, plan.feature_columns,
                                low, high, chunk_size, drop_nonfinite, source=planned.source,
                                base_columns=plan.base_columns,
                                encoding=encoding if encoding is not None and (encoding.has_categories or impute)
                                else None, impute=impute)
             for p, (low, high) in enumerate(bounds)]
    if session.address:
        log.info("Reading table %r of %s in %d partitions on %d Dask workers (%d threads) at %s", table_name,
                 mask_url(url), len(specs), session.n_workers, session.n_threads, session.address)
    rows = session.map(part.read_partition, specs, name="read")
    summaries = Progress(log, "read").wait_results(session.map(part.summarise, rows, name="summarise"),
                                                   rows_of=lambda summary: summary.n_read)
    n_read, n_dropped = sum(s.n_read for s in summaries), sum(s.n_dropped for s in summaries)
    kept = [p for p, s in enumerate(summaries) if s.n_rows > 0]
    id_type = None
    if plan.id_column and kept:
        # A column without a usable declared type (SQLite `create table t (id, ...)`) gets one inferred from
        # its values, and the labels table's ids must be of the same kind.
        id_type = id_key_type(np.concatenate([summaries[p].id_example for p in kept]), planned.id_type)
        if planned.source.kinds.get(plan.id_column) == "untyped":
            check_label_table(store.engine, planned.output_table, table_name, id_type=id_type, id_column=plan.id_column)
    counts = np.array([summaries[p].n_rows for p in kept], dtype=np.int64)
    kept_rows = [rows[p] for p in kept]
    table = PartitionedTable(
        session=session, plan=plan, id_type=id_type, database_url=url, specs=[specs[p] for p in kept],
        rows=kept_rows, keys=list(session.map(part.keys_of, kept_rows, name="keys")), counts=counts, n_read=n_read,
        n_dropped=n_dropped)
    return table, summaries


def _refuse_unusable(summaries, names, table: str, n_read: int) -> None:
    """The error for feature columns without a finite value, from the counts (other gaps are imputed, or their
    rows dropped with ``drop_nonfinite``)."""
    nan = np.sum([s.nan_counts for s in summaries], axis=0)
    inf = np.sum([s.inf_counts for s in summaries], axis=0)
    useless = [name for name, bad in zip(names, nan + inf) if bad == n_read]
    if useless:
        raise LwecInputError(useless_columns_message(table, names, useless))


def _log_columns(log, table: str, plan, summaries, n_read: int, key_candidates: Sequence[str] = ()) -> None:
    """Which columns are clustered on and why others are not; warnings for keys and labels among the features and
    for a table without an id column (naming ``key_candidates``, the columns that could be it)."""
    log.info("Table %r: %s", table, plan.describe())
    distinct = set(plan.feature_columns)
    for s in summaries:
        distinct &= set(s.distinct_integer_columns)
    for name in plan.feature_columns:
        why = [w for w, hit in (("named like a key", name in plan.key_like_features),
                                (f"an integer with a distinct value in each of the {n_read} rows",
                                 name in distinct and n_read > 1)) if hit]
        if why:
            log.warning("Feature column %r of table %r looks like a key (%s), not a measurement: clustering on it "
                        "groups rows by their key; leave it out (feature_columns=%r) or pass id_column=%r", name, table,
                        " and ".join(why), [c for c in plan.feature_columns if c != name] or None, name)
    if plan.label_like_features:
        log.warning("Feature column(s) %s of table %r are named like a ground truth or target; if they hold labels, "
                    "pass label_column=%r (CLI: --label-column) so they are used for NMI/ARI, not clustered on",
                    plan.label_like_features, table, plan.label_like_features[0])
    if not plan.id_column:
        could_be = (f" ({', '.join(map(repr, key_candidates))} named like a key, with a distinct value in every "
                    f"row: id_column={key_candidates[0]!r}, CLI --id-column {key_candidates[0]})"
                    if key_candidates else "")
        log.warning("Table %r has no id column (no single-column primary key, no column named 'id'): ids in the "
                    "labels table are row positions after sorting the rows by %s; pass id_column to key them by a "
                    "column%s", table, ", ".join(plan.columns_to_read), could_be)
