"""Views of a typed table's columns: which matrix columns each base clustering sees.

An ensemble of a table with text or boolean columns can be built from several *views* of its encoded columns
(:class:`~lwec_tasks.core.encoding.TableEncoding`): every column (``all``), the numeric columns alone
(``numeric``), the weighted indicators alone (``categorical``: k-means on them is a k-modes-like clustering),
or a random half or more of the weighted source columns, drawn per clustering (``subset``). Clustering m sees
the m-th view of the round robin; its k, seed, generator and fitting rows are drawn as without views, so views
only choose columns (``views=`` of :func:`~lwec_tasks.core.base_clusterings.fit_base_clusterings`). A run does
not use views: measured against the run's encoding on generated mixed tables (``benchmarks/mixed_types.py``),
no view design met its targets held out (docs/decisions.md).

A view is a column subset of the standardised rows: a generator is fitted on those columns and every row takes
its nearest prototype in them (:class:`ViewModel`), so a view keeps the generators' contract — linear in N,
nearest-prototype placement. An indicator of weight 0 (a column the relevance gate leaves out) is in no view
but ``all``; views that see the same weighted columns are one view, and when only ``all`` is left there are no
views (``None``): all-numeric tables, and tables whose text and boolean columns are all gated, keep the
ensemble they have without views.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.encoding import CATEGORY, NUMERIC
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.seeds import derived_seed

VIEW_NAMES = ("all", "numeric", "categorical", "subset")
#: The views :func:`clustering_views` takes, in round-robin order, when none are named.
DEFAULT_VIEWS = ("all", "numeric", "categorical")
#: Key mixed into a clustering's seed for its ``subset`` draw (independent of its generator's draws).
SUBSET_KEY = 7_451


def parse_views(value) -> tuple[str, ...]:
    """The view names of ``value`` (``"all,numeric,categorical"`` or a sequence), checked."""
    names = tuple(part.strip().lower() for part in value.split(",")) if isinstance(value, str) else tuple(value)
    unknown = [name for name in names if name not in VIEW_NAMES]
    if unknown or not names:
        raise LwecInputError(f"views={value!r}: unknown view {unknown[0] if unknown else ''!r}; known: "
                             f"{', '.join(VIEW_NAMES)}")
    return names


def _source_blocks(encoding) -> list[tuple[str, np.ndarray]]:
    """(kind, matrix columns of positive weight) of each source column; a gated categorical column's
    block is empty."""
    blocks = []
    for code, start in zip(encoding.columns, encoding.starts):
        if code.kind == NUMERIC:
            blocks.append((NUMERIC, np.array([start], dtype=np.int64)))
        else:
            weight = np.asarray(code.weight, dtype=np.float64)
            blocks.append((CATEGORY, start + np.flatnonzero(weight > 0)))
    return blocks


def view_mask(encoding, name: str, rng: np.random.Generator | None = None) -> np.ndarray:
    """(width,) bool: the matrix columns of view ``name`` (``subset`` draws from ``rng`` a random
    ⌈s / 2⌉ to s of the s source columns of positive weight)."""
    mask = np.zeros(encoding.width, dtype=bool)
    blocks = [(kind, columns) for kind, columns in _source_blocks(encoding) if len(columns)]
    if name == "all":
        mask[:] = True
    elif name == "subset":
        size = int(rng.integers(max(1, math.ceil(len(blocks) / 2)), len(blocks) + 1))
        for j in np.sort(rng.choice(len(blocks), size=size, replace=False)):
            mask[blocks[j][1]] = True
    else:
        kind = NUMERIC if name == "numeric" else CATEGORY
        for block_kind, columns in blocks:
            if block_kind == kind:
                mask[columns] = True
    return mask


def _weighted(encoding, mask: np.ndarray) -> np.ndarray:
    """The mask without indicators of weight 0 (what the view's distances see)."""
    seen = np.zeros_like(mask)
    for _, columns in _source_blocks(encoding):
        seen[columns] = True
    return mask & seen


def distinct_views(encoding, names: Sequence[str]) -> tuple[str, ...]:
    """The views of ``names`` that see some weighted column and not the same weighted columns as an earlier
    one (``subset`` counts when there are two or more source columns of positive weight)."""
    kept, seen = [], []
    sources = sum(1 for _, columns in _source_blocks(encoding) if len(columns))
    for name in names:
        if name == "subset":
            if sources >= 2 and name not in kept:
                kept.append(name)
            continue
        weighted = _weighted(encoding, view_mask(encoding, name))
        if weighted.any() and not any(np.array_equal(weighted, other) for other in seen):
            kept.append(name)
            seen.append(weighted)
    return tuple(kept)


def clustering_views(encoding, n_clusterings: int, names=DEFAULT_VIEWS, random_state: int = 0
                     ) -> np.ndarray | None:
    """(M, width) bool: the columns each of the M base clusterings sees — the :func:`distinct_views` of
    ``names`` in round robin; None when that leaves ``all`` alone or nothing (or the table has no categorical
    column), i.e. every clustering sees every column. ``random_state`` (an int, the run's base seed) draws the
    ``subset`` views."""
    if encoding is None or not encoding.has_categories:
        return None
    names = distinct_views(encoding, parse_views(names))
    if names in ((), ("all",)):
        return None
    masks = np.empty((n_clusterings, encoding.width), dtype=bool)
    for m in range(n_clusterings):
        name = names[m % len(names)]
        rng = np.random.default_rng(derived_seed(int(random_state), m, SUBSET_KEY)) if name == "subset" else None
        masks[m] = view_mask(encoding, name, rng)
    return masks


@dataclass(frozen=True)
class ViewModel:
    """A base clustering fitted on some columns of the rows: rows are placed by ``model`` on those columns.

    model : a fitted k-means or :class:`~lwec_tasks.core.generators.Prototypes`, in the view's columns
    columns : (v,) int64 the view's matrix columns, increasing
    width : d, the columns of the rows placed
    """

    model: object
    columns: np.ndarray
    width: int

    def predict(self, X: np.ndarray) -> np.ndarray:
        """(n,) each of the (n, d) rows' cluster: its nearest centre in the view's columns."""
        return self.model.predict(np.ascontiguousarray(X[:, self.columns]))

    @property
    def mask(self) -> np.ndarray:
        """(d,) bool: the view's columns."""
        out = np.zeros(self.width, dtype=bool)
        out[self.columns] = True
        return out

    @property
    def cluster_centers_(self) -> np.ndarray:
        """(P, d) the model's centres with 0 in the columns outside the view."""
        centres = np.asarray(self.model.cluster_centers_, dtype=np.float64)
        out = np.zeros((len(centres), self.width))
        out[:, self.columns] = centres
        return out

    @property
    def centre_labels(self) -> np.ndarray:
        """(P,) int64 each centre's cluster (a k-means centre is its own)."""
        owners = getattr(self.model, "centre_labels", None)
        return np.arange(len(self.model.cluster_centers_), dtype=np.int64) if owners is None else owners


def view_k(rows: np.ndarray, k: int) -> int:
    """``k`` capped at the number of distinct rows among the (S, v) rows a view's model is fitted on (at least
    2): the indicators of a categorical view take few distinct values."""
    return min(int(k), max(2, len(np.unique(rows, axis=0))))


def view_columns(mask: np.ndarray | None) -> np.ndarray | None:
    """(v,) int64 the columns of a (d,) view mask; None for no view or a view of every column."""
    if mask is None or bool(np.all(mask)):
        return None
    return np.flatnonzero(mask).astype(np.int64)
