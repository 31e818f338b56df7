"""Placing new rows into a finished consensus clustering, without rerunning it.

A consensus run is a chain of fixed maps: raw features → standardisation → the
nearest centre of each of the M k-means base clusterings (M cluster codes) →
the consensus. :class:`Placement` keeps what each map needs and applies the
chain to new rows:

1. **Standardisation** — the mean and scale :func:`lwec_tasks.io.features.prepare_features`
   used (``(raw − mean) / scale``, constant columns have scale 1), or none.
2. **Base clusterings** — a row joins its nearest centre in every base
   clustering (what scikit-learn's ``labels_``/``predict`` gives the training
   rows), i.e. one cluster code per clustering, the Ensemble's global cluster ids.
   Centres that kept no training row have no code and are never chosen.
3. **Consensus**, by the method of the run:

   * **LWGP** — the row is transferred through Tcut exactly like a training
     object: embedding = Σ_m U[code_m] / Σ_m ECI[code_m] with U the cluster
     vectors of :func:`~lwec_tasks.core.lwgp.tcut_cluster_vectors`, row-normalised
     as :func:`~lwec_tasks.core.lwgp.partition_embedding` does; it joins the nearest
     consensus centre, the size-weighted mean of the training objects'
     normalised embedding rows per consensus cluster (k-means' own centres at
     convergence, so the training objects keep their labels).
   * **LWEA** — the row joins the consensus cluster C with the highest
     ECI-weighted co-association (the similarity average linkage merges by):
     score(x, C) = (1/M) Σ_m ECI[code_m(x)] · |C ∩ cluster code_m(x)| / |C|.
     A row whose M codes equal those of a training microcluster (training
     objects with identical label rows) takes that microcluster's consensus
     label instead: LWEA always keeps identical label rows together (they are
     at the smallest distance of the dendrogram), and the new row is
     indistinguishable from them in everything the consensus sees.

     Why both rules (measured on make_blobs data, 600–3000 training rows, 3–8
     blobs of 4 features, cluster_std 1.5–4, M = 10, θ = 0.4): the average-link
     rule alone gives back the run's own label for 95.1–100 % of the training
     rows — barely above 95 % on overlapping blobs (5–6 blobs, std 3–3.5),
     because an object's average similarity to a finished cluster is not what
     decided its merges (average linkage joins whole subtrees). With the
     microcluster lookup every training row whose microcluster the cut kept
     whole (all of them unless a cut splits identical rows) gets its label
     back: 100 % in every case measured. On fresh rows of the same
     distributions the NMI against the truth is within 0.03 of the training
     rows' with either rule (the lookup moves it by < 0.011). Its table costs
     Ñ × M int32 (Ñ microclusters ≤ N); rows whose codes match no training
     microcluster (most of them when M and the k_m are large) fall back to the
     average-link rule. Very large runs leave the lookup out
     (:data:`~lwec_tasks.stages.model.MODEL_MICROCLUSTER_LIMIT`), which keeps the model small.

   * **after naive-Bayes steps** (a run whose text or boolean columns move the rows,
     :mod:`lwec_tasks.stages.refinement`) — the row joins its most probable cluster under the model of the
     run's last step (``bayes_*`` state, :class:`~lwec_tasks.core.naive_bayes.BayesModel`), as the run's own
     rows did; an imputed numeric value adds nothing, as in the run.

The cluster id written for each consensus cluster is ``cluster_ids[j]``
(``j`` = 0..k−1 the consensus label).
Numpy and pandas only; no pipeline libraries.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.feature_checks import as_float_features, check_finite_features

#: Rows placed per step of :meth:`Placement.predict` (bounds its memory for millions of rows).
PREDICT_CHUNK = 16_384
#: Version of the saved format (``placement.json``'s ``format``).
FORMAT_VERSION = 1
#: File names written by :meth:`Placement.save` into its directory.
ARRAYS_FILE = "placement.npz"
META_FILE = "placement.json"
#: Guards 1/‖row‖ for an all-zero embedding row (the value of ``lwgp._ROW_NORM_EPS``).
_ROW_NORM_EPS = 1e-10
METHODS = ("lwea", "lwgp")


def feature_fingerprint(columns: Sequence[str]) -> str:
    """A short digest of an ordered feature set (the column names in order)."""
    return hashlib.sha256(json.dumps([str(c) for c in columns]).encode()).hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class Standardisation:
    """``(raw − mean) / scale`` per column, as scikit-learn's ``StandardScaler`` (constant columns: scale 1)."""

    mean: np.ndarray
    scale: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "mean", np.ascontiguousarray(self.mean, dtype=np.float64))
        object.__setattr__(self, "scale", np.ascontiguousarray(self.scale, dtype=np.float64))
        if self.mean.ndim != 1 or self.mean.shape != self.scale.shape:
            raise LwecInputError(f"standardisation mean {self.mean.shape} and scale {self.scale.shape} must be (d,)")

    def apply(self, X: np.ndarray) -> np.ndarray:
        """A standardised copy of the (n, d) raw rows (bit-identical to ``StandardScaler.transform``)."""
        out = np.array(X, dtype=np.float64)
        out -= self.mean
        out /= self.scale
        return out


@dataclass(frozen=True, eq=False)
class Placement:
    """Everything needed to label new rows as a finished consensus run would.

    Attributes
    ----------
    feature_columns : the d feature column names, in the order of ``predict``'s columns
    standardisation : :class:`Standardisation`, or None (features used as they are)
    centres : M arrays (k_m, d), the base clusterings' centres (standardised space)
    centre_codes : M arrays (k_m,) int64, the Ensemble's global cluster code of
        each centre, −1 for a centre no training row joined
    eci : (n_c,) ECI of every base cluster
    method : ``"lwea"`` or ``"lwgp"``
    theta : the ECI parameter θ of the run
    cluster_ids : (k,) int64, the id written for consensus cluster j = 0..k−1
    state : the consensus state by method —
        LWEA: ``shares`` (n_c, k) = |C_j ∩ c| / |C_j|, and optionally
        ``micro_codes`` (Ñ, M) int32 global codes of the training microclusters
        with ``micro_labels`` (Ñ,) their consensus cluster;
        LWGP: ``vectors`` (n_c, k) the Tcut cluster vectors U and ``centres`` (k, k)
        the consensus centres in the normalised embedding;
        either, for the row confidence (:mod:`lwec_tasks.core.confidence`; absent from models of earlier
        releases): ``confidence_shares`` (n_c, k) each base cluster's share in each consensus cluster and
        ``confidence_centres`` (k, d) the consensus clusters' centres in the standardised space and, when the
        run took the confidence's level from its clusters' Gaussians, ``confidence_levels`` (LEVEL_BINS + 1,)
        its level map (:mod:`lwec_tasks.core.confidence_level`); after naive-Bayes steps, the last step's model
        (``bayes_*``, :meth:`~lwec_tasks.core.naive_bayes.BayesModel.arrays`), which then places the rows
    n_clusters : the k the run asked for
    seed : the run's seed (metadata only)
    """

    feature_columns: tuple[str, ...]
    standardisation: Standardisation | None
    centres: tuple[np.ndarray, ...]
    centre_codes: tuple[np.ndarray, ...]
    eci: np.ndarray
    method: str
    theta: float
    cluster_ids: np.ndarray
    state: Mapping[str, np.ndarray]
    n_clusters: int
    seed: int | None = None
    #: the typed feature columns' :class:`~lwec_tasks.core.encoding.TableEncoding` (levels, weights, fill
    #: values): rows are then given as a DataFrame of ``feature_columns`` (:meth:`encode`) or as encoded rows
    #: of its ``width``; None (models of earlier releases): numeric rows of the feature columns
    encoding: object = None
    _lookup: pd.MultiIndex | None = field(default=None, init=False, repr=False)
    _bayes: object = field(default=None, init=False, repr=False)
    #: What the model's input columns are, in messages.
    column_kind = "feature"

    def __post_init__(self):
        object.__setattr__(self, "feature_columns", tuple(str(c) for c in self.feature_columns))
        if self.method not in METHODS:
            raise LwecInputError(f"method must be one of {METHODS}, got {self.method!r}")
        d = self.width
        if len(self.centres) != len(self.centre_codes) or not self.centres:
            raise LwecInputError("centres and centre_codes must hold one entry per base clustering")
        for m, (centres, codes) in enumerate(zip(self.centres, self.centre_codes)):
            if centres.ndim != 2 or centres.shape[1] != d or codes.shape != (centres.shape[0],):
                raise LwecInputError(
                    f"base clustering {m}: centres {centres.shape} / codes {codes.shape} do not fit {d} features"
                )
            if not (codes >= 0).any():
                raise LwecInputError(f"base clustering {m} has no centre with training rows")
        if self.standardisation is not None and self.standardisation.mean.shape != (d,):
            raise LwecInputError(f"standardisation has {self.standardisation.mean.shape[0]} columns, features {d}")
        object.__setattr__(self, "cluster_ids", np.asarray(self.cluster_ids, dtype=np.int64))
        if "micro_codes" in self.state:
            object.__setattr__(self, "_lookup", pd.MultiIndex.from_arrays(list(self.state["micro_codes"].T)))
        if "bayes_log_prior" in self.state:
            from lwec_tasks.core.naive_bayes import BayesModel

            object.__setattr__(self, "_bayes", BayesModel.from_arrays(self.state))

    # ---- description -------------------------------------------------------------------------------

    @property
    def width(self) -> int:
        """Columns of the matrix the model places: the encoding's width, else the number of feature columns."""
        return self.encoding.width if self.encoding is not None else len(self.feature_columns)

    @property
    def matrix_columns(self) -> tuple[str, ...]:
        """Names of the placed matrix's columns (``colour=red`` for a level of a text column)."""
        return tuple(self.encoding.encoded_names) if self.encoding is not None else self.feature_columns

    def encode(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(X (n, width) encoded rows, imputed share (n,) in [0, 1]) of a DataFrame of the feature columns:
        numeric gaps filled with the run's fill values, text and boolean values one-hot over the run's levels
        (an unseen value, or a NULL the run never saw, is all zeros); the share counts those per feature column."""
        X, share, _ = self.encode_with_gaps(frame)
        return X, share

    def encode_with_gaps(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """:meth:`encode`'s (X, imputed share) and which numeric values were filled, (n, q) bool over the q
        numeric columns (None: none)."""
        frame = self.input_columns(frame)
        if self.encoding is None:
            from lwec_tasks.core.encoding import numeric_values

            X = np.column_stack([numeric_values(frame[name], name) for name in self.feature_columns]) \
                if len(frame) else np.zeros((0, self.width))
            return X, np.zeros(len(X)), None
        X, unseen, _ = self.encoding.transform(frame, impute=False)
        gaps, filled = self.encoding.fill_gaps(X)
        return X, (unseen + filled) / max(len(self.feature_columns), 1), gaps

    @property
    def ensemble_size(self) -> int:
        """M, the number of base clusterings."""
        return len(self.centres)

    @property
    def fingerprint(self) -> str:
        """:func:`feature_fingerprint` of ``feature_columns``."""
        return feature_fingerprint(self.feature_columns)

    def metadata(self) -> dict:
        """The JSON-able description of the model (also ``placement.json``)."""
        return {
            "format": FORMAT_VERSION,
            "feature_columns": list(self.feature_columns),
            "feature_fingerprint": self.fingerprint,
            "standardised": self.standardisation is not None,
            "method": self.method,
            "theta": float(self.theta),
            "n_clusters": int(self.n_clusters),
            "ensemble_size": self.ensemble_size,
            "seed": None if self.seed is None else int(self.seed),
            "cluster_ids": self.cluster_ids.tolist(),
            "state": sorted(self.state),
            **({"encoding": self.encoding.to_json()} if self.encoding is not None else {}),
        }

    def digest(self) -> str:
        """SHA-256 of the model's content (metadata and every array): equal models, equal digests."""
        h = hashlib.sha256(json.dumps(self.metadata(), sort_keys=True).encode())
        for name, array in sorted(self._arrays().items()):
            h.update(name.encode())
            h.update(str(array.dtype).encode() + str(array.shape).encode())
            h.update(np.ascontiguousarray(array).tobytes())
        return h.hexdigest()

    # ---- prediction --------------------------------------------------------------------------------

    def predict(self, X, gaps: np.ndarray | None = None) -> np.ndarray:
        """The cluster id (``cluster_ids``) of each of the (n, d) raw feature rows; (n,) int64.

        Columns in the order of ``feature_columns``; ``gaps`` (n, q) bool marks the numeric values that were
        imputed (a DataFrame's own NULLs are found). Raises :class:`LwecInputError` for a wrong shape or a
        non-finite value (naming the column). Works in chunks of :data:`PREDICT_CHUNK` rows.
        """
        X, gaps = self._rows_and_gaps(X, gaps)
        out = np.empty(len(X), dtype=np.int64)
        for start in range(0, len(X), PREDICT_CHUNK):
            chunk = X[start:start + PREDICT_CHUNK]
            labels = self._labels(chunk, None if gaps is None else gaps[start:start + PREDICT_CHUNK])
            out[start:start + len(chunk)] = self.cluster_ids[labels]
        return out

    @property
    def has_confidence(self) -> bool:
        """Whether the model gives new rows a confidence (models of earlier releases do not)."""
        return "confidence_shares" in self.state

    def predict_with_confidence(self, X, gaps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """(:meth:`predict`'s (n,) ids, (n,) float32 confidence in [0, 1] of each row in its cluster, or None when
        the model keeps no confidence state): the run's definition (:mod:`lwec_tasks.core.confidence`) with the
        run's centres and base-cluster shares."""
        from lwec_tasks.core.confidence import row_confidence
        from lwec_tasks.core.confidence_level import levelled

        if not self.has_confidence:
            return self.predict(X, gaps), None
        X, gaps = self._rows_and_gaps(X, gaps)
        ids = np.empty(len(X), dtype=np.int64)
        confidence = np.empty(len(X), dtype=np.float32)
        centres = self.state.get("confidence_centres")
        for start in range(0, len(X), PREDICT_CHUNK):
            chunk = X[start:start + PREDICT_CHUNK]
            codes = self.base_codes(chunk)
            labels = self._labels(chunk, None if gaps is None else gaps[start:start + PREDICT_CHUNK], codes)
            ids[start:start + len(chunk)] = self.cluster_ids[labels]
            standard = self.standardisation
            score = row_confidence(chunk, codes.T, labels, centres, self.state["confidence_shares"],
                                   mean=None if standard is None else standard.mean,
                                   scale=None if standard is None else standard.scale)
            confidence[start:start + len(chunk)] = levelled(score, self.state.get("confidence_levels"))
        return ids, confidence

    def base_codes(self, X) -> np.ndarray:
        """(n, M) int64 global cluster codes: each raw row's nearest centre in every base clustering."""
        X = self._check_rows(X)
        Z = self.standardisation.apply(X) if self.standardisation is not None else X
        codes = np.empty((len(Z), self.ensemble_size), dtype=np.int64)
        # Placed as the base clusterings placed their rows (the same rule, the same ties).
        from lwec_tasks.core.nearest_centre import nearest

        for m, (centres, centre_codes) in enumerate(zip(self.centres, self.centre_codes)):
            kept = centre_codes >= 0
            codes[:, m] = centre_codes[kept][nearest(Z, centres[kept])]
        return codes

    def _labels(self, X: np.ndarray, gaps: np.ndarray | None, codes: np.ndarray | None = None) -> np.ndarray:
        """(n,) consensus cluster 0..k−1 of checked rows X: by the naive-Bayes model of the run's last step when it
        took steps, else from the rows' base ``codes`` (found when None)."""
        if self._bayes is not None:
            return self._bayes.assign(X, gaps)
        return self.consensus_of_codes(self.base_codes(X) if codes is None else codes)

    def consensus_of_codes(self, codes: np.ndarray) -> np.ndarray:
        """(n,) consensus cluster 0..k−1 of rows given by their (n, M) global cluster codes."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.method == "lwgp":
            embedding = lwgp_embedding(codes, self.state["vectors"], self.eci)
            centres = self.state["centres"]
            distances = (centres * centres).sum(axis=1) - 2.0 * (embedding @ centres.T)
            distances[:, ~np.isfinite(centres).all(axis=1)] = np.inf
            return np.argmin(distances, axis=1)
        shares = self.state["shares"]
        scores = np.zeros((len(codes), shares.shape[1]))
        for m in range(codes.shape[1]):
            scores += self.eci[codes[:, m], None] * shares[codes[:, m]]
        labels = np.argmax(scores, axis=1)
        if self._lookup is not None:
            # The training microcluster with exactly these codes, −1 for none.
            which = self._lookup.get_indexer(pd.MultiIndex.from_arrays(list(codes.T)))
            found = which >= 0
            labels[found] = self.state["micro_labels"][which[found]]
        return labels

    def input_columns(self, frame: pd.DataFrame, what: str = "the input") -> pd.DataFrame:
        """The ``feature_columns`` of ``frame`` (column names as text), in order; others are dropped. Raises
        :class:`LwecInputError` naming the columns ``what`` (``frame``, in the message) lacks."""
        frame = pd.DataFrame(frame).rename(columns=str)
        missing = [name for name in self.feature_columns if name not in frame.columns]
        if missing:
            raise LwecInputError(f"{what} lacks {self.column_kind} column(s) {missing}; the model needs "
                                 f"{list(self.feature_columns)}")
        return frame[list(self.feature_columns)]

    def _rows_and_gaps(self, X, gaps: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """(:meth:`_check_rows`'s X, the (n, q) bool gaps: a DataFrame's own, else ``gaps`` checked)."""
        if isinstance(X, pd.DataFrame) and self.encoding is not None:
            X, _, gaps = self.encode_with_gaps(X)
        X = self._check_rows(X)
        if gaps is not None:
            gaps = np.asarray(gaps, dtype=bool)
            q = len(self.encoding.numeric_positions) if self.encoding is not None else self.width
            if gaps.shape != (len(X), q):
                raise LwecInputError(f"gaps must be ({len(X)}, {q}) (rows × numeric columns), got {gaps.shape}")
        return X, gaps

    def _check_rows(self, X) -> np.ndarray:
        if isinstance(X, pd.DataFrame) and self.encoding is not None:
            X = self.encode(X)[0]
        X = np.asarray(X)
        if X.ndim == 1 and X.shape[0] == self.width:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.width:
            raise LwecInputError(
                f"expected rows of {self.width} features ({', '.join(self.matrix_columns)}), got shape {X.shape}"
            )
        X = as_float_features(X)
        check_finite_features(X, self.matrix_columns, "; such rows cannot be labelled")
        return X

    # ---- persistence -------------------------------------------------------------------------------

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "centres": np.concatenate(self.centres),
            "centre_codes": np.concatenate(self.centre_codes),
            "centre_counts": np.array([len(c) for c in self.centres], dtype=np.int64),
            "eci": self.eci,
            "cluster_ids": self.cluster_ids,
        }
        if self.standardisation is not None:
            arrays["mean"] = self.standardisation.mean
            arrays["scale"] = self.standardisation.scale
        arrays.update({f"state_{name}": value for name, value in self.state.items()})
        return arrays

    def save(self, path) -> Path:
        """Write ``placement.npz`` (arrays) and ``placement.json`` (metadata) into directory ``path``; returns it."""
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **self._arrays())
        (directory / ARRAYS_FILE).write_bytes(buffer.getvalue())
        (directory / META_FILE).write_text(json.dumps(self.metadata(), indent=1))
        return directory

    @classmethod
    def load(cls, path) -> Placement:
        """Read a placement written by :meth:`save` (no pickle: arrays and JSON only)."""
        directory = Path(path)
        try:
            meta = json.loads((directory / META_FILE).read_text())
            with np.load(directory / ARRAYS_FILE, allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
        except (OSError, ValueError) as error:
            raise LwecInputError(f"{directory} holds no readable lwec placement: {error}") from None
        if meta.get("format") != FORMAT_VERSION:
            raise LwecInputError(f"{directory}: placement format {meta.get('format')!r} is not {FORMAT_VERSION}")
        split = np.cumsum(arrays["centre_counts"])[:-1]
        standardisation = Standardisation(arrays["mean"], arrays["scale"]) if meta["standardised"] else None
        state = {name[len("state_"):]: value for name, value in arrays.items() if name.startswith("state_")}
        return cls(
            feature_columns=tuple(meta["feature_columns"]),
            standardisation=standardisation,
            centres=tuple(np.split(arrays["centres"], split)),
            centre_codes=tuple(np.split(arrays["centre_codes"], split)),
            eci=arrays["eci"],
            method=meta["method"],
            theta=float(meta["theta"]),
            cluster_ids=arrays["cluster_ids"],
            state=state,
            n_clusters=int(meta["n_clusters"]),
            seed=meta.get("seed"),
            encoding=_encoding_of(meta),
        )


def _encoding_of(meta: Mapping):
    if "encoding" not in meta:
        return None
    from lwec_tasks.core.encoding import TableEncoding

    return TableEncoding.from_json(meta["encoding"])


def lwgp_embedding(codes: np.ndarray, vectors: np.ndarray, eci: np.ndarray) -> np.ndarray:
    """Row-normalised Tcut transfer of rows given by their (n, M) global codes: (n, q).

    Σ_m U[code_m] / Σ_m ECI[code_m], each row divided by (its norm + 1e-10) as
    :func:`~lwec_tasks.core.lwgp.partition_embedding` does.
    """
    rows = np.zeros((len(codes), vectors.shape[1]))
    degree = np.zeros(len(codes))
    for m in range(codes.shape[1]):
        rows += vectors[codes[:, m]]
        degree += eci[codes[:, m]]
    rows /= degree[:, None]
    rows /= np.sqrt((rows * rows).sum(axis=1, keepdims=True)) + _ROW_NORM_EPS
    return rows

