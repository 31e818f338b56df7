"""The library's base-clustering rule (:func:`lwec_tasks.core.base_clusterings.generate_base_clusterings`) on
partitioned rows.

Which rows each k-means model is fitted on depends only on N and the run's seed: all rows up to
``LARGE_N``, else a seeded sample of ``SAMPLE_SIZE`` row positions per clustering (with k capped at
``LARGE_N_K_MAX``). Positions are in the table's id order, so they do not depend on the partitioning:
the flow gathers those rows from the partitions, the executor fits the same models the library fits,
and every partition assigns its rows to the nearest centre — the library's labels. The constants are read
from the core module at call time, so the library and the pipeline always follow one rule. With a mix of
generators (:mod:`lwec_tasks.core.generators`) each clustering is fitted on its generator's rows and becomes a
set of labelled prototypes; rows are still placed by their nearest centre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lwec_tasks.core import base_clusterings as local_rule
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.generators import fit_generator, fit_rows, prototype_budget
from lwec_tasks.core.mixes import DEFAULT_MIX, mix_kinds
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.thread_pools import single_threaded


@dataclass(frozen=True)
class BasePlan:
    """What decides the M base clusterings of N rows.

    ks : (M,) number of clusters of each base clustering
    seeds : (M,) k-means seed of each
    samples : M sorted arrays of the row positions (in id order) each model is fitted on
    kinds : M generator names (all "kmeans" for the paper's protocol)
    budget : the most prototypes a non-k-means model keeps
    """

    ks: np.ndarray
    seeds: np.ndarray
    samples: list[np.ndarray]
    kinds: tuple[str, ...] = ()
    budget: int = 0

    @property
    def positions(self) -> np.ndarray:
        """Every position some model is fitted on, sorted (the rows the flow gathers, once)."""
        # By sorting: numpy >= 2.3 answers a plain np.unique through a hash table, about ten times slower here
        # (500,000 positions: 0.3-0.6 s against 0.04 s).
        ordered = np.sort(np.concatenate(self.samples))
        return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])]


def base_plan(n_rows: int, n_clusterings: int, random_state=None, generators=DEFAULT_MIX,
              k_max: int | None = None) -> BasePlan:
    """The ks, seeds, fitting rows and generators of the base clusterings of ``n_rows`` rows: the library's
    draws, each k from [2, ``k_max``] (default: the paper's rule,
    :func:`~lwec_tasks.core.base_clusterings.paper_k_max`)."""
    base = base_seed(random_state)
    if k_max is None:
        k_max = local_rule.paper_k_max(n_rows)
    elif not 2 <= int(k_max) <= n_rows:
        raise LwecInputError(f"k_max ({k_max}) must be from 2 to the number of rows ({n_rows})")
    ks = np.random.default_rng(base).integers(2, int(k_max) + 1, size=n_clusterings).astype(np.int64)
    seeds = np.array([derived_seed(base, m) for m in range(n_clusterings)], dtype=np.int64)
    kinds = mix_kinds(generators, n_clusterings)
    every_row = np.arange(n_rows)
    samples = []
    for seed, kind in zip(seeds, kinds):
        size = fit_rows(kind, n_rows, local_rule.LARGE_N, local_rule.SAMPLE_SIZE)
        samples.append(every_row if size >= n_rows else
                       np.sort(np.random.default_rng(int(seed)).choice(n_rows, size=size, replace=False)))
    return BasePlan(ks, seeds, samples, kinds, prototype_budget(n_rows, local_rule.LARGE_N))


@dataclass(frozen=True)
class FittedKMeans:
    """A fitted base k-means model (scikit-learn's ``KMeans``) under a type of this package: a Dask client told that
    a result is ready unpickles the result's type, and a ``KMeans`` there would import scikit-learn in a flow
    process that fits nothing."""

    model: object

    @property
    def cluster_centers_(self) -> np.ndarray:
        """(k, d) the model's centres."""
        return self.model.cluster_centers_

    def predict(self, X: np.ndarray) -> np.ndarray:
        """(n,) each row's nearest centre, by scikit-learn's ``KMeans.predict``."""
        return self.model.predict(X)


def fit_base_model(sample: np.ndarray, k: int, seed: int, kind: str = "kmeans", budget: int = 0, *,
                   rows: np.ndarray, positions: np.ndarray):
    """Generator ``kind`` on the ``sample`` positions, taken from ``rows`` gathered at ``positions``: k-means (one
    initialisation, a :class:`FittedKMeans`), or a :class:`~lwec_tasks.core.generators.Prototypes` model of at most
    ``budget`` prototypes."""
    with single_threaded():
        X = rows[np.searchsorted(positions, sample)]
        if kind != "kmeans":
            return fit_generator(kind, X, int(k), int(seed), int(budget))
        from sklearn.cluster import KMeans

        return FittedKMeans(KMeans(n_clusters=int(k), n_init=1, random_state=int(seed)).fit(X))


def assign_base_labels(X: np.ndarray, models: list) -> np.ndarray:
    """(M, n) int32: each row's cluster (its nearest centre's) in every model; X is (n, d) standardised, finite
    (LwecInputError otherwise)."""
    # X is checked once here rather than by each of the M predicts (a pass over X each); a sum of finite
    # values is finite unless it overflows.
    if not np.isfinite(X.sum()) and not np.isfinite(X).all():
        raise LwecInputError("standardised features hold a NaN or ±inf value; the base clusterings cannot "
                             "assign such rows")
    from sklearn import config_context

    codes = np.empty((len(models), len(X)), dtype=np.int32)
    with single_threaded(), config_context(assume_finite=True):
        for m, model in enumerate(models):
            codes[m] = model.predict(X)
    return codes
