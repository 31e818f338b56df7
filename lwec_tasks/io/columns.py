"""Which columns of a source table play which role, and which are left out and why.

No database and no pandas here: the plan is made from the column lists of a
reflected table (:class:`~lwec_tasks.io.catalog.SourceTable`) and, when known,
which columns are NULL in every row. :mod:`lwec_tasks.io.features` then checks
the values and builds the matrix.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.identifiers import name_list

#: Column names taken as the object id when no id column is given and the
#: table has no single-column primary key.
CONVENTIONAL_ID_NAMES = ("id",)

#: Column names (lower case, ignoring ``_``/``-``/spaces) that usually hold a
#: ground truth or target rather than a feature.
LABEL_LIKE_NAMES = frozenset({
    "label", "labels", "target", "targets", "class", "classes", "y", "truth", "groundtruth", "gt",
    "category", "cluster", "clusters", "outcome", "response",
})

#: Whole names, and last words of names (``customer_key``, ``orderId``), that usually hold a key, not a feature.
KEY_LIKE_NAMES = frozenset({"id", "key", "pk", "uuid", "guid", "rowid", "oid", "index", "idx", "identifier"})
KEY_LIKE_LAST_WORDS = frozenset({"id", "key", "pk", "uuid", "guid", "identifier"})

#: Why a column of the table is not clustered on, by its declared kind (:func:`~lwec_tasks.io.catalog.column_kind`).
_NOT_NUMERIC = {"boolean": "boolean", "text": "text", "uuid": "uuid (an identifier)", "date/time": "date/time",
                "binary": "binary", "untyped": "no declared type"}

#: Declared kinds clustered as categories (one-hot, :mod:`lwec_tasks.core.encoding`); numeric kinds are
#: ``integer``, ``float``, ``decimal``.
CATEGORICAL_KINDS = frozenset({"text", "boolean"})
NUMERIC_KINDS = frozenset({"integer", "float", "decimal"})
#: A text column with more distinct values than this is left out of the default features as high-cardinality
#: (codes, identifiers, free text) ...
MAX_LEVELS = 50
#: ... and so is one whose distinct values are more than this share of its non-NULL rows (on small tables).
MAX_LEVEL_SHARE = 0.5
#: A text column named in ``feature_columns`` may have at most this many distinct values (each is a matrix column).
MAX_EXPLICIT_LEVELS = 1000
#: How the reason a high-cardinality text column holding numbers is left out begins.
NUMBERS_IN_TEXT = "text holding numbers"


@dataclass(frozen=True)
class ColumnStats:
    """What the planning query learnt about a column: ``distinct`` values (NULL not counted; None: not counted),
    ``non_null`` rows, ``constant``: at most one distinct value (a NULL counting as a value of a text or boolean
    column); ``levels``: a text or boolean column's [(value, rows)] (NULL as None) when the query found them (see
    :func:`lwec_tasks.io.levels.column_stats`), else None; ``holds_numbers``: a high-cardinality text column whose
    first values are all numbers (:func:`lwec_tasks.io.catalog.text_holding_numbers`)."""

    distinct: int | None = None
    non_null: int | None = None
    constant: bool = False
    levels: tuple | None = field(default=None, compare=False, repr=False)
    holds_numbers: bool = False


def high_cardinality(stats: ColumnStats | None) -> bool:
    """Whether a text column's distinct values make it an identifier, code or free text rather than a category."""
    if stats is None or stats.distinct is None:
        return False
    many = stats.distinct > 2 and stats.distinct > MAX_LEVEL_SHARE * (stats.non_null or 0)
    return stats.distinct > MAX_LEVELS or many


@dataclass(frozen=True)
class ColumnPlan:
    """Which columns of the source table play which role.

    ``id_column`` is None when rows are identified by their position in the
    read order (0..N−1). ``left_out`` pairs every other column of the table
    with the reason it is not clustered on ("id column", "label column",
    "text", "boolean", "all NULL", "not in feature_columns", ...); it is a
    report and takes no part in comparing plans.
    """

    feature_columns: tuple[str, ...]
    id_column: str | None
    label_column: str | None
    left_out: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    #: label columns read as the base clusterings (``base_columns``; then there are no feature columns)
    base_columns: tuple[str, ...] = ()
    #: declared kind of each feature column (``integer``, ``float``, ``text``, ``boolean``, ``untyped``, ...);
    #: empty: all numeric
    feature_kinds: tuple[str, ...] = field(default=(), compare=False)

    @property
    def categorical_features(self) -> list[str]:
        """The feature columns clustered as categories (text, enum, boolean; one-hot)."""
        return [name for name, kind in zip(self.feature_columns, self.feature_kinds) if kind in CATEGORICAL_KINDS]

    @property
    def label_like_features(self) -> list[str]:
        """Feature columns named like a ground truth or target (e.g. ``label``, ``target``, ``class``)."""
        return [name for name in self.feature_columns if looks_like_label(name)]

    @property
    def key_like_features(self) -> list[str]:
        """Feature columns named like a key (``key``, ``customer_key``, ``order_id``, ``orderId``, ``uuid``, ...)."""
        return [name for name in self.feature_columns if looks_like_key(name)]

    @property
    def columns_to_read(self) -> list[str]:
        extra = [c for c in (self.id_column, self.label_column) if c is not None]
        return [*extra, *self.feature_columns, *self.base_columns]

    def describe(self) -> str:
        """``clustering on [...]; left out: a (id column), b (text)`` for the run's log (the first 20 feature names;
        the MLflow run's dataset input lists them all)."""
        left_out = ", ".join(f"{name} ({reason})" for name, reason in self.left_out) or "none"
        if self.base_columns:
            return f"base clusterings from {len(self.base_columns)} label column(s) {name_list(self.base_columns)}"
        features = name_list(self.feature_columns)
        return f"clustering on {len(self.feature_columns)} column(s) {features}; left out: {left_out}"


def _words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name))
    return [word for word in re.split(r"[\s_\-.]+", spaced.lower()) if word]


def looks_like_label(name: str) -> bool:
    """Whether a column name reads like a ground truth / target column (``Target``, ``class_label``, ``y``)."""
    normalised = re.sub(r"[\s_\-]+", "", str(name)).lower()
    words = [w for w in re.split(r"[\s_\-]+", str(name).lower()) if w]
    return normalised in LABEL_LIKE_NAMES or (len(words) > 1 and words[-1] in {"label", "labels", "target", "class"})


def looks_like_key(name: str) -> bool:
    """Whether a column name reads like a key (``key``, ``customer_key``, ``order_id``, ``orderId``, ``pk``)."""
    words = _words(name)
    return "".join(words) in KEY_LIKE_NAMES or (len(words) > 1 and words[-1] in KEY_LIKE_LAST_WORDS)


def resolve_id_column(columns: Sequence[str], primary_key: Sequence[str], id_column: str | None,
                      table: str = "the table") -> str | None:
    """``id_column`` (checked to exist), else the single-column primary key, else a column named ``id``, else None."""
    if id_column is not None:
        require_columns(columns, [id_column], "id_column", table)
        return id_column
    if len(primary_key) == 1:
        return primary_key[0]
    return next((name for name in CONVENTIONAL_ID_NAMES if name in columns), None)


def plan_columns(
    columns: Sequence[str],
    numeric_columns: Sequence[str],
    primary_key: Sequence[str],
    *,
    feature_columns: Sequence[str] | None = None,
    id_column: str | None = None,
    label_column: str | None = None,
    table: str = "the table",
    kinds: Mapping[str, str] | None = None,
    all_null: Collection[str] = (),
    stats: Mapping[str, ColumnStats] | None = None,
) -> ColumnPlan:
    """Resolve the column roles of a table.

    Parameters
    ----------
    columns : all column names of the table
    numeric_columns : those whose declared type is numeric
    primary_key : primary-key column names
    feature_columns : explicit features; default all numeric columns except id, label and all-NULL ones
    id_column : default the single-column primary key, else a column named ``id``, else none
    label_column : ground truth column (optional)
    table : the table's name, for messages
    kinds : column → declared kind (``text``, ``boolean``, ...), to say why a column is left out
    all_null : columns known to be NULL in every row: left out of the default
        features; named in ``feature_columns`` they are refused
    stats : column → :class:`ColumnStats` when known: by default constant columns and high-cardinality text
        columns (:func:`high_cardinality`) are left out; without stats every text and boolean column is a
        candidate

    By default the features are the numeric, boolean and low-cardinality text (and enum) columns other than
    the id and label column; every other column is in ``left_out`` with its reason.

    Raises :class:`LwecInputError` for unknown columns, clashing roles, and no usable feature column.
    """
    columns = list(columns)
    kinds = kinds or {}
    id_column = resolve_id_column(columns, primary_key, id_column, table)
    if label_column is not None:
        require_columns(columns, [label_column], "label_column", table)
        if label_column == id_column:
            raise LwecInputError(f"label_column and id_column are both {label_column!r}")
    roles = {id_column, label_column} - {None}

    stats = stats or {}
    if feature_columns is None:
        numeric = set(numeric_columns)
        candidates = [name for name in columns if name not in roles
                      and (name in numeric or kinds.get(name) in CATEGORICAL_KINDS)]
        chosen = [name for name in candidates if name not in all_null and not stats.get(name, ColumnStats()).constant
                  and not (kinds.get(name) == "text" and high_cardinality(stats.get(name)))]
        if not chosen:
            nulls = f"; NULL in every row: {name_list(candidates)}" if candidates else ""
            raise LwecInputError(
                f"table {table!r} has no numeric, boolean or low-cardinality text columns besides id/label to use "
                f"as features{nulls}; its columns are {name_list(columns)} (numeric: {name_list(numeric_columns)})"
            )
    else:
        chosen = list(feature_columns)
        if not chosen:
            raise LwecInputError("feature_columns is empty; name at least one column or leave it unset")
        require_columns(columns, chosen, "feature_columns", table)
        duplicated = sorted({name for name in chosen if chosen.count(name) > 1})
        if duplicated:
            raise LwecInputError(f"feature_columns lists {duplicated} more than once")
        clashing = [name for name in chosen if name in roles]
        if clashing:
            raise LwecInputError(f"feature_columns {clashing} are also the id or label column")
        empty = [name for name in chosen if name in all_null]
        if empty:
            raise LwecInputError(unusable_features_message(chosen, empty, ("is", "are"),
                                                           f"NULL in every row of table {table!r}"))
        # Explicit columns are checked value by value in prepare_features: SQLite
        # columns may be untyped, and text holding numbers is accepted.
        many = [name for name in chosen if kinds.get(name) == "text"
                and (stats.get(name, ColumnStats()).distinct or 0) > MAX_EXPLICIT_LEVELS]
        if many:
            raise LwecInputError(unusable_features_message(
                chosen, many, ("has", "have"),
                f"more than {MAX_EXPLICIT_LEVELS} distinct values (each would be a feature of its own)"))
    left_out = tuple((name, _reason(name, id_column, label_column, feature_columns, kinds, all_null, stats))
                     for name in columns if name not in chosen)
    return ColumnPlan(tuple(chosen), id_column, label_column, left_out,
                      feature_kinds=tuple(kinds.get(name, "float") for name in chosen))


def _reason(name, id_column, label_column, feature_columns, kinds, all_null, stats=None) -> str:
    if name == id_column:
        return "id column"
    if name == label_column:
        return "label column"
    if feature_columns is not None:
        return "not in feature_columns"
    if name in all_null:
        return "all NULL"
    kind = kinds.get(name)
    found = (stats or {}).get(name)
    if found is not None and found.constant and (kind in NUMERIC_KINDS or kind in CATEGORICAL_KINDS):
        return "constant"
    if kind == "text" and high_cardinality(found):
        if found.holds_numbers:
            return (f"{NUMBERS_IN_TEXT} ({found.distinct} distinct values; name it in feature_columns to cluster on "
                    "it as numbers)")
        return f"high-cardinality text ({found.distinct} distinct values)"
    return _NOT_NUMERIC.get(kind, f"not numeric ({kind})" if kind else "not numeric")


def unusable_features_message(names: Sequence[str], unusable: Sequence[str], verbs: tuple[str, str],
                              problem: str) -> str:
    """``feature column 'a' <verb> <problem>; leave it out: feature_columns=[...]`` for the ``unusable`` ones among
    the feature columns ``names`` (``verbs``: the verb for one column and for several, e.g. ("is", "are")); the
    advice is to choose other feature columns when none is left."""
    rest = [name for name in names if name not in unusable]
    one, many = verbs
    these = f"column {unusable[0]!r} {one}" if len(unusable) == 1 else f"columns {list(unusable)} {many}"
    advice = f"leave {'it' if len(unusable) == 1 else 'them'} out: feature_columns={rest}" if rest \
        else "choose other feature_columns"
    return f"feature {these} {problem}; {advice}"


def require_columns(columns: Sequence[str], names: Sequence[str], parameter: str, table: str) -> None:
    """:class:`LwecInputError` naming the ``names`` not among the ``columns`` of ``table`` (given as ``parameter``)."""
    missing = [name for name in names if name not in columns]
    if missing:
        raise LwecInputError(
            f"{parameter}: column(s) {missing} not found in table {table!r}; its columns are {name_list(columns)}"
        )


def unique_integer_columns(frame, names: Sequence[str]) -> list[str]:
    """Columns of ``frame`` (a DataFrame) among ``names`` holding integers with a distinct value in every row."""
    if len(frame) < 2:
        return []
    return [name for name in names if frame[name].dtype.kind in "iu" and frame[name].is_unique]
