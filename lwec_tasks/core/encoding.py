"""Typed feature columns as one numeric matrix: numerics as they are, text and boolean columns one-hot.

A :class:`TableEncoding` is made once per run from facts about the whole table (each categorical column's
levels and their row counts, found by one ``GROUP BY`` per column; each numeric column's fill value, the mean
of its finite values over every partition), so every partition, either executor and the labelling model encode
a row alike:

* a **numeric** column is one matrix column; a missing, NaN or infinite value is *imputed* with the column's
  fill value (the whole table's mean of its finite values) and counted;
* a **categorical** column (text, enum, boolean) with levels l_1..l_L is L indicator columns (0/1). A NULL is
  a level of its own (``None``, listed last) when the table has NULLs in that column; a value not among the
  levels (a new row's unseen category, or a NULL where the table had none) is all zeros and counted as
  imputed. Booleans are levels ``False``, ``True`` (and ``None``). Whether a NULL tells anything is measured
  like a column's relevance (:func:`null_relevance`: the NULL indicator against the other columns): NULLs
  missing at random get weight 0 on their level, so such a row sits as far from every level as an unseen
  value does, and it is counted as imputed (:attr:`ColumnCode.null_imputed`).

The indicators are raw 0/1 values; how much a categorical column counts in the distances is its ``weight``,
applied by the run's standardisation (the indicator's scale is 1 / weight, its mean 0): the
``even`` weight of :func:`column_weight` (each indicator z-scored as if the column's levels were equally common)
times :func:`relevance_factor` of its :func:`column_relevance` (how much it goes with the other columns; noise
gets 0), chosen by held-out validation (``benchmarks/mixed_types.py``, docs/pipeline.md). Numpy and pandas only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from lwec_tasks.core.column_runs import as_slice
from lwec_tasks.core.errors import LwecInputError

NUMERIC, CATEGORY = "numeric", "category"
#: How a categorical column's weight is chosen (:func:`column_weight`): ``"even"`` (default, with the relevance
#: factor; chosen by ``benchmarks/mixed_types.py``), ``"one_numeric"``, ``"plain"``, ``"scaled"``.
DEFAULT_WEIGHTING = "even"
#: Weight multiplier of ``one_numeric`` and ``even`` (see :func:`column_weight`), chosen by held-out validation.
DEFAULT_WEIGHT_FACTOR = 1.0
#: How a categorical column's relevance scales its weight (:func:`relevance_factor`): ``"sqrt"`` (default,
#: chosen by ``benchmarks/mixed_types.py`` with the base clusterings' k range of
#: :func:`lwec_tasks.core.base_clusterings.categorical_k_max`), ``"linear"``, ``"none"`` (every column its full
#: weight).
DEFAULT_RELEVANCE = "sqrt"
#: Relevance up to this is taken for chance (the largest of several chance-corrected statistics of independent
#: columns still reaches a few hundredths): the factor uses (r − gate) / (1 − gate), at least 0.
DEFAULT_RELEVANCE_GATE = 0.1


#: Text shown for the NULL level in encoded column names and profiles.
NULL_LEVEL_TEXT = "NULL"


def column_weight(shares: Sequence[float], weighting: str = DEFAULT_WEIGHTING,
                  factor: float = DEFAULT_WEIGHT_FACTOR) -> float | np.ndarray:
    """The weight of a categorical column's indicators, from its levels' shares of the rows (summing to 1).

    * ``one_numeric``: ``factor / sqrt(1 − Σ p²)``. Two random rows then differ in the column's weighted
      indicators by a squared distance of 2·w²·(1 − Σ p²) = 2·factor² on average, the same as in one z-scored
      numeric column (2): every categorical column counts like one numeric column, whatever its number of
      levels (an uninformative many-level column adds no more than one noise column);
    * ``plain``: 1 (0/1 indicators next to z-scored numerics: a column counts at most like half a numeric one);
    * ``scaled``: each indicator z-scored (an array, one weight per level, 1 / sqrt(p (1 − p))): a column of L
      levels counts like L numeric columns — the variant that lets a many-level noise column dominate;
    * ``even``: ``factor / sqrt(q (1 − q))`` with q = Σ p², the chance that two rows share a level: each indicator
      z-scored as if the column's 1 / q levels were equally common — a column counts like its number of levels,
      as with ``scaled``, but a rare level is not set apart from the others.
    """
    p = np.asarray(shares, dtype=np.float64)
    if weighting == "plain":
        return 1.0
    if weighting == "even":
        q = float(np.dot(p, p))
        return factor / math.sqrt(q * (1.0 - q)) if 1e-12 < q < 1.0 - 1e-12 else 0.0
    if weighting == "scaled":
        spread = np.sqrt(np.clip(p * (1.0 - p), 1e-12, None))
        return 1.0 / spread
    if weighting == "one_numeric":
        spread = 1.0 - float(np.dot(p, p))
        return factor / math.sqrt(spread) if spread > 1e-12 else 0.0
    raise LwecInputError(f"unknown weighting {weighting!r}")


def level_text(level) -> str:
    """How a level is written in encoded column names (``colour=red``, ``active=True``, ``colour=NULL``)."""
    return NULL_LEVEL_TEXT if level is None else str(level)


def normalise_level(value, kind: str):
    """A value of a categorical column as its level: None for a missing value, a bool for a boolean column
    (``True``/``1``/``'true'``), else its text."""
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    if kind == "boolean":
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("true", "t", "1", "yes"):
                return True
            if lowered in ("false", "f", "0", "no"):
                return False
            return value
        return bool(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def level_positions(series: pd.Series, kind: str, index: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """(positions (n,) int64, missing (n,) bool) of a categorical column's values: each value's level
    (:func:`normalise_level`) looked up in ``index`` (level → position; −1 for a level not in it) and whether
    the value is missing. A column of text or of booleans is normalised once per distinct value; any other
    (objects of several types, whose equal values may normalise apart: ``1`` and ``True``) value by value."""
    if pd.api.types.infer_dtype(series, skipna=True) in ("string", "boolean", "empty"):
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
        levels = [normalise_level(value, kind) for value in uniques] + [None]  # code −1: a missing value
        lookup = np.array([index.get(level, -1) for level in levels], dtype=np.int64)
        absent = np.array([level is None for level in levels], dtype=bool)
        return lookup[codes], absent[codes]
    levels = [normalise_level(value, kind) for value in series.tolist()]
    positions = np.fromiter((index.get(level, -1) for level in levels), dtype=np.int64, count=len(levels))
    return positions, np.fromiter((level is None for level in levels), dtype=bool, count=len(levels))


@dataclass(frozen=True)
class ColumnCode:
    """How one source column becomes matrix columns.

    ``kind``: :data:`NUMERIC` or :data:`CATEGORY`; ``source_kind``: the declared kind (``text``, ``boolean``,
    ``integer``, ...); ``levels``: the categorical column's levels in order (None: the NULL level), ``counts``
    their rows in the table; ``weight``: the indicators' weight (one per level); ``fill``: the numeric column's
    imputed value."""

    name: str
    kind: str
    source_kind: str = "float"
    levels: tuple = ()
    counts: tuple = ()
    weight: tuple = ()
    fill: float = 0.0
    #: the column's relevance (:func:`column_relevance`), None before it is measured
    relevance: float | None = None
    #: its NULL indicator's relevance (:func:`null_relevance`), None without NULLs or before it is measured
    null_relevance: float | None = None

    @property
    def width(self) -> int:
        return 1 if self.kind == NUMERIC else len(self.levels)

    @property
    def encoded_names(self) -> list[str]:
        if self.kind == NUMERIC:
            return [self.name]
        return [f"{self.name}={level_text(level)}" for level in self.levels]

    @property
    def null_position(self) -> int | None:
        """The NULL level's position among ``levels`` (listed last), None without a NULL level."""
        return self.levels.index(None) if None in self.levels else None

    @property
    def null_rows(self) -> int:
        """The table's rows with the NULL level (0 without one)."""
        return 0 if self.null_position is None else int(self.counts[self.null_position])

    @property
    def null_imputed(self) -> bool:
        """Whether a NULL of this weighted categorical column is an unknown value (its level has weight 0 while
        other levels weigh: NULLs missing at random), counted as imputed, rather than a level of its own."""
        null = self.null_position
        if self.kind != CATEGORY or null is None:
            return False
        return self.weight[null] == 0 and any(w > 0 for j, w in enumerate(self.weight) if j != null)


@dataclass(frozen=True, eq=False)
class TableEncoding:
    """The typed feature columns of a run and how each becomes matrix columns (see the module docstring)."""

    columns: tuple[ColumnCode, ...]
    _index: dict = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        index = {}
        for code in self.columns:
            if code.kind == CATEGORY:
                index[code.name] = {level: j for j, level in enumerate(code.levels)}
        object.__setattr__(self, "_index", index)

    @property
    def source_columns(self) -> tuple[str, ...]:
        return tuple(code.name for code in self.columns)

    @property
    def encoded_names(self) -> tuple[str, ...]:
        return tuple(name for code in self.columns for name in code.encoded_names)

    @property
    def width(self) -> int:
        return sum(code.width for code in self.columns)

    @property
    def has_categories(self) -> bool:
        return any(code.kind == CATEGORY for code in self.columns)

    @property
    def numeric_positions(self) -> np.ndarray:
        """Matrix column of each numeric source column (in source order)."""
        return np.array([start for code, start in zip(self.columns, self.starts) if code.kind == NUMERIC],
                        dtype=np.int64)

    @property
    def starts(self) -> list[int]:
        out, start = [], 0
        for code in self.columns:
            out.append(start)
            start += code.width
        return out

    @property
    def weighted_categories(self) -> tuple[str, ...]:
        """The categorical columns whose indicators have a weight above 0 (they move the rows)."""
        return tuple(code.name for code in self.columns if code.kind == CATEGORY and any(w > 0 for w in code.weight))

    def category_mask(self) -> np.ndarray:
        """(width,) bool: which matrix columns are indicators."""
        return np.concatenate([np.full(code.width, code.kind == CATEGORY) for code in self.columns]) \
            if self.columns else np.zeros(0, dtype=bool)

    def with_fill(self, fill: Mapping[str, float]) -> TableEncoding:
        """A copy whose numeric columns impute ``fill[name]``."""
        return TableEncoding(tuple(replace(c, fill=float(fill.get(c.name, c.fill))) if c.kind == NUMERIC else c
                                   for c in self.columns))

    def with_relevance(self, relevance: Mapping[str, float], how: str = DEFAULT_RELEVANCE,
                       gate: float = DEFAULT_RELEVANCE_GATE, nulls: Mapping[str, float] | None = None,
                       null_gate: float = DEFAULT_RELEVANCE_GATE) -> TableEncoding:
        """A copy whose categorical columns' weights are scaled by :func:`relevance_factor` of their relevance
        (:func:`column_relevance`), kept in ``ColumnCode.relevance``; a column whose NULL indicator's relevance
        in ``nulls`` (:func:`null_relevance`, kept in ``ColumnCode.null_relevance``) is at most ``null_gate``
        (what chance reaches, as for a column) gets weight 0 on its NULL level (:attr:`ColumnCode.null_imputed`)."""
        nulls = nulls or {}
        out = []
        for c in self.columns:
            if c.kind == CATEGORY and c.name in relevance:
                factor = relevance_factor(relevance[c.name], how, gate)
                weight = [float(w) * factor for w in c.weight]
                null = nulls.get(c.name)
                if null is not None and null <= null_gate and c.null_position is not None:
                    weight[c.null_position] = 0.0
                c = replace(c, weight=tuple(weight), relevance=float(relevance[c.name]),
                            null_relevance=None if null is None else float(null))
            out.append(c)
        return TableEncoding(tuple(out))

    @property
    def imputed_null_positions(self) -> np.ndarray:
        """Matrix columns of the NULL levels counted as imputed (:attr:`ColumnCode.null_imputed`), int64."""
        return np.array([start + code.null_position for code, start in zip(self.columns, self.starts)
                         if code.null_imputed], dtype=np.int64)

    def scales(self, numeric_mean: np.ndarray, numeric_scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The whole matrix's standardisation (mean, scale) (width,): the numeric columns' given ones, each
        indicator mean 0 and scale 1 / its weight (a weight 0 — a constant column — gets scale ∞... 1e300)."""
        mean, scale = np.zeros(self.width), np.ones(self.width)
        numeric = 0
        for code, start in zip(self.columns, self.starts):
            if code.kind == NUMERIC:
                mean[start], scale[start] = numeric_mean[numeric], numeric_scale[numeric]
                numeric += 1
            else:
                weight = np.asarray(code.weight, dtype=np.float64)
                scale[start:start + code.width] = np.where(weight > 0, 1.0 / np.where(weight > 0, weight, 1.0),
                                                           1e300)
        return mean, scale

    # ---- encoding ------------------------------------------------------------------------------------

    def transform(self, frame: pd.DataFrame, impute: bool = True, numeric=None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X (n, width) float64, imputed (n,) int32: the row's values imputed or unseen, missing (n,) bool:
        whether the row had any missing value — numeric NULL/NaN/inf or categorical NULL).

        With ``impute`` False numeric non-finite values stay as they are (the pipeline fills them once the
        whole table's means are known, :meth:`fill_numeric`); unseen categorical values are all zeros either way.
        ``numeric(series, name)`` converts a numeric column (default :func:`numeric_values`).
        """
        numeric = numeric or numeric_values
        n = len(frame)
        imputed = np.zeros(n, dtype=np.int32)
        missing = np.zeros(n, dtype=bool)
        numeric_columns, indicators = [], []
        for code, start in zip(self.columns, self.starts):
            series = frame[code.name]
            if code.kind == NUMERIC:
                values = numeric(series, code.name)
                bad = ~np.isfinite(values)
                if bad.any():
                    missing |= bad
                    if impute:
                        values = np.where(bad, code.fill, values)
                        imputed += bad
                numeric_columns.append((start, values))
                continue
            positions, absent = level_positions(series, code.source_kind, self._index[code.name])
            missing |= absent
            seen = positions >= 0
            imputed += ~seen | (absent & code.null_imputed)
            indicators.append((start, positions))
        return fill_matrix(n, self.width, numeric_columns, indicators), imputed, missing

    def fill_gaps(self, X: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """Fill the numeric gaps (non-finite values) of X (n, width), as :meth:`transform` left them with
        ``impute`` False, in place with the columns' fill values; returns (the gaps (n, q) bool over the q numeric
        columns, None when there were none; (n,) int32 values filled per row)."""
        return fill_numeric(X, self.numeric_positions, np.array([c.fill for c in self.columns if c.kind == NUMERIC]))

    # ---- persistence ---------------------------------------------------------------------------------

    def to_json(self) -> list[dict]:
        def level(value):
            return value if value is None or isinstance(value, (bool, str)) else str(value)

        return [{"name": str(c.name), "kind": c.kind, "source_kind": str(c.source_kind),
                 "levels": [level(v) for v in c.levels],
                 "counts": [int(v) for v in c.counts], "weight": [float(w) for w in c.weight], "fill": float(c.fill),
                 "relevance": c.relevance,
                 **({"null_relevance": c.null_relevance} if c.null_relevance is not None else {})}
                for c in self.columns]

    @classmethod
    def from_json(cls, data: Sequence[Mapping]) -> TableEncoding:
        return cls(tuple(ColumnCode(d["name"], d["kind"], d.get("source_kind", "float"), tuple(d.get("levels", ())),
                                    tuple(d.get("counts", ())), tuple(d.get("weight", ())), float(d.get("fill", 0.0)),
                                    d.get("relevance"), d.get("null_relevance"))
                         for d in data))

    def digest_text(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


#: Bytes of the encoded matrix filled at a time (every column's values for a block of rows), small enough for the
#: block to stay in the processor's cache while each column writes into it.
FILL_BLOCK_BYTES = 1 << 20


def fill_matrix(n: int, width: int, numeric_columns: Sequence[tuple[int, np.ndarray]],
                indicators: Sequence[tuple[int, np.ndarray]]) -> np.ndarray:
    """The (n, width) float64 matrix with each of ``numeric_columns`` ((matrix column, (n,) float64 values)) in
    its column and, for each of ``indicators`` ((first matrix column, (n,) level positions, −1: none)), a 1.0 at
    column first + position of each row with a position, every other value 0.

    Filled a block of rows at a time, every column's part of a block before the next block, so the block stays in
    cache (column after column would write every cache line of the matrix once per column)."""
    X = np.empty((n, width))
    covered = np.zeros(width, dtype=bool)
    for start, _ in numeric_columns:
        covered[start] = True
    uncovered = np.flatnonzero(~covered)
    rest = as_slice(uncovered)
    block_rows = max(1, FILL_BLOCK_BYTES // max(1, 8 * width))
    for first in range(0, n, block_rows):
        last = min(n, first + block_rows)
        block = X[first:last]
        if len(uncovered):
            block[:, rest] = 0.0
        for start, values in numeric_columns:
            block[:, start] = values[first:last]
        for start, positions in indicators:
            part = positions[first:last]
            rows = np.flatnonzero(part >= 0)
            block[rows, start + part[rows]] = 1.0
    return X


def category_code(name: str, source_kind: str, level_counts: Sequence[tuple], weighting: str = DEFAULT_WEIGHTING,
                  factor: float = DEFAULT_WEIGHT_FACTOR) -> ColumnCode:
    """A categorical column's code from its (level, rows) pairs (levels as the database gives them, None for
    NULL): levels normalised and sorted (NULL last), weights by :func:`column_weight`."""
    merged: dict = {}
    for value, count in level_counts:
        level = normalise_level(value, source_kind)
        merged[level] = merged.get(level, 0) + int(count)
    levels = sorted((lv for lv in merged if lv is not None), key=lambda v: (str(type(v)), v))
    if None in merged:
        levels.append(None)
    counts = [merged[lv] for lv in levels]
    total = max(sum(counts), 1)
    shares = [c / total for c in counts]
    weight = column_weight(shares, weighting, factor)
    weights = tuple(float(w) for w in np.broadcast_to(np.asarray(weight, dtype=np.float64), (len(levels),)))
    return ColumnCode(str(name), CATEGORY, source_kind, tuple(levels), tuple(counts), weights)


def numeric_code(name: str, source_kind: str = "float") -> ColumnCode:
    return ColumnCode(str(name), NUMERIC, source_kind)


def association_sums(X: np.ndarray, encoding: TableEncoding) -> list[np.ndarray]:
    """A partition's share of the sums :func:`column_relevance` needs, from its encoded rows X (n, width) (numeric
    gaps still NaN/inf): [indicator cross-products (c, c), per (level, numeric column) rows with a finite value,
    their sum and their sum of squares (c, q) each] — c indicator columns, q numeric columns. Sums over
    partitions (in a fixed order, so either executor gets the same)."""
    mask = encoding.category_mask()
    I = X[:, mask]
    N = X[:, encoding.numeric_positions]
    finite = np.isfinite(N)
    if finite.all():  # the usual case (gaps are rare): every level's rows count for every numeric column
        counts = np.repeat(I.sum(axis=0)[:, None], N.shape[1], axis=1)  # whole numbers, exact either way
        values = N
    else:
        counts = I.T @ finite.astype(np.float64)
        values = np.where(finite, N, 0.0)
    return [I.T @ I, counts, I.T @ values, I.T @ (values * values)]


def column_relevance(sums: Sequence[np.ndarray], encoding: TableEncoding) -> dict[str, float]:
    """How much each categorical column goes with the rest of the table, in [0, 1], chance-corrected: the
    largest of its correlation ratio η² with each numeric column (the share of that column's variance its levels
    explain) and its Cramér's V² with each other categorical column, each minus what independent columns of
    the same numbers of levels show on average. A column of random levels scores about 0; one the clusters
    shape, well above (``benchmarks/mixed_types.py``). ``sums``: :func:`association_sums` over the table."""
    blocks = _category_blocks(encoding)
    return {name: _relevance_of(sums, blocks, name) for name in blocks}


def null_relevance(sums: Sequence[np.ndarray], encoding: TableEncoding) -> dict[str, float]:
    """The relevance (:func:`column_relevance`'s measure) of each categorical column's NULL indicator — the
    two-level column "NULL or not" — against the other columns, for the columns with a NULL level. NULLs
    missing at random score about 0; NULLs that go with the clusters (a group without the value), well above."""
    blocks = _category_blocks(encoding)
    out = {}
    for code in encoding.columns:
        if code.kind == CATEGORY and code.null_position is not None:
            null = np.zeros(code.width)
            null[code.null_position] = 1.0
            out[code.name] = _relevance_of(sums, blocks, code.name, np.vstack([null, 1.0 - null]))
    return out


def _category_blocks(encoding: TableEncoding) -> dict[str, slice]:
    """Each categorical column's indicator columns among the c indicators of :func:`association_sums`."""
    blocks, start = {}, 0
    for code in encoding.columns:
        if code.kind == CATEGORY:
            blocks[code.name] = slice(start, start + code.width)
            start += code.width
    return blocks


def _relevance_of(sums: Sequence[np.ndarray], blocks: Mapping[str, slice], name: str,
                  merge: np.ndarray | None = None) -> float:
    """The relevance of the column whose levels are ``merge`` (r, width of ``name``'s block) @ ``name``'s levels
    (two rows: its NULL indicator; None: the column itself, no product) against every other column."""
    cross, counts, totals, squares = (np.asarray(s, dtype=np.float64) for s in sums)
    block = blocks[name]
    n_rows = float(np.trace(cross[block, block]))
    best = 0.0
    for j in range(counts.shape[1]):
        n_l, s_l, q_l = (_merged(merge, sums_[block, j]) for sums_ in (counts, totals, squares))
        n = n_l.sum()
        if n < 3 or len(n_l) < 2:
            continue
        total = q_l.sum() - s_l.sum() ** 2 / n
        if total <= 1e-12 * max(q_l.sum(), 1.0):
            continue
        seen = n_l > 0
        between = float(np.sum(s_l[seen] ** 2 / n_l[seen]) - s_l.sum() ** 2 / n)
        chance = (int(seen.sum()) - 1) / (n - 1)
        best = max(best, (between / total - chance) / (1 - chance))
    for other, other_block in blocks.items():
        if other == name or n_rows < 3:
            continue
        table = _merged(merge, cross[block, other_block])
        rows, columns = table.sum(axis=1), table.sum(axis=0)
        keep_r, keep_c = rows > 0, columns > 0
        table = table[np.ix_(keep_r, keep_c)]
        r = min(table.shape) - 1
        if r < 1:
            continue
        expected = np.outer(rows[keep_r], columns[keep_c]) / n_rows
        v2 = float(np.sum((table - expected) ** 2 / expected)) / (n_rows * r)
        chance = (table.shape[0] - 1) * (table.shape[1] - 1) / (n_rows * r)
        best = max(best, (v2 - chance) / (1 - chance) if chance < 1 else 0.0)
    return float(min(max(best, 0.0), 1.0))


def _merged(merge: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
    """``merge @ rows``: a column's per-level sums (rows) as the merged column's; ``rows`` itself when None."""
    return rows if merge is None else merge @ rows


def relevance_factor(relevance: float, how: str = DEFAULT_RELEVANCE, gate: float = DEFAULT_RELEVANCE_GATE) -> float:
    """The factor a column's relevance puts on its weight: ``sqrt`` √r′, ``linear`` r′, ``none`` 1, with
    r′ = max(0, r − gate) / (1 − gate)."""
    if how == "none":
        return 1.0
    relevance = max(0.0, relevance - gate) / (1.0 - gate)
    if how == "linear":
        return float(relevance)
    if how == "sqrt":
        return math.sqrt(max(relevance, 0.0))
    raise LwecInputError(f"unknown relevance scaling {how!r}")


def numeric_values(series: pd.Series, name: str) -> np.ndarray:
    """A numeric column as float64 (missing: NaN); text that is not a number raises naming the column."""
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    converted = pd.to_numeric(series, errors="coerce")
    bad = series.notna() & converted.isna()
    if bad.any():
        raise LwecInputError(f"feature column {name!r} is not numeric ({int(bad.sum())} non-numeric values, "
                             f"e.g. {series[bad].iloc[0]!r})")
    return converted.to_numpy(dtype=np.float64, na_value=np.nan)


def fill_numeric(X: np.ndarray, positions: np.ndarray, fill: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The non-finite values of X's ``positions`` columns replaced by ``fill`` in place; returns (which values
    were filled, (n, len(positions)) bool, None when none was; (n,) int32 values filled per row)."""
    gaps = np.zeros((len(X), len(positions)), dtype=bool)
    for i, (j, value) in enumerate(zip(positions, fill)):
        bad = ~np.isfinite(X[:, j])
        if bad.any():
            X[bad, j] = value
            gaps[:, i] = bad
    return (gaps if gaps.any() else None), gaps.sum(axis=1, dtype=np.int32)
