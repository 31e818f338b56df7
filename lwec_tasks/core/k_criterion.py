"""The automatic choice of k without the consensus functions it compares: criterion, candidates, search.

The criterion and its reasons are in :mod:`lwec_tasks.core.auto_k`, the public
entry (:func:`~lwec_tasks.core.auto_k.select_k`,
:func:`~lwec_tasks.core.auto_k.auto_consensus`). The code is here, below
:mod:`lwec_tasks.core.lwgp`: ``lwgp(..., n_clusters="auto")`` chooses k with
:func:`choose_k`, and ``auto_k`` imports ``lwgp``. So LWGP is passed in
(``lwgp``), and so are the cuts :func:`choose_k` uses (``cut``). LWEA is cut here directly, through
:mod:`lwec_tasks.core.lwea_tree`, which is below both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.errors import LwecInputError, LwecMemoryError
from lwec_tasks.core.geodesic import SILHOUETTE_SAMPLE, geodesic_silhouettes
from lwec_tasks.core.lwea_tree import lwea_cuts
from lwec_tasks.core.metrics import partition_scores
from lwec_tasks.core.validation import check_k_range

DEFAULT_K_MAX = 50
#: Resolution γ of the modularity criterion (chosen on the paper's ten pools).
DEFAULT_RESOLUTION = 0.6
#: Weight λ of the LWEA–LWGP agreement (NMI) in the criterion (see :mod:`lwec_tasks.core.auto_k`).
DEFAULT_AGREEMENT = 0.15
#: With the objects' features (a run's table): γ, λ and the weight of LWEA's cuts' geodesic silhouette
#: (:mod:`lwec_tasks.core.geodesic`), chosen together on the battery's dev half (docs/decisions.md).
FEATURE_RESOLUTION = 0.2
FEATURE_AGREEMENT = 0.3
SILHOUETTE_WEIGHT = 1.0
METHODS = ("lwea", "lwgp")
#: Above this many objects k is chosen on a seeded uniform sample of this many (:func:`selection_sample`);
#: the labels are then the method's own at the chosen k on every object. Every pool of the paper fits whole.
SELECTION_SAMPLE = 20_000


@dataclass(frozen=True)
class KSelection:
    """The outcome of an automatic choice of k.

    Attributes
    ----------
    k : the chosen k (the best score; ties go to the smallest k)
    ks : (C,) int64 candidate ks, ascending
    scores : (C,) float64 criterion value per candidate, higher is better (LWEA: the
        joint score; LWGP: NMI of its cut with the LWEA cut at the joint choice k*)
    criterion : short human name of the criterion (a plot axis label)
    """

    k: int
    ks: np.ndarray
    scores: np.ndarray
    criterion: str


def check_method(method) -> str:
    """Return ``method`` lower-cased; it must be "lwea" or "lwgp" (any case)."""
    name = str(method).strip().lower() if isinstance(method, str) else None
    if name not in METHODS:
        raise LwecInputError(f"method must be one of {list(METHODS)}, got {method!r}")
    return name


def k_upper_bound(ensemble: Ensemble, method: str) -> int:
    """The largest k ``method`` can produce on ``ensemble`` (its own input check's bound): Ñ for LWEA,
    min(n_c, Ñ) for LWGP."""
    if check_method(method) == "lwea":
        return int(ensemble.n_microclusters)
    return int(min(ensemble.n_clusters_total, ensemble.n_microclusters))


def default_ks(ensemble, method: str) -> np.ndarray:
    """Candidate ks 2..min(DEFAULT_K_MAX, largest k ``method`` can produce), (C,) int64.

    :func:`k_upper_bound` gives that largest k. Raises
    :class:`LwecInputError` when not even k = 2 is possible (e.g. all label rows
    identical).
    """
    ensemble = as_ensemble(ensemble)
    upper = min(DEFAULT_K_MAX, k_upper_bound(ensemble, method))
    if upper < 2:
        raise LwecInputError(
            f"cannot choose k automatically: {check_method(method).upper()} can produce at most "
            f"{upper} cluster(s) on this ensemble (all label rows are identical)"
        )
    return np.arange(2, upper + 1, dtype=np.int64)


def check_ks(ks, ensemble: Ensemble, method: str) -> np.ndarray:
    """Validate candidate ``ks``: integers in 2..``k_upper_bound(ensemble, method)``; returns them sorted and
    unique, int64 (None: :func:`default_ks`)."""
    if ks is None:
        return default_ks(ensemble, method)
    if isinstance(ks, str) or not isinstance(ks, (Sequence, np.ndarray)):
        raise LwecInputError(f"ks must be a sequence of ints, got {ks!r}")
    values = list(np.asarray(ks).ravel()) if isinstance(ks, np.ndarray) else list(ks)
    if not values:
        raise LwecInputError("ks is empty; give at least one k (e.g. range(2, 31))")
    check_k_range(
        values,
        k_upper_bound(ensemble, method),
        not_integer="ks must contain integers, got {k!r}",
        below_two="ks must contain only ks >= 2, got {k}",
        above_upper="ks contains {k}, more clusters than {method} can produce here ({upper})",
        method=method.upper(),
    )
    return np.unique(np.asarray(values, dtype=np.int64))


def selection_sample(n_objects: int, random_state=None) -> np.ndarray | None:
    """Sorted positions (SELECTION_SAMPLE,) int64 of the objects k is chosen on, or None (all) up to SELECTION_SAMPLE.

    Seeded by ``random_state`` (an int; None means 0; a RandomState gives the seed, advancing it), so that a
    pipeline holding the rows in partitions gathers exactly the rows the library chooses on.
    """
    if n_objects <= SELECTION_SAMPLE:
        return None
    return np.sort(np.random.default_rng(_seed_of(random_state)).choice(n_objects, SELECTION_SAMPLE, replace=False))


def object_degrees_lwca(ensemble: Ensemble, eci: np.ndarray) -> np.ndarray:
    """d_i = Σ_j ã_ij = (1/M) Σ_m ECI(Cls^m(o_i))·|Cls^m(o_i)|, shape (N,)."""
    codes = ensemble.global_codes
    per_cluster = eci * ensemble.cluster_sizes
    return per_cluster[codes].sum(axis=1) / ensemble.n_columns


def lwca_modularity(
    ensemble: Ensemble, eci: np.ndarray, cuts: np.ndarray, resolution: float = DEFAULT_RESOLUTION
) -> np.ndarray:
    """Modularity Q_γ of each column of ``cuts`` in the LWCA graph.

    Parameters
    ----------
    ensemble : encoded ensemble (N objects, M columns, n_c clusters)
    eci : (n_c,) ECI per cluster
    cuts : (N, C) integer labels, one partition per column
    resolution : γ, default ``DEFAULT_RESOLUTION``

    Returns
    -------
    (C,) float64 modularities.
    """
    degrees = object_degrees_lwca(ensemble, eci)
    total = degrees.sum()
    codes = ensemble.global_codes.ravel()  # row-major: object i's M codes together
    n_c = ensemble.n_clusters_total
    scores = np.empty(cuts.shape[1])
    for j in range(cuts.shape[1]):
        _, labels = np.unique(cuts[:, j], return_inverse=True)
        k = int(labels.max()) + 1
        table = np.bincount(
            codes * k + np.repeat(labels, ensemble.n_columns), minlength=n_c * k
        ).reshape(n_c, k)
        within = float((eci[:, None] * table.astype(np.float64) ** 2).sum()) / ensemble.n_columns
        cluster_degrees = np.bincount(labels, weights=degrees, minlength=k)
        scores[j] = within / total - resolution * float(((cluster_degrees / total) ** 2).sum())
    return scores


def consensus_cuts(ensemble: Ensemble, method: str, ks: np.ndarray, theta: float, random_state,
                   lwgp: Callable[..., np.ndarray]) -> np.ndarray:
    """(N, len(ks)) consensus labels of ``method`` for every k (one dendrogram / eigensolve).

    ``lwgp`` is :func:`lwec_tasks.core.lwgp.lwgp`. Held as int16 (labels <
    ks.max() <= n_c): a quarter of the int64 the consensus functions return,
    while the other method's cuts are computed beside them.
    """
    if method == "lwea":
        cuts = lwea_cuts(ensemble, ks, theta)
    else:
        cuts = lwgp(ensemble, ks, theta=theta, random_state=random_state)
    return cuts.astype(np.int16) if int(np.max(ks)) <= np.iinfo(np.int16).max else cuts


def partition_nmi(a: np.ndarray, b: np.ndarray) -> float:
    """Max-normalised NMI, I(a; b) / max(H(a), H(b)), of two labelings (1.0 if both are constant)."""
    return partition_scores(a, b)[0]


def joint_scores(
    ensemble: Ensemble, eci: np.ndarray, cuts: np.ndarray, other_cuts: np.ndarray | None,
    resolution: float = DEFAULT_RESOLUTION, agreement: float = DEFAULT_AGREEMENT,
) -> np.ndarray:
    """The criterion per candidate: ½ (Q_γ(cut) + Q_γ(other cut)) + λ NMI(cut, other cut).

    ``cuts`` (N, C) are one method's cuts, ``other_cuts`` the other method's at the
    same ks. ``other_cuts`` may be None or have fewer columns (ks beyond what the
    other method can produce are the last ones); those candidates score Q_γ of
    ``cuts`` alone. The formula is symmetric in the two methods. Returns (C,) float64.
    """
    scores = lwca_modularity(ensemble, eci, cuts, resolution)
    n_pairs = 0 if other_cuts is None else other_cuts.shape[1]
    if n_pairs:
        other = lwca_modularity(ensemble, eci, other_cuts, resolution)
        nmi = np.array([partition_nmi(cuts[:, j], other_cuts[:, j]) for j in range(n_pairs)])
        scores[:n_pairs] = 0.5 * (scores[:n_pairs] + other) + agreement * nmi
    return scores


def match_scores(cuts: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """NMI (max-normalised) of every column of ``cuts`` (N, C) with ``reference`` (N,); (C,) float64."""
    return np.array([partition_nmi(cuts[:, j], reference) for j in range(cuts.shape[1])], dtype=np.float64)


def choose_k(
    ensemble: Ensemble, method: str, theta: float, ks=None, random_state=None,
    resolution: float | None = None, agreement: float | None = None, *,
    cut: Callable[..., np.ndarray], with_labels: bool = True, features: np.ndarray | None = None,
    silhouette_rows: int = SILHOUETTE_SAMPLE,
) -> tuple[KSelection, np.ndarray | None]:
    """:func:`lwec_tasks.core.auto_k.auto_consensus` on a checked ``method`` and ``theta`` and an Ensemble.

    ``cut(ensemble, method, ks, theta, random_state)`` is :func:`consensus_cuts` bound to LWGP.
    Above ``SELECTION_SAMPLE`` objects k is chosen on :func:`selection_sample`'s objects and the labels
    are ``method``'s cut at that k on every object (None when ``with_labels`` is false). ``features`` (N, d),
    one row per object, add the geodesic silhouette of LWEA's cuts (on at most ``silhouette_rows`` of them) to
    the score; ``resolution`` and ``agreement`` default to ``DEFAULT_*`` without them and ``FEATURE_*`` with them.
    Returns (selection, (N,) int64 consensus labels at the chosen k).
    """
    if features is not None and len(features) != ensemble.n_objects:
        raise LwecInputError(f"features must have one row per object: {len(features)} rows for "
                             f"{ensemble.n_objects} objects")
    if resolution is None:
        resolution = DEFAULT_RESOLUTION if features is None else FEATURE_RESOLUTION
    if agreement is None:
        agreement = DEFAULT_AGREEMENT if features is None else FEATURE_AGREEMENT
    sample = selection_sample(ensemble.n_objects, random_state)
    if sample is not None:
        selection, _ = choose_k(Ensemble(ensemble.codes[sample]), method, theta, ks, random_state, resolution,
                                agreement, cut=cut, with_labels=False,
                                features=None if features is None else np.asarray(features)[sample],
                                silhouette_rows=silhouette_rows)
        if not with_labels:
            return selection, None
        return selection, cut(ensemble, method, np.array([selection.k]), theta, random_state)[:, 0].astype(np.int64)
    ks = check_ks(ks, ensemble, method)
    other = "lwgp" if method == "lwea" else "lwea"
    if method == "lwea" and random_state is None:
        random_state = 0  # the LWGP cuts LWEA is compared with: deterministic
    other_ks = ks[ks <= k_upper_bound(ensemble, other)]  # ks is sorted: a prefix
    cuts = cut(ensemble, method, ks, theta, random_state)
    try:
        other_cuts = cut(ensemble, other, other_ks, theta, random_state) if len(other_ks) else None
    except LwecMemoryError:
        other_cuts = None  # e.g. LWEA's dendrogram of too many microclusters: this method's cuts alone
    scores = joint_scores(ensemble, ensemble_eci(ensemble, theta), cuts, other_cuts, resolution, agreement)
    criterion = (f"mean LWCA modularity (γ={resolution:g}) + {agreement:g}·NMI(LWEA, LWGP)" if other_cuts is not None
                 else f"LWCA modularity (γ={resolution:g}) of the {method.upper()} cuts")
    if features is not None:
        scores = scores + SILHOUETTE_WEIGHT * geodesic_silhouettes(
            features, lwea_side(cuts, other_cuts, method), random_state=_seed_of(random_state), size=silhouette_rows)
        criterion += f" + {SILHOUETTE_WEIGHT:g}·geodesic silhouette"
    best = int(np.argmax(scores))  # ties: the smallest k
    if method == "lwgp" and other_cuts is not None and best < other_cuts.shape[1]:
        joint_k = int(ks[best])
        scores = match_scores(cuts, other_cuts[:, best])
        best = int(np.argmax(scores))
        criterion = f"NMI(LWGP cut, LWEA cut at k*={joint_k}); k* by {criterion}"
    return KSelection(int(ks[best]), ks, scores, criterion), cuts[:, best].astype(np.int64)


def lwea_side(cuts: np.ndarray, other_cuts: np.ndarray | None, method: str) -> np.ndarray:
    """(N, C) LWEA's cut at each candidate where LWEA was cut (``method``'s own cuts when it is LWEA; for LWGP the
    other cuts, a prefix of the candidates), ``cuts`` beyond."""
    if method == "lwea" or other_cuts is None:
        return cuts
    return np.column_stack([other_cuts, cuts[:, other_cuts.shape[1]:]])


def _seed_of(random_state) -> int:
    """An int seed from None (0), an int, or a RandomState (drawn from it)."""
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return int(random_state or 0)
    return int(random_state.randint(np.iinfo(np.int32).max))
