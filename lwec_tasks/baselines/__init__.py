"""Baseline consensus functions the paper compares LWEA and LWGP against.

Every function has the calling shape of :func:`lwec_tasks.core.lwea` /
:func:`lwec_tasks.core.lwgp`: ``f(labels, n_clusters, random_state=None, **params)``
where ``labels`` is an (N, M) label matrix or an :class:`~lwec_tasks.Ensemble`,
``n_clusters`` an int (→ labels of shape (N,)) or a sequence of ints
(→ shape (N, len(n_clusters))). Deterministic methods accept and ignore
``random_state`` so that all methods can be called the same way.

See ``docs/baselines.md`` for the definition each one follows and how it is
made to scale (microclusters, sparse matrices, METIS).
"""

from lwec_tasks.baselines.bipartite import hbgf
from lwec_tasks.baselines.coassociation import eac, ncai, weac
from lwec_tasks.baselines.kmeans_consensus import kcc, sec
from lwec_tasks.baselines.strehl import cspa, mcla

__all__ = ["cspa", "eac", "hbgf", "kcc", "mcla", "ncai", "sec", "weac"]
