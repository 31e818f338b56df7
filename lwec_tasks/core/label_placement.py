"""Base clusterings given as label columns: their label values, and a labelling model over them.

When the M base clusterings are columns of a table (``base_columns``), a label is any value an
integer or text column holds, in any coding. :func:`canonical_labels` puts each value in one
comparable form (integral numbers as ``int``, other numbers as ``float``, text as ``str``; missing as
None), and :func:`label_order` sorts them: numbers numerically before text, text lexicographically —
so a column's codes 0..k_m − 1 are those ``np.unique`` gives its values.

:class:`LabelPlacement` is the labelling model of such a run: a :class:`~lwec_tasks.core.placement.Placement`
whose "features" are the base columns, with each column's label values in code order (``base_values``).
It places a row from its base labels: each label becomes the code it had in fitting, and the consensus
step is the Placement's. A label never seen in fitting (or missing) leaves its column out: the row is
placed by its remaining columns (for LWEA and LWGP alike, as if that base cluster had ECI 0); a row with
no label seen in fitting cannot be placed (:class:`~lwec_tasks.core.errors.LwecInputError`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import META_FILE, Placement

#: File :meth:`LabelPlacement.save` writes beside the Placement's files: the base columns and their values.
VALUES_FILE = "base_values.json"


def _canonical(value):
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    return int(number) if number.is_integer() else number


def canonical_labels(values) -> np.ndarray:
    """(n,) object array: each label as ``int`` (integral numbers), ``float`` or ``str``; None where missing."""
    values = np.asarray(values)
    out = np.empty(len(values), dtype=object)
    if values.dtype.kind in "biu":
        out[:] = values.astype(np.int64).tolist()
    elif values.dtype.kind == "f" and np.all(np.isnan(values) | (values == np.round(values))):
        missing = np.isnan(values)
        out[:] = np.where(missing, 0, values).astype(np.int64).tolist()
        out[missing] = None
    else:
        out[:] = [_canonical(v) for v in values.tolist()]
    return out


def label_order(value) -> tuple:
    """Sort key of canonical labels: numbers (numerically) before text."""
    return (isinstance(value, str), value)


def sorted_labels(values) -> list:
    """The distinct non-missing canonical labels among ``values``, in code order."""
    return sorted({v for v in values if v is not None}, key=label_order)


def label_codes(values: np.ndarray, dictionary: Sequence) -> np.ndarray:
    """(n,) int64: the position of each canonical label in ``dictionary``, −1 for missing or unseen labels."""
    return pd.Index(list(dictionary), dtype=object).get_indexer(pd.Index(values, dtype=object)).astype(np.int64)


def code_centres(ks: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Placement centres for base clusterings given by codes: column m's cluster j at j·e_m, (k_m, M) each,
    so that a row of codes is nearest to its own code in every column."""
    centres = []
    for m, k in enumerate(ks):
        column = np.zeros((int(k), len(ks)))
        column[:, m] = np.arange(int(k))
        centres.append(column)
    return tuple(centres)


@dataclass(frozen=True, eq=False)
class LabelPlacement(Placement):
    """A :class:`Placement` over base clusterings read from label columns (``feature_columns`` are the base
    columns, no standardisation, centres :func:`code_centres`).

    ``base_values`` holds, per base column, its canonical label values in code order: label
    ``base_values[m][j]`` is the column's j-th cluster, global code ``centre_codes[m][j]``. A column's
    clusters beyond ``len(base_values[m])`` are the fitting rows' missing labels (``missing_labels=
    "own_cluster"``: one cluster each); new rows never join them.
    """

    base_values: tuple[tuple, ...] = ()
    _unseen: Placement | None = dataclasses.field(default=None, init=False, repr=False)
    column_kind = "base"

    def metadata(self) -> dict:
        return {**super().metadata(), "base_columns": list(self.feature_columns)}

    def digest(self) -> str:
        values = json.dumps([list(v) for v in self.base_values], sort_keys=True).encode()
        return hashlib.sha256(super().digest().encode() + values).hexdigest()

    def base_codes(self, X) -> np.ndarray:
        """(n, M) int64 global codes of rows of base labels; −1 where a label was not seen in fitting."""
        X = np.asarray(X, dtype=object)
        if X.ndim != 2 or X.shape[1] != len(self.feature_columns):
            raise LwecInputError(f"expected rows of {len(self.feature_columns)} base labels "
                                 f"({', '.join(self.feature_columns)}), got shape {X.shape}")
        codes = np.empty(X.shape, dtype=np.int64)
        for m, values in enumerate(self.base_values):
            local = label_codes(canonical_labels(X[:, m]), values)
            codes[:, m] = np.where(local >= 0, self.centre_codes[m][np.maximum(local, 0)], -1)
        return codes

    def predict(self, X, gaps=None) -> np.ndarray:
        """The cluster id of each row of (n, M) base labels (columns in ``feature_columns`` order); (n,) int64.

        Unseen or missing labels leave their column out (see the module docstring); ``gaps`` (numeric values
        imputed) does not apply to labels and is ignored."""
        codes = self.base_codes(X)
        lost = ~(codes >= 0).any(axis=1)
        if lost.any():
            raise LwecInputError(f"{int(lost.sum())} row(s) have no base label seen in fitting in any of the base "
                                 f"columns {list(self.feature_columns)}; such rows cannot be labelled")
        unseen = len(self.eci)  # a column left out: a base cluster with ECI 0 and no share in any consensus cluster
        return self.cluster_ids[self._with_unseen().consensus_of_codes(np.where(codes >= 0, codes, unseen))]

    @property
    def has_confidence(self) -> bool:
        """Rows of base labels get no confidence."""
        return False

    def predict_with_confidence(self, X, gaps=None) -> tuple[np.ndarray, None]:
        """(:meth:`predict`'s ids, None): rows of base labels get no confidence."""
        return self.predict(X), None

    def _with_unseen(self) -> Placement:
        """This placement with one more base cluster (code ``len(eci)``): ECI 0, no share, a zero vector."""
        if self._unseen is not None:
            return self._unseen
        state = dict(self.state)
        for name in ("shares", "vectors"):
            if name in state:
                state[name] = np.vstack([state[name], np.zeros((1, state[name].shape[1]))])
        unseen = Placement(feature_columns=self.feature_columns, standardisation=None, centres=self.centres,
                           centre_codes=self.centre_codes, eci=np.append(self.eci, 0.0), method=self.method,
                           theta=self.theta, cluster_ids=self.cluster_ids, state=state, n_clusters=self.n_clusters)
        object.__setattr__(self, "_unseen", unseen)
        return unseen

    def predict_frame(self, frame: pd.DataFrame) -> np.ndarray:
        """:meth:`predict` on the base columns of ``frame`` (others ignored); (n,) int64 ids."""
        return self.predict(self.input_columns(frame).to_numpy(dtype=object))

    def example_frame(self, n_rows: int = 5) -> pd.DataFrame:
        """Up to ``n_rows`` rows of base labels seen in fitting (each column's values in code order, repeated)."""
        n = min(n_rows, max(len(v) for v in self.base_values))
        return pd.DataFrame({name: [values[i % len(values)] for i in range(n)]
                             for name, values in zip(self.feature_columns, self.base_values)})

    def save(self, path) -> Path:
        directory = super().save(path)
        (directory / VALUES_FILE).write_text(json.dumps({"base_columns": list(self.feature_columns),
                                                         "base_values": [list(v) for v in self.base_values]}))
        return directory

    @classmethod
    def load(cls, path) -> LabelPlacement:
        placement = Placement.load(path)
        try:
            stored = json.loads((Path(path) / VALUES_FILE).read_text())
        except (OSError, ValueError) as error:
            raise LwecInputError(f"{path} holds no readable base label values: {error}") from None
        fields = {f.name: getattr(placement, f.name) for f in dataclasses.fields(Placement) if f.init}
        return cls(**fields, base_values=tuple(tuple(v) for v in stored["base_values"]))


def load_placement(path) -> Placement:
    """The model saved in directory ``path``: a :class:`LabelPlacement` when it holds base label values, else a
    :class:`Placement`."""
    directory = Path(path)
    if (directory / VALUES_FILE).exists() and (directory / META_FILE).exists():
        return LabelPlacement.load(directory)
    return Placement.load(directory)
