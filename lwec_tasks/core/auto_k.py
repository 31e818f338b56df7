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
when the other method does not fit in memory (LWEA's cluster counts over
extremely many microclusters, :class:`LwecMemoryError`); LWGP then takes the k of
highest Q_γ of its own cuts.

With the objects' features (``features=``; a run passes its standardised rows) the score adds
``SILHOUETTE_WEIGHT`` (1) × the silhouette of LWEA's cut at k in geodesic distance, the shortest path in the
5-nearest-neighbour graph of the rows (:mod:`lwec_tasks.core.geodesic`), and takes γ = ``FEATURE_RESOLUTION``
= 0.2, λ = ``FEATURE_AGREEMENT`` = 0.3. The modularity splits groups that are chains, rings or crescents
(on two moons it scores six pieces above the two moons); along such a group the geodesic silhouette of its
pieces is poor, so the sum keeps it whole. The constants were chosen together on the clustering battery's dev
half and reported on data the choice never saw (docs/decisions.md, *Automatic k with the features*). Without
features (the library on an ensemble alone, the paper's pools) the score is the one above.

Cost: above ``SELECTION_SAMPLE`` (20,000) objects k is chosen on a seeded uniform sample of that many
objects (:func:`~lwec_tasks.core.k_criterion.selection_sample`) and the labels are the method's own
cut at the chosen k on every object, so the choice costs the same whatever N (about a second for a
ten-column ensemble on the project's 2-core machine; choosing on all of a million objects took 46 s and
4.0 GB, mostly LWEA's dendrogram of 29,000 microclusters). The cuts of every candidate k are kept as
int16, (n, C) labels per method. Every pool of the paper (at most 20,000 objects) is chosen on whole.

Layers: the code is in :mod:`lwec_tasks.core.k_criterion`, below
:mod:`lwec_tasks.core.lwgp` (whose ``n_clusters="auto"`` uses it directly);
this module binds it to :func:`~lwec_tasks.core.lwgp.lwgp` and re-exports it.
:mod:`lwec_tasks.core.lwea` sits above this module and chooses k through it.
"""


from __future__ import annotations

import numpy as np

from lwec_tasks.core import k_criterion
from lwec_tasks.core import lwgp as lwgp_module
from lwec_tasks.core.defaults import DEFAULT_THETA, is_auto  # noqa: F401 - is_auto re-exported
from lwec_tasks.core.eci import ensemble_eci  # noqa: F401 - re-exported
from lwec_tasks.core.ensemble import Ensemble, as_ensemble
from lwec_tasks.core.geodesic import SILHOUETTE_SAMPLE
from lwec_tasks.core.k_criterion import (  # noqa: F401 - re-exported
    DEFAULT_AGREEMENT,
    DEFAULT_K_MAX,
    DEFAULT_RESOLUTION,
    FEATURE_AGREEMENT,
    FEATURE_RESOLUTION,
    SILHOUETTE_WEIGHT,
    KSelection,
    check_method,
    choose_k,
    joint_scores,
    k_upper_bound,
    lwca_modularity,
    partition_nmi,
)
from lwec_tasks.core.validation import check_theta


def consensus_cuts(ensemble: Ensemble, method: str, ks: np.ndarray, theta: float, random_state=None):
    """(N, len(ks)) consensus labels of ``method`` for every k (one dendrogram / eigensolve).

    Held as int16 (labels < ks.max() <= n_c): a quarter of the int64 the consensus
    functions return, while the other method's cuts are computed beside them.
    """
    return k_criterion.consensus_cuts(ensemble, method, ks, theta, random_state, lwgp_module.lwgp)


def auto_consensus(
    labels, method: str, theta: float = DEFAULT_THETA, ks=None, random_state=None,
    resolution: float | None = None, agreement: float | None = None, features=None,
) -> tuple[KSelection, np.ndarray]:
    """Choose k and return (selection, (N,) consensus labels at the chosen k).

    Arguments as :func:`select_k`; the labels come from the same cuts the
    criterion scored, so they equal ``lwea(labels, selection.k)`` (or ``lwgp``
    with the same ``random_state``).
    """
    return _choose(labels, method, theta, ks, random_state, resolution, agreement, features, with_labels=True)


def _choose(labels, method, theta, ks, random_state, resolution, agreement, features, with_labels: bool,
            silhouette_rows: int = SILHOUETTE_SAMPLE):
    return choose_k(as_ensemble(labels), check_method(method), check_theta(theta), ks, random_state, resolution,
                    agreement, cut=consensus_cuts, with_labels=with_labels,
                    features=None if features is None else np.asarray(features, dtype=np.float64),
                    silhouette_rows=silhouette_rows)


def select_k(
    ensemble, method: str, theta: float = DEFAULT_THETA, ks=None, random_state=None,
    resolution: float | None = None, agreement: float | None = None, features=None,
    silhouette_rows: int = SILHOUETTE_SAMPLE,
) -> KSelection:
    """Choose the number of consensus clusters from the ensemble (and, when given, the objects' features).

    Parameters
    ----------
    ensemble : array-like (N, M) or Ensemble
    method : "lwea" or "lwgp" (case-insensitive)
    theta : float, default 0.4
    ks : sequence of int, default :func:`~lwec_tasks.core.k_criterion.default_ks` (2..min(50, what ``method``
        can produce))
    random_state : None, int or RandomState; seeds LWGP's k-means (for LWEA the
        LWGP cuts the criterion compares with; None means 0 there)
    resolution : γ of the modularity, default ``DEFAULT_RESOLUTION`` (0.6), with ``features``
        ``FEATURE_RESOLUTION`` (0.2)
    agreement : λ, weight of the LWEA–LWGP NMI, default ``DEFAULT_AGREEMENT`` (0.15), with ``features``
        ``FEATURE_AGREEMENT`` (0.3)
    features : None or array-like (N, d), one finite row per object (a run passes its standardised
        features): adds ``SILHOUETTE_WEIGHT`` × the geodesic silhouette of LWEA's cut at each k
        (:mod:`lwec_tasks.core.geodesic`, on a seeded sample of at most ``silhouette_rows`` objects)
    silhouette_rows : int, default ``SILHOUETTE_SAMPLE`` (1,500)

    Returns
    -------
    KSelection. LWEA: the k* maximising ½ (Q_γ(LWEA cut) + Q_γ(LWGP cut)) + λ NMI(LWEA cut,
    LWGP cut) [+ SILHOUETTE_WEIGHT · silhouette(LWEA cut)], Q_γ the modularity in the LWCA graph.
    LWGP: the k whose LWGP cut has the highest NMI with the LWEA cut at k* (module docstring).
    """
    return _choose(ensemble, method, theta, ks, random_state, resolution, agreement, features, with_labels=False,
                   silhouette_rows=silhouette_rows)[0]
