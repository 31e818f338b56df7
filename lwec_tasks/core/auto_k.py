"""Automatic choice of the number of consensus clusters k.

Joint criterion: cut both consensus functions at every candidate k (LWEA's
one dendrogram, LWGP's one eigensolve) and find the k* maximising

    score(k) = ½ [Q_γ(π_LWEA,k) + Q_γ(π_LWGP,k)] + λ · NMI(π_LWEA,k, π_LWGP,k),

γ = ``DEFAULT_RESOLUTION`` = 0.6, λ = ``DEFAULT_AGREEMENT`` = 0.15: a k at which
the two consensus partitions are modular in the LWCA graph *and* agree with
each other (structure both an agglomerative and a spectral consensus find;
at a wrong k they tend to split or merge different groups). NMI is
max-normalised, I(a; b) / max(H(a), H(b)).

LWEA takes k = k*. LWGP takes the k whose LWGP cut best reproduces the LWEA
partition at k*,

    k_LWGP = argmax_k NMI(π_LWGP,k, π_LWEA,k*)   (ties: the smallest k),

over the same candidates (no further constant). LWGP's k-means on the
spectral embedding is more sensitive to k than LWEA's nested dendrogram cuts
(its accuracy on the paper's pools peaks sharply at the true k), and at k*
its cut can be a poor version of the structure the criterion found; the LWEA
cut at k* is the steadier target. On the 100 ensembles of the paper's ten
pools (REPRODUCTION.md) k_LWGP = k* in 80, and is within two of k* in 96.
When LWEA cannot produce k* (only with user-given ``ks`` beyond its range)
LWGP takes k* itself.

Q_γ is the modularity, with resolution γ, in the graph whose adjacency is the
LWCA matrix ã (paper Eq. 10)::

    Q_γ(π) = Σ_c [ S_c / W − γ (D_c / W)² ],
    S_c = Σ_{i,j ∈ c} ã_ij,   D_c = Σ_{i ∈ c} d_i,   d_i = Σ_j ã_ij,   W = Σ_i d_i.

The sums include i = j (ã_ii = mean ECI of the clusters of o_i). γ < 1
favours fewer, larger clusters than Newman's modularity (γ = 1), which on the
paper's pools tends to split off a few small clusters too many. Nothing here
builds ã: with n_{C,c} = |C ∩ c|,

    S_c = (1/M) Σ_C ECI(C) n_{C,c}²,   d_i = (1/M) Σ_m ECI(Cls^m(o_i)) |Cls^m(o_i)|,

one contingency table of the cut against all clusters, O(N·M) per k; the NMI
is one more O(N) contingency table per k. The price is running the other
consensus function too (LWGP for LWEA and vice versa), about twice the cost of
one consensus over all candidate ks. The LWGP cuts are seeded by
``random_state``; for LWEA with ``random_state=None`` they are seeded by 0, so
LWEA's choice stays deterministic. A candidate k the other method cannot
produce (only possible with user-given ``ks``, e.g. k above the number of
clusters for LWGP) is scored by its own cut's Q_γ alone, and so is every k
when the other method does not fit in memory (LWEA's distance matrix over
very many microclusters, :class:`LwecMemoryError`); LWGP then takes the k of
highest Q_γ of its own cuts.

Memory: the cuts of every candidate k are kept as int16, (N, C) labels per
method — about 0.1 GB per million objects for C = 49; at a million objects
LWGP's automatic k took 46 s and 4.0 GB on the project's 2-core machine (mostly
LWEA's dendrogram of 29,000 microclusters; 55 s and 4.4 GB with int64 cuts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lwec_tasks.core.defaults import AUTO, DEFAULT_THETA, is_auto  # noqa: F401 - AUTO, is_auto re-exported
from lwec_tasks.core.eci import ensemble_eci
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.errors import LwecInputError, LwecMemoryError
from lwec_tasks.core.validation import check_k_range, check_theta

DEFAULT_K_MAX = 50
#: Resolution γ of the modularity criterion (chosen on the paper's ten pools).
DEFAULT_RESOLUTION = 0.6
#: Weight λ of the LWEA–LWGP agreement (NMI) in the criterion (see the module docstring).
DEFAULT_AGREEMENT = 0.15
METHODS = ("lwea", "lwgp")


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
    """The largest k ``method`` can produce on ``ensemble`` (its own input check's bound)."""
    from lwec_tasks.core.lwgp import MICROCLUSTER_LIMIT

    if check_method(method) == "lwea":
        return int(ensemble.n_microclusters)
    if ensemble.n_objects > MICROCLUSTER_LIMIT:
        return int(ensemble.n_clusters_total)
    return int(min(ensemble.n_clusters_total, ensemble.n_microclusters))


def default_ks(ensemble, method: str) -> np.ndarray:
    """Candidate ks 2..min(DEFAULT_K_MAX, largest k ``method`` can produce), (C,) int64.

    Raises :class:`LwecInputError` when not even k = 2 is possible (e.g. all
    label rows identical).
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
    """Validate candidate ``ks``: integers in 2..upper bound; returns them sorted and unique, int64."""
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


def consensus_cuts(ensemble: Ensemble, method: str, ks: np.ndarray, theta: float, random_state=None):
    """(N, len(ks)) consensus labels of ``method`` for every k (one dendrogram / eigensolve).

    Held as int16 (labels < ks.max() <= n_c): a quarter of the int64 the consensus
    functions return, while the other method's cuts are computed beside them.
    """
    from lwec_tasks.core.lwea import lwea
    from lwec_tasks.core.lwgp import lwgp

    if method == "lwea":
        cuts = lwea(ensemble, ks, theta=theta)
    else:
        cuts = lwgp(ensemble, ks, theta=theta, random_state=random_state)
    return cuts.astype(np.int16) if int(np.max(ks)) <= np.iinfo(np.int16).max else cuts


def partition_nmi(a: np.ndarray, b: np.ndarray) -> float:
    """Max-normalised NMI, I(a; b) / max(H(a), H(b)), of two labelings (1.0 if both are constant)."""
    _, a = np.unique(a, return_inverse=True)
    _, b = np.unique(b, return_inverse=True)
    n = len(a)
    ka, kb = int(a.max()) + 1, int(b.max()) + 1
    joint = np.bincount(a * kb + b, minlength=ka * kb).astype(np.float64)
    joint = joint[joint > 0] / n
    pa = np.bincount(a).astype(np.float64) / n
    pb = np.bincount(b).astype(np.float64) / n
    ha, hb = -float((pa * np.log(pa)).sum()), -float((pb * np.log(pb)).sum())
    if max(ha, hb) <= 0.0:
        return 1.0
    mutual = float((joint * np.log(joint)).sum()) + ha + hb
    return max(0.0, mutual) / max(ha, hb)


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


def auto_consensus(
    labels, method: str, theta: float = DEFAULT_THETA, ks=None, random_state=None,
    resolution: float = DEFAULT_RESOLUTION, agreement: float = DEFAULT_AGREEMENT,
) -> tuple[KSelection, np.ndarray]:
    """Choose k and return (selection, (N,) consensus labels at the chosen k).

    Arguments as :func:`select_k`; the labels come from the same cuts the
    criterion scored, so they equal ``lwea(labels, selection.k)`` (or ``lwgp``
    with the same ``random_state``).
    """
    method = check_method(method)
    theta = check_theta(theta)
    ensemble = as_ensemble(labels)
    ks = check_ks(ks, ensemble, method)
    other = "lwgp" if method == "lwea" else "lwea"
    if method == "lwea" and random_state is None:
        random_state = 0  # the LWGP cuts LWEA is compared with: deterministic
    other_ks = ks[ks <= k_upper_bound(ensemble, other)]  # ks is sorted: a prefix
    cuts = consensus_cuts(ensemble, method, ks, theta, random_state)
    try:
        other_cuts = consensus_cuts(ensemble, other, other_ks, theta, random_state) if len(other_ks) else None
    except LwecMemoryError:
        other_cuts = None  # e.g. LWEA's dendrogram of too many microclusters: this method's cuts alone
    scores = joint_scores(ensemble, ensemble_eci(ensemble, theta), cuts, other_cuts, resolution, agreement)
    best = int(np.argmax(scores))  # ties: the smallest k
    criterion = (f"mean LWCA modularity (γ={resolution:g}) + {agreement:g}·NMI(LWEA, LWGP)" if other_cuts is not None
                 else f"LWCA modularity (γ={resolution:g}) of the {method.upper()} cuts")
    if method == "lwgp" and other_cuts is not None and best < other_cuts.shape[1]:
        joint_k = int(ks[best])
        scores = match_scores(cuts, other_cuts[:, best])
        best = int(np.argmax(scores))
        criterion = f"NMI(LWGP cut, LWEA cut at k*={joint_k}); k* by {criterion}"
    return KSelection(int(ks[best]), ks, scores, criterion), cuts[:, best].astype(np.int64)


def select_k(
    ensemble, method: str, theta: float = DEFAULT_THETA, ks=None, random_state=None,
    resolution: float = DEFAULT_RESOLUTION, agreement: float = DEFAULT_AGREEMENT,
) -> KSelection:
    """Choose the number of consensus clusters from the ensemble alone.

    Parameters
    ----------
    ensemble : array-like (N, M) or Ensemble
    method : "lwea" or "lwgp" (case-insensitive)
    theta : float, default 0.4
    ks : sequence of int, default :func:`default_ks` (2..min(50, what ``method`` can produce))
    random_state : None, int or RandomState; seeds LWGP's k-means (for LWEA the
        LWGP cuts the criterion compares with; None means 0 there)
    resolution : γ of the modularity, default ``DEFAULT_RESOLUTION``
    agreement : λ, weight of the LWEA–LWGP NMI, default ``DEFAULT_AGREEMENT``

    Returns
    -------
    KSelection. LWEA: the k* maximising ½ (Q_γ(LWEA cut) + Q_γ(LWGP cut)) + λ NMI(LWEA cut,
    LWGP cut), Q_γ the modularity in the LWCA graph. LWGP: the k whose LWGP cut has the
    highest NMI with the LWEA cut at k* (module docstring).
    """
    return auto_consensus(ensemble, method, theta, ks, random_state, resolution, agreement)[0]
