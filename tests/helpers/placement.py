"""The tests' in-memory labelling model: :func:`build_placement` from a finished consensus run held whole.

The pipeline builds its :class:`~lwec_tasks.core.placement.Placement` from per-partition reductions
(:func:`lwec_tasks.stages.model.labelling_model`); this is the direct construction the tests compare it with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.placement import METHODS, PREDICT_CHUNK, Placement, Standardisation, lwgp_embedding


def with_ids(placement: Placement, mapping) -> Placement:
    """The same placement writing other ids: ``mapping[old id] = new id`` (a dict, or an array indexed by id)."""
    old = placement.cluster_ids
    try:
        if isinstance(mapping, Mapping):
            new = np.array([mapping[int(i)] for i in old], dtype=np.int64)
        else:
            new = np.asarray(mapping, dtype=np.int64)[old]
    except (KeyError, IndexError) as error:
        raise LwecInputError(f"with_ids: the mapping has no new id for cluster id {error}") from None
    if len(np.unique(new)) != len(new):
        raise LwecInputError(f"with_ids: the mapping sends two clusters to the same id ({new.tolist()})")
    return dataclasses.replace(placement, cluster_ids=new)


def _standardisation(features_stats) -> Standardisation | None:
    if features_stats is None or isinstance(features_stats, Standardisation):
        return features_stats
    if isinstance(features_stats, tuple) and len(features_stats) == 2:
        return Standardisation(*features_stats)
    if hasattr(features_stats, "standardisation"):
        return features_stats.standardisation
    if hasattr(features_stats, "mean") and hasattr(features_stats, "scale"):
        return Standardisation(features_stats.mean, features_stats.scale)
    raise LwecInputError(
        "features_stats must be None, a Standardisation, a (mean, scale) pair or prepared features, "
        f"got {type(features_stats).__name__}"
    )


def build_placement(
    features_stats,
    base,
    ensemble: Ensemble,
    eci: np.ndarray,
    labels: np.ndarray,
    method: str,
    theta: float,
    feature_columns: Sequence[str],
    *,
    n_clusters: int | None = None,
    seed: int | None = None,
    microcluster_lookup: bool = True,
) -> Placement:
    """The :class:`Placement` of a finished consensus run.

    Parameters
    ----------
    features_stats : the standardisation — ``PreparedFeatures`` (its ``mean``/``scale``),
        a :class:`Standardisation`, a (mean, scale) pair, or None when the
        features were not standardised
    base : :class:`~lwec_tasks.core.base_clusterings.BaseClusterings` of the run
        (``fit_base_clusterings``), fitted on the standardised rows
    ensemble : the Ensemble built from ``base.labels``
    eci : (n_c,) the ECI of its clusters (θ = ``theta``)
    labels : (N,) the consensus labels of the training rows; the distinct values
        become ``cluster_ids`` (consensus cluster j writes the j-th smallest label)
    method : ``"lwea"`` or ``"lwgp"``
    theta : θ of the run
    feature_columns : the d feature column names, in the column order of the features
    n_clusters : the k requested (default: the number of distinct labels)
    seed : the run's seed, kept as metadata
    microcluster_lookup : LWEA only — keep the training microclusters for the
        exact-match rule (see the module docstring)
    """
    ensemble = as_ensemble(ensemble)
    method = str(method).lower()
    if method not in METHODS:
        raise LwecInputError(f"method must be one of {METHODS}, got {method!r}")
    labels = np.asarray(labels)
    if labels.shape != (ensemble.n_objects,):
        raise LwecInputError(f"labels {labels.shape} must hold one label per object ({ensemble.n_objects})")
    eci = np.ascontiguousarray(eci, dtype=np.float64)
    if eci.shape != (ensemble.n_clusters_total,):
        raise LwecInputError(f"eci {eci.shape} must hold one value per cluster ({ensemble.n_clusters_total})")
    centres = tuple(np.ascontiguousarray(c, dtype=np.float64) for c in base.centres)
    if len(centres) != ensemble.n_columns:
        raise LwecInputError(f"{len(centres)} sets of centres for {ensemble.n_columns} base clusterings")
    feature_columns = tuple(str(c) for c in feature_columns)
    # Each centre's cluster: centre j is cluster j for k-means, a prototype carries its own (centre_labels).
    owners = tuple(getattr(base, "centre_labels", ())) or tuple(np.arange(len(c)) for c in centres)
    centre_codes = []
    for m, column_centres in enumerate(centres):
        start, stop = int(ensemble.offsets[m]), int(ensemble.offsets[m + 1])
        values = ensemble.cluster_label[start:stop]
        if values.min() < 0 or not np.isin(values, owners[m]).all():
            raise LwecInputError(
                f"base clustering {m} has labels {sorted(set(values.tolist()) - set(owners[m].tolist()))} that no "
                f"centre of its {len(column_centres)} carries"
            )
        code_of_label = np.full(int(max(values.max(), owners[m].max())) + 1, -1, dtype=np.int64)
        code_of_label[values] = np.arange(start, stop)
        centre_codes.append(code_of_label[owners[m]])

    cluster_ids, internal = np.unique(labels, return_inverse=True)
    internal = internal.astype(np.int64)
    k = len(cluster_ids)
    state: dict[str, np.ndarray] = {}
    if method == "lwea":
        counts = np.zeros((ensemble.n_clusters_total, k))
        for m in range(ensemble.n_columns):
            global_codes = ensemble.codes[:, m].astype(np.int64) + ensemble.offsets[m]
            counts += np.bincount(global_codes * k + internal, minlength=counts.size).reshape(counts.shape)
        state["shares"] = counts / np.bincount(internal, minlength=k)[None, :]
        if microcluster_lookup:
            state["micro_codes"] = ensemble.microcluster_codes.astype(np.int32)
            state["micro_labels"] = internal[ensemble.microcluster_representative]
    else:
        from lwec_tasks.core.lwgp import tcut_cluster_vectors

        vectors, _ = tcut_cluster_vectors(ensemble, eci, k)
        vectors = np.ascontiguousarray(vectors[:, :k])
        sums = np.zeros((k, vectors.shape[1]))
        for start in range(0, ensemble.n_objects, PREDICT_CHUNK):
            stop = min(start + PREDICT_CHUNK, ensemble.n_objects)
            codes = ensemble.codes[start:stop].astype(np.int64) + ensemble.offsets[:-1]
            embedding = lwgp_embedding(codes, vectors, eci)
            for j in range(k):
                sums[:, j] += np.bincount(internal[start:stop], weights=embedding[:, j], minlength=k)
        sizes = np.bincount(internal, minlength=k)
        state["vectors"] = vectors
        state["centres"] = sums / sizes[:, None]
    return Placement(
        feature_columns=feature_columns,
        standardisation=_standardisation(features_stats),
        centres=centres,
        centre_codes=tuple(centre_codes),
        eci=eci,
        method=method,
        theta=float(theta),
        cluster_ids=cluster_ids.astype(np.int64),
        state=state,
        n_clusters=int(k if n_clusters is None else n_clusters),
        seed=None if seed is None else int(seed),
    )
