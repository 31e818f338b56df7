"""What the Dask workers run: one partition of the table at a time.

A partition is the rows whose id lies in a half-open range. A worker reads it itself (its own engine,
:func:`partition_engine`; statements compiled by SQLAlchemy) and keeps it in memory while the flow asks for
small summaries of it: column moments, a sample, contingency tables, graph blocks, microcluster tables.
Labels are written to a staging table by the workers too; nothing per-row ever passes through the flow
process.

Every function is a plain function of numpy arrays and small values, imported by reference on the
workers, so workers need the ``lwec`` package (and the database driver), not the flow's code.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa

from lwec_tasks.core.label_placement import canonical_labels
from lwec_tasks.core.thread_pools import single_threaded
from lwec_tasks.io.catalog import SourceTable, describe_source
from lwec_tasks.io.columns import unique_integer_columns
from lwec_tasks.io.connection import opened_engine
from lwec_tasks.io.features import feature_matrix, id_values, numeric_column
from lwec_tasks.io.names import TableName
from lwec_tasks.io.source import read_rows
from lwec_tasks.io.staging import Columns, append_to
from lwec_tasks.stages.base_clusterings import assign_base_labels
from lwec_tasks.stages.planning import EarlierRun
from lwec_tasks.stages.sums import Moments


@dataclass(frozen=True)
class PartitionSpec:
    """Where a worker finds its rows: the ids in [low, high) of ``table`` (an open end is None).

    ``database_url`` is resolved (no ``env:``/``block:`` reference) and never shown in a repr, since it may
    hold a password.
    """

    index: int
    database_url: str = field(repr=False)
    table: TableName
    id_column: str | None
    label_column: str | None
    feature_columns: tuple[str, ...]
    low: Any
    high: Any
    chunk_size: int
    drop_nonfinite: bool
    #: the table as the flow reflected it (saves each partition a reflection round trip); None: reflect here
    source: Any = field(default=None, repr=False, compare=False)
    #: label columns read as base clusterings (``PartitionRows.base_labels``)
    base_columns: tuple[str, ...] = ()
    #: the typed features' :class:`~lwec_tasks.core.encoding.TableEncoding` (text and boolean columns one-hot);
    #: None: every feature numeric. ``impute``: numeric gaps filled with its fill values as read (labelling new
    #: rows); otherwise they stay NaN until the flow knows the table's means (:func:`impute_partition`)
    encoding: Any = field(default=None, repr=False, compare=False)
    impute: bool = False


@dataclass
class PartitionRows:
    """A partition as read: ids (n,), ground truth (n,) or None, raw features X (n, d) float64.

    Rows are in id order. With ``drop_nonfinite`` the rows with a missing/NaN/inf feature are gone and
    counted in ``n_dropped``; without it they stay, and the flow refuses the table from the summary.
    """

    ids: np.ndarray
    truth: np.ndarray | None
    X: np.ndarray
    n_read: int
    n_dropped: int
    n_nonfinite: int
    nan_counts: np.ndarray
    inf_counts: np.ndarray
    distinct_integer_columns: tuple[str, ...] = ()
    #: per base column (``spec.base_columns``) the rows' canonical labels, (n,) object each
    base_labels: tuple[np.ndarray, ...] = ()
    #: (n,) int32 values of each row imputed (numeric gaps) or unseen (categories), None: none
    imputed: np.ndarray | None = None
    #: the number of typed feature columns (the share imputed is ``imputed / n_sources``)
    n_sources: int = 0
    #: (n, q) bool which values of the q numeric source columns were imputed, None: none (or not yet filled)
    gaps: np.ndarray | None = None


@dataclass(frozen=True)
class PartitionKeys:
    """What the write-back and the scores need of a partition: ids (n,) and ground truth (n,) or None."""

    ids: np.ndarray
    truth: np.ndarray | None


@dataclass(frozen=True)
class PartitionSummary:
    """Small facts about a read partition, gathered by the flow."""

    n_rows: int
    n_read: int
    n_dropped: int
    n_nonfinite: int
    nan_counts: np.ndarray
    inf_counts: np.ndarray
    moments: Moments
    id_example: np.ndarray
    distinct_integer_columns: tuple[str, ...]
    #: per column the moments of its finite values (n differing by column), None when every value is finite
    column_moments: tuple[Moments, ...] | None = None


def partition_engine(database_url: str):
    """The engine of one partition's task (on a Dask worker or a thread), for the block and disposed of when it
    ends: :func:`~lwec_tasks.io.connection.opened_engine` on the resolved ``database_url``, shared (a SQLite file
    gets a long lock wait, as partitions write to it in turn)."""
    return opened_engine(database_url, shared=True)


def id_range(table: sa.TableClause, id_column: str, low, high) -> list:
    """WHERE clauses selecting ids in [low, high); None leaves that end open."""
    clauses = []
    if low is not None:
        clauses.append(table.c[id_column] >= low)
    if high is not None:
        clauses.append(table.c[id_column] < high)
    return clauses


def read_partition(spec: PartitionSpec) -> PartitionRows:
    """Read the partition's rows (in id order; without an id column, sorted by every column read, the ids
    being row positions) by the database's fast path, and check them."""
    columns = [*([spec.id_column] if spec.id_column else []), *([spec.label_column] if spec.label_column else []),
               *spec.feature_columns, *spec.base_columns]
    with partition_engine(spec.database_url) as engine:
        source = spec.source if spec.source is not None else describe_source(engine, spec.table)
        where = id_range(source.table, spec.id_column, spec.low, spec.high) if spec.id_column else []
        frame = read_rows(engine, source, columns, order_by=spec.id_column or columns, chunk_size=spec.chunk_size,
                          exact_columns=[spec.id_column] if spec.id_column else [], where=where)
    encoding, missing, imputed, gaps = spec.encoding, None, None, None
    if encoding is not None:
        X, unseen, missing = encoding.transform(frame, impute=False, numeric=numeric_column)
        if spec.impute:
            gaps, filled = encoding.fill_gaps(X)
            unseen = unseen + filled
        imputed = unseen if unseen.any() else None
    else:
        X = feature_matrix(frame, spec.feature_columns)
    if spec.id_column is None:
        ids = np.arange(len(frame), dtype=np.int64)
    else:
        ids = id_values(frame[spec.id_column], spec.id_column) if len(frame) else np.empty(0, dtype=np.int64)
    truth = frame[spec.label_column].to_numpy() if spec.label_column else None
    distinct = tuple(unique_integer_columns(frame, spec.feature_columns))
    base_labels = tuple(canonical_labels(frame[name].to_numpy()) for name in spec.base_columns)
    del frame
    n_read = len(X)
    finite = finite_rows(X)
    if finite is None:
        nan_counts = inf_counts = np.zeros(X.shape[1], dtype=np.int64)
    else:
        nan_counts, inf_counts = np.isnan(X).sum(axis=0), np.isinf(X).sum(axis=0)
    complete = finite if missing is None or not missing.any() else ~missing
    n_nonfinite = 0 if complete is None else int(n_read - complete.sum())
    if complete is not None and spec.drop_nonfinite:
        X, ids = X[complete], ids[complete]
        truth = truth[complete] if truth is not None else None
        imputed = imputed[complete] if imputed is not None else None
        gaps = None
    return PartitionRows(ids, truth, X, n_read, n_read - len(X), n_nonfinite, nan_counts, inf_counts, distinct,
                         base_labels, imputed, len(spec.feature_columns), gaps)


def finite_rows(X: np.ndarray) -> np.ndarray | None:
    """(n,) bool, whether each row of the row-major float64 X (n, d) is finite throughout; None when all are.

    A NaN or ±inf makes the sum of all values NaN or ±inf, so a finite sum (one pass, no temporary) shows
    that every value is finite; only otherwise (a non-finite value, or finite ones whose sum overflows) are
    the rows checked one by one.
    """
    if np.isfinite(X.sum()):
        return None
    finite = np.isfinite(X).all(axis=1)
    return None if finite.all() else finite


def summarise(rows: PartitionRows) -> PartitionSummary:
    """Counts, non-finite values per column, column moments (finite rows) and an id example for the key type."""
    # Rows with a non-finite value were dropped or are refused; only in the latter case are there any to skip. A row
    # counted for a categorical NULL alone (a level of its own, finite in X) is no such row: with no NaN or inf in X
    # (its counts), every row is kept, without the filtering copy.
    all_finite = not (np.any(rows.nan_counts) or np.any(rows.inf_counts))
    finite = rows.X if rows.n_nonfinite == rows.n_dropped or all_finite else rows.X[np.isfinite(rows.X).all(axis=1)]
    ids = rows.ids
    if ids.dtype == object and len(ids):
        example = ids[[int(np.argmax([len(v) if isinstance(v, (str, bytes)) else 0 for v in ids]))]]
    else:
        example = ids[:1]
    columns = None
    if int(np.sum(rows.nan_counts) + np.sum(rows.inf_counts)) and rows.n_dropped == 0:
        columns = tuple(Moments.of(values[np.isfinite(values)][:, None]) for values in rows.X.T)
    return PartitionSummary(len(rows.ids), rows.n_read, rows.n_dropped, rows.n_nonfinite, rows.nan_counts,
                            rows.inf_counts, Moments.of(finite), example, rows.distinct_integer_columns, columns)


def association_partition(rows: PartitionRows, encoding) -> list[np.ndarray]:
    """The partition's :func:`~lwec_tasks.core.encoding.association_sums` (before its gaps are filled), with BLAS
    on one thread: partitions run side by side, and OpenBLAS's threads on cores the other partitions use spin
    against them (a (n, c) cross-product took 15 s rather than 0.2 s on 2 shared cores)."""
    from lwec_tasks.core.encoding import association_sums

    with single_threaded():
        return association_sums(rows.X, encoding)


def impute_partition(rows: PartitionRows, positions: np.ndarray, fill: np.ndarray) -> PartitionRows:
    """The partition with the non-finite values of its numeric matrix columns ``positions`` replaced by ``fill``
    (the whole table's means of their finite values), each row's count of imputed values and which values were
    filled (``gaps``)."""
    from dataclasses import replace

    from lwec_tasks.core.encoding import fill_numeric

    X = rows.X.copy()
    gaps, filled = fill_numeric(X, positions, fill)
    imputed = filled if rows.imputed is None else rows.imputed + filled
    return replace(rows, X=X, imputed=imputed, gaps=gaps)


def count_imputed_nulls(rows: PartitionRows, positions: np.ndarray) -> PartitionRows:
    """The partition with each row's count of imputed values raised by its NULLs missing at random: the rows with
    a 1 in the NULL-level indicator columns ``positions`` (the encoding's ``imputed_null_positions``)."""
    from dataclasses import replace

    nulls = np.count_nonzero(rows.X[:, positions] > 0, axis=1).astype(np.int32)
    return replace(rows, imputed=nulls if rows.imputed is None else rows.imputed + nulls)


def bayes_sums_partition(rows: PartitionRows, labels: np.ndarray, k: int, layout):
    """The partition's :class:`~lwec_tasks.core.naive_bayes.BayesSums` for its (n,) ``labels`` in 0..k−1."""
    from lwec_tasks.core.naive_bayes import bayes_sums

    with single_threaded():
        return bayes_sums(rows.X, rows.gaps, labels, k, layout)


def bayes_step_partition(rows: PartitionRows, labels: np.ndarray, model) -> tuple[np.ndarray, object, int]:
    """One naive-Bayes step on the partition: (its rows' new (n,) int64 labels under ``model``, their
    :class:`~lwec_tasks.core.naive_bayes.BayesSums` (the next step's), how many labels changed from ``labels``)."""
    with single_threaded():
        moved, sums = model.step(rows.X, rows.gaps)
    return moved, sums, int(np.count_nonzero(moved != np.asarray(labels)))


def feature_rows(rows: PartitionRows, positions: np.ndarray) -> np.ndarray:
    """The raw (numeric gaps filled) feature rows at local ``positions``, (len(positions), width)."""
    return rows.X[positions]


def gap_rows(rows: PartitionRows, positions: np.ndarray, q: int) -> np.ndarray:
    """Which numeric values of the rows at local ``positions`` were imputed, (len(positions), q) bool."""
    return rows.gaps[positions] if rows.gaps is not None else np.zeros((len(positions), q), dtype=bool)


def keys_of(rows: PartitionRows) -> PartitionKeys:
    return PartitionKeys(rows.ids, rows.truth)


def standardised_rows(rows: PartitionRows, positions: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Rows at local ``positions``, standardised: (X − mean) / scale (a StandardScaler's arithmetic)."""
    X = rows.X[positions] - mean
    X /= scale
    return X


def assign_partition(rows: PartitionRows, mean: np.ndarray, scale: np.ndarray, models: list) -> np.ndarray:
    """(M, n) int32 raw labels: each standardised row's nearest centre in every base model."""
    return assign_base_labels(standardised_rows(rows, slice(None), mean, scale), models)


def column_sizes(codes_t: np.ndarray, ks: np.ndarray) -> list[np.ndarray]:
    """Rows per label in each column, (k_m,) each."""
    return [np.bincount(codes_t[m], minlength=int(k)) for m, k in enumerate(ks)]


def compact_codes(codes_t: np.ndarray, lookups: list[np.ndarray]) -> np.ndarray:
    """Renumber each column's labels to 0..n_m − 1 (drops labels no row has) with per-column lookups."""
    return np.stack([lookup[codes_t[m]] for m, lookup in enumerate(lookups)]).astype(np.int32)


def lookup(index: np.ndarray, values: np.ndarray) -> np.ndarray:
    return values[index]


def split_counts(index: np.ndarray, split: np.ndarray) -> np.ndarray:
    """How many of the partition's rows fall in each of the ``split`` microclusters."""
    return np.array([np.count_nonzero(index == j) for j in split], dtype=np.int64)


def lwea_raw_ids(index: np.ndarray, leaf_cluster: np.ndarray, split: np.ndarray, kept: np.ndarray,
                 before: np.ndarray, offset: int, singleton_base: int) -> np.ndarray:
    """Cluster id of each row after the cut, before renumbering.

    A row gets its microcluster's cluster; in a microcluster the cut splits (``split``, with ``kept`` of
    its objects staying together and ``before`` of its rows in earlier partitions), rows past the first
    ``kept`` in table order are singletons, with id ``singleton_base`` + their position.
    """
    raw = leaf_cluster[index].astype(np.int64)
    positions = offset + np.arange(len(index), dtype=np.int64)
    for j, keep, earlier in zip(split, kept, before):
        members = np.flatnonzero(index == j)
        rank = earlier + np.arange(len(members))
        alone = members[rank >= keep]
        raw[alone] = singleton_base + positions[alone]
    return raw


def first_positions(raw: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ids, table position of each one's first row) of the partition."""
    ids, first_row = np.unique(raw, return_index=True)
    return ids, offset + first_row.astype(np.int64)


def renumber(raw: np.ndarray, ids: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Map raw ids (all in the sorted ``ids``) to ``labels``."""
    return labels[np.searchsorted(ids, raw)]


def place_partition(rows: PartitionRows, placement) -> np.ndarray:
    """The labelling model's cluster id of each of the partition's rows (raw features), (n,) int64."""
    with single_threaded():
        return placement.predict(np.stack(rows.base_labels, axis=1) if rows.base_labels else rows.X, rows.gaps)


def place_partition_with_confidence(rows: PartitionRows, placement) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`place_partition`'s ids and each row's confidence in its cluster (float32, None when the model keeps
    no confidence state: :meth:`~lwec_tasks.core.placement.Placement.predict_with_confidence`)."""
    from lwec_tasks.stages.evidence_parts import observed_share_scaled

    with single_threaded():
        ids, confidence = placement.predict_with_confidence(np.stack(rows.base_labels, axis=1) if rows.base_labels
                                                            else rows.X, rows.gaps)
    return ids, observed_share_scaled(confidence, rows)


@dataclass(frozen=True)
class PreviousOverlap:
    """A partition's objects by (new label, earlier run's label): ``counts`` (k, u) for the ``earlier`` (u,)
    sorted distinct labels the earlier run gives in the partition's id range; objects the earlier run lacks,
    and earlier objects the table no longer holds, are not counted."""

    earlier: np.ndarray
    counts: np.ndarray


def previous_overlap(spec: PartitionSpec, keys: PartitionKeys, labels: np.ndarray, stored: SourceTable,
                     earlier: EarlierRun, k: int) -> PreviousOverlap:
    """Read the earlier run's labels of the partition's id range (:func:`stored_run_rows`) and count the
    objects per (new label in 0..k−1, earlier label) pair, matching objects by id.

    ``stored`` (reflected once by the flow) is the labels' rows table, read by the run's number (PostgreSQL
    then reads that run's own table), or for a wide labels table of an earlier release that table, read by run
    key and source table."""
    table = stored.table
    if earlier.run is not None:
        which = [table.c.run == earlier.run]
    else:
        which = [table.c.run_key == earlier.run_key, table.c.source_table == str(spec.table)]
    earlier_rows = stored_run_rows(spec, stored, which)
    if not len(earlier_rows):
        return PreviousOverlap(np.zeros(0, dtype=np.int64), np.zeros((k, 0), dtype=np.int64))
    earlier_labels, codes = np.unique(earlier_rows["label"].to_numpy(dtype=np.int64), return_inverse=True)
    if not len(keys.ids):
        return PreviousOverlap(earlier_labels, np.zeros((k, len(earlier_labels)), dtype=np.int64))
    where = positions_of(keys.ids, earlier_rows["id"].to_numpy())
    found = where >= 0
    new = np.asarray(labels, dtype=np.int64)[where[found]]
    counts = np.bincount(new * len(earlier_labels) + codes[found], minlength=k * len(earlier_labels))
    return PreviousOverlap(earlier_labels, counts.reshape(k, len(earlier_labels)))


def stored_labels_equal(spec: PartitionSpec, keys: PartitionKeys, labels: np.ndarray, stored: SourceTable,
                        run: int) -> bool:
    """Whether run ``run`` of the labels' rows table ``stored`` (reflected once by the flow) holds in the
    partition's id range exactly the partition's (n,) ids with their (n,) ``labels``, no more, no fewer
    (:func:`stored_run_rows`, matched by id); the row order does not matter."""
    stored_rows = stored_run_rows(spec, stored, [stored.table.c.run == run])
    if len(stored_rows) != len(keys.ids):
        return False
    if not len(stored_rows):
        return True
    # Ids are unique on both sides: with equal counts, every stored id found means the same set of ids.
    positions = positions_of(keys.ids, stored_rows["id"].to_numpy())
    if (positions < 0).any():
        return False
    return bool(np.array_equal(np.asarray(labels, dtype=np.int64)[positions],
                               stored_rows["label"].to_numpy(dtype=np.int64)))


def stored_run_rows(spec: PartitionSpec, stored: SourceTable, which: list) -> pd.DataFrame:
    """The (id, label) rows of the labels table ``stored`` that the ``which`` clauses select, in the partition's
    id range, read by the fast path as the partition itself was read (ids exactly)."""
    with partition_engine(spec.database_url) as engine:
        return read_rows(engine, stored, ["id", "label"], exact_columns=["id"],
                         where=[*which, *id_range(stored.table, "id", spec.low, spec.high)])


def positions_of(ids: np.ndarray, stored_ids: np.ndarray) -> np.ndarray:
    """(M,) position in the partition's unique (N,) ``ids`` of each of the (M,) ``stored_ids``, −1 where absent;
    both compared as :func:`matchable_ids` makes them."""
    ids, stored_ids = matchable_ids(ids, stored_ids)
    return pd.Index(ids).get_indexer(pd.Index(stored_ids))


def matchable_ids(ids: np.ndarray, earlier_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both runs' ids (N,) and (M,) in a form the matching compares: as they are when they are numbers or
    strings; otherwise (``uuid`` values, decimals, integers beyond 64 bits) both as their canonical text,
    so equal ids stay equal and distinct ones distinct."""
    def plain(values: np.ndarray) -> bool:
        return values.dtype.kind in "iufUS" or all(type(v) in (str, int, float) for v in values)

    if plain(ids) and plain(earlier_ids):
        return ids, earlier_ids

    def text(value) -> str:
        if isinstance(value, decimal.Decimal):
            value = value.normalize()
            value = int(value) if value == value.to_integral_value() else value
        return str(value)

    return (np.array([text(v) for v in ids.tolist()], dtype=object),
            np.array([text(v) for v in earlier_ids.tolist()], dtype=object))


def overlap_counts(codes_t: np.ndarray, labels: np.ndarray, cluster_ids: np.ndarray, offsets: np.ndarray,
                   n_clusters_total: int) -> list[np.ndarray]:
    """The partition's share of LWEA's labelling model, for the written ``labels`` (each one of the sorted
    ``cluster_ids``, consensus cluster j = its position there): [sizes (k,), the (n_c, k) overlap counts of
    base clusters with consensus clusters]. Sums over partitions."""
    internal = np.searchsorted(cluster_ids, np.asarray(labels, dtype=np.int64))
    k = len(cluster_ids)
    counts = np.zeros((n_clusters_total, k))
    for m in range(codes_t.shape[0]):
        codes = codes_t[m].astype(np.int64) + offsets[m]
        counts += np.bincount(codes * k + internal, minlength=counts.size).reshape(counts.shape)
    return [np.bincount(internal, minlength=k).astype(np.float64), counts]


def first_labels(index: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct microclusters of the partition, the label of each one's first row)."""
    micro, first = np.unique(index, return_index=True)
    return micro, np.asarray(labels, dtype=np.int64)[first]


def code_rows(codes_t: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The base cluster codes of the rows at local ``positions``, one row each: (len(positions), M)."""
    return codes_t[:, positions].T


def truth_counts(keys: PartitionKeys, labels: np.ndarray) -> pd.Series:
    """Rows per (ground truth, label) pair, rows without ground truth left out."""
    if keys.truth is None:
        return pd.Series(dtype=np.int64)
    frame = pd.DataFrame({"truth": keys.truth, "label": labels})
    return frame[frame["truth"].notna()].groupby(["truth", "label"]).size()


def add_counts(*parts: pd.Series) -> pd.Series:
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.Series(dtype=np.int64)
    return pd.concat(parts).groupby(level=[0, 1]).sum()


def write_partition(database_url: str, target: TableName, keys: PartitionKeys, labels: np.ndarray,
                    run: int | None = None, columns: Columns | None = None,
                    confidence: np.ndarray | None = None) -> int:
    """Append the partition's (id, label) rows to a pending run's ``target`` table (with ``run`` in each row,
    unless None; ``columns``: the target's, None to reflect them; with each row's ``confidence`` unless None;
    :func:`lwec_tasks.io.staging.append_to`) in one transaction; returns rows written."""
    with partition_engine(database_url) as engine:
        return append_to(engine, target, keys.ids, np.asarray(labels, dtype=np.int64), run, columns, confidence)
