"""scikit-learn estimators over a label matrix of base clusterings."""

from __future__ import annotations

from sklearn.base import BaseEstimator, ClusterMixin

from lwec_tasks.core.auto_k import auto_consensus, is_auto
from lwec_tasks.core.eci import DEFAULT_THETA, ensemble_eci, ensemble_uncertainty
from lwec_tasks.core.ensemble import as_ensemble
from lwec_tasks.core.lwea import lwea
from lwec_tasks.core.lwgp import lwgp
from lwec_tasks.core.validation import check_theta


class _LocallyWeightedConsensus(ClusterMixin, BaseEstimator):
    """Shared fit logic: encode once, compute H^Π and ECI, then the consensus of ``_method``."""

    _method: str

    def fit(self, X, y=None):
        """Fit on an (N, M) label matrix of base clusterings: sets ``labels_``, ``n_clusters_`` and
        ``k_selection_`` (None unless n_clusters="auto") besides the ensemble's attributes."""
        check_theta(self.theta)
        ensemble = as_ensemble(X)
        self.n_features_in_ = ensemble.n_columns
        self.cluster_uncertainty_ = ensemble_uncertainty(ensemble).copy()
        self.eci_ = ensemble_eci(ensemble, float(self.theta))
        self.n_microclusters_ = ensemble.n_microclusters
        random_state = getattr(self, "random_state", None)  # LWEA has none
        if is_auto(self.n_clusters):
            self.k_selection_, self.labels_ = auto_consensus(
                ensemble, self._method, float(self.theta), random_state=random_state
            )
            self.n_clusters_ = self.k_selection_.k
            return self
        if self._method == "lwea":
            self.labels_ = lwea(ensemble, self.n_clusters, theta=self.theta)
        else:
            self.labels_ = lwgp(ensemble, self.n_clusters, theta=self.theta, random_state=random_state)
        self.k_selection_ = None
        self.n_clusters_ = self.n_clusters
        return self

    def fit_predict(self, X, y=None):
        """Fit on the (N, M) label matrix ``X`` and return ``labels_``."""
        return self.fit(X).labels_


class LWEA(_LocallyWeightedConsensus):
    """Locally weighted evidence accumulation (average linkage on LWCA).

    Parameters
    ----------
    n_clusters : int, sequence of int or "auto", default 2
        A sequence gives ``labels_`` of shape (N, len(n_clusters)), all cut from
        one dendrogram. "auto" chooses k by
        :func:`lwec_tasks.core.auto_k.select_k`.
    theta : float, default 0.4

    Attributes
    ----------
    labels_ : ndarray (N,) or (N, len(n_clusters))
    n_clusters_ : int (the given or chosen k), or the given sequence of ks
    k_selection_ : KSelection of the automatic choice, None when k was given
    eci_ : ndarray (n_c,) ECI per cluster (column by column, ascending label)
    cluster_uncertainty_ : ndarray (n_c,) H^Π per cluster, bits
    n_microclusters_ : int
    n_features_in_ : int, the number of base clusterings M
    """

    _method = "lwea"

    def __init__(self, n_clusters=2, theta: float = DEFAULT_THETA):
        self.n_clusters = n_clusters
        self.theta = theta


class LWGP(_LocallyWeightedConsensus):
    """Locally weighted graph partitioning (Tcut on the locally weighted bipartite graph).

    Parameters
    ----------
    n_clusters : int, sequence of int or "auto", default 2
    theta : float, default 0.4
    random_state : None, int or RandomState, default None
        Seeds the k-means step.

    Attributes
    ----------
    labels_, n_clusters_, k_selection_, eci_, cluster_uncertainty_, n_microclusters_,
    n_features_in_ : as :class:`LWEA`
    """

    _method = "lwgp"

    def __init__(self, n_clusters=2, theta: float = DEFAULT_THETA, random_state=None):
        self.n_clusters = n_clusters
        self.theta = theta
        self.random_state = random_state
