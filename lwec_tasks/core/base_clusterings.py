"""Base clusterings by k-means with a random number of clusters (paper §V-A), or by a mix of generators.

Up to :data:`LARGE_N` objects this is the paper's protocol: each of the M
clusterings is k-means (one initialisation) on all rows with k drawn uniformly
from [2, ⌊√N⌋]. Above it, the cost is kept linear in N: k is drawn from
[2, min(⌊√N⌋, :data:`LARGE_N_K_MAX`)] (or ``k_max``), each k-means is fitted on
its own seeded uniform sample of :data:`SAMPLE_SIZE` rows, and every row is then
assigned to its nearest centre in chunks of :data:`ASSIGN_CHUNK` rows.

The M fits are independent and run concurrently on ``n_jobs`` threads (one
BLAS/OpenMP thread each; scikit-learn releases the GIL in its k-means loops).
Each fit's seed is derived from ``random_state`` and its index alone, so the
labels do not depend on the number of workers.

``generators`` chooses each clustering's generator (:mod:`lwec_tasks.core.generators`); the default,
``"kmeans"``, is the paper's protocol above. The ks and seeds are drawn the same way whatever the mix.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lwec_tasks.core.defaults import DEFAULT_ENSEMBLE_SIZE
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.feature_checks import as_float_features, check_finite_features
from lwec_tasks.core.generators import fit_generator, fit_rows, load_libraries, prototype_budget
from lwec_tasks.core.mixes import DEFAULT_MIX, mix_kinds
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.thread_pools import single_threaded
from lwec_tasks.core.validation import check_integer
from lwec_tasks.core.views import ViewModel, view_columns, view_k

#: Above this many objects the fits are sampled and k is capped (see the module docstring).
LARGE_N = 100_000
#: Rows each large-N k-means is fitted on (a fresh seeded uniform sample per clustering).
SAMPLE_SIZE = 50_000
#: Largest k drawn above :data:`LARGE_N` unless ``k_max`` is given.
LARGE_N_K_MAX = 50
#: Rows assigned to their nearest centre per step above :data:`LARGE_N`.
ASSIGN_CHUNK = 500_000


def paper_k_max(n_rows: int) -> int:
    """The largest k of the paper's rule for N = ``n_rows`` objects: ⌊√N⌋, capped at :data:`LARGE_N_K_MAX` above
    :data:`LARGE_N` (at least 2)."""
    root = math.isqrt(n_rows)
    return max(min(root, LARGE_N_K_MAX) if n_rows > LARGE_N else root, 2)


def nearest_cube_root(n: int) -> int:
    """The integer nearest ∛n for an integer n ≥ 0 (exact: no rounding of a float decides it)."""
    c = int(round(n ** (1.0 / 3.0)))
    while c > 0 and c ** 3 > n:
        c -= 1
    while (c + 1) ** 3 <= n:
        c += 1
    # c = ⌊∛n⌋; c + 1 is nearer when n ≥ (c + ½)³, i.e. 8n ≥ (2c + 1)³ (never equal: (2c + 1)³ is odd)
    return c + 1 if 8 * n > (2 * c + 1) ** 3 else c


def categorical_k_max(n_rows: int, n_clusters: int | None = None) -> int:
    """The largest k of the base clusterings of a run on a table with a weighted text or boolean column
    (:attr:`~lwec_tasks.core.encoding.TableEncoding.weighted_categories`): the larger of the integer nearest ∛N
    and twice the requested k (``n_clusters``; None when k is chosen by the run), never above
    :func:`paper_k_max` (at least 2).

    The paper's [2, ⌊√N⌋] on such a table gives many base clusterings far finer than the clusters, which split
    rows by their combinations of levels and keep rows sharing them together through the consensus; a range up
    to max(∛N, 2k) was chosen on generated mixed tables (``benchmarks/mixed_types.py``, docs/pipeline.md). Above
    about 125,000 rows ∛N reaches the paper's cap of 50, so large tables keep the paper's range."""
    wanted = max(nearest_cube_root(int(n_rows)), 2 * int(n_clusters) if n_clusters is not None else 0)
    return max(min(wanted, paper_k_max(int(n_rows))), 2)


def _check_features(X) -> np.ndarray:
    if isinstance(X, pd.DataFrame):
        non_numeric = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
        if non_numeric:
            raise LwecInputError(f"features have non-numeric column(s): {', '.join(non_numeric)}")
        names = [str(c) for c in X.columns]
        X = X.to_numpy(dtype=np.float64)
    else:
        X = as_float_features(np.asarray(X))
        names = [f"column {j}" for j in range(X.shape[1])] if X.ndim == 2 else []
    if X.ndim != 2:
        raise LwecInputError(f"features must be 2-D (N objects × d features), got shape {X.shape}")
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise LwecInputError(f"features need at least 2 rows and 1 column, got shape {X.shape}")
    check_finite_features(X, names)
    return X


@dataclass(frozen=True)
class BaseClusterings:
    """The M k-means base clusterings and the centres that define them.

    Attributes
    ----------
    labels : ndarray (N, M) int64; column m holds each row's cluster in clustering m: its nearest centre's
    centres : tuple of M arrays (P_m, d) float64, in the space of the rows clustered
        (the standardised features in the pipeline): k-means centres, or a generator's prototypes
    centre_labels : tuple of M arrays (P_m,) int64, the cluster of each centre (0..P_m−1 for k-means)
    views : (M, d) bool, the columns each clustering saw (its centres are 0 outside them), or None: every column
    """

    labels: np.ndarray
    centres: tuple[np.ndarray, ...]
    centre_labels: tuple[np.ndarray, ...] = ()
    views: np.ndarray | None = None


def generate_base_clusterings(
    X,
    n_clusterings: int = DEFAULT_ENSEMBLE_SIZE,
    k_min: int = 2,
    k_max: int | None = None,
    random_state=None,
    n_jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    generators=DEFAULT_MIX,
    views=None,
) -> np.ndarray:
    """The labels of :func:`fit_base_clusterings` (same parameters): ndarray (N, M), int64 0..k−1 per column."""
    return fit_base_clusterings(X, n_clusterings, k_min, k_max, random_state, n_jobs, progress, generators,
                                views).labels


def fit_base_clusterings(
    X,
    n_clusterings: int = DEFAULT_ENSEMBLE_SIZE,
    k_min: int = 2,
    k_max: int | None = None,
    random_state=None,
    n_jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    generators=DEFAULT_MIX,
    views=None,
) -> BaseClusterings:
    """Build an ensemble of k-means base clusterings and keep their centres.

    Parameters
    ----------
    X : array-like or DataFrame of shape (N, d), finite numbers
    n_clusterings : int, default 10
        M, the number of base clusterings.
    k_min, k_max : int
        Each clustering's k is drawn uniformly from [k_min, k_max]; ``k_max``
        defaults to ⌊√N⌋ (paper §V-A), capped at :data:`LARGE_N_K_MAX` when
        N > :data:`LARGE_N`.
    random_state : None, int or RandomState
        The same seed gives the same labels, whatever ``n_jobs``.
    n_jobs : int, optional
        Fits run at once; default: every core this process may use.
    progress : callable(m, k), optional
        Called as each clustering m (0-based) with k clusters finishes (from a worker thread).
    generators : str or dict, default "kmeans"
        The mix of generators (:func:`lwec_tasks.core.generators.parse_mix`): ``"kmeans"`` (the paper),
        a named mix such as ``"lwec"``, or weights ``"kmeans:4,genie:3,spectral:3"``.
    views : (M, d) bool, optional
        The columns each clustering is fitted on and places rows by (:mod:`lwec_tasks.core.views`); default:
        every column.

    Returns
    -------
    BaseClusterings: ``labels`` (N, M) int64 0..k_m−1 per column (each row's nearest
    centre, as scikit-learn's ``labels_``/``predict`` give it) and ``centres``, M
    arrays (k_m, d) float64.
    """
    X = _check_features(X)
    n = X.shape[0]
    n_clusterings = check_integer("n_clusterings", n_clusterings, 1)
    k_min = check_integer("k_min", k_min, 2)
    large = n > LARGE_N
    if k_max is None:
        k_max = max(paper_k_max(n), k_min)
    else:
        k_max = check_integer("k_max", k_max, 2)
    if k_min > k_max:
        raise LwecInputError(f"k_min ({k_min}) is larger than k_max ({k_max})")
    if k_max > n:
        raise LwecInputError(f"k_max ({k_max}) is larger than the number of objects ({n})")
    n_jobs = len(os.sched_getaffinity(0)) if n_jobs is None else check_integer("n_jobs", n_jobs, 1)
    base = base_seed(random_state)
    ks = np.random.default_rng(base).integers(k_min, k_max + 1, size=n_clusterings)
    kinds = mix_kinds(generators, n_clusterings)
    views = _check_views(views, n_clusterings, X.shape[1])
    labels = np.empty((n, n_clusterings), dtype=np.int64)
    centres: list[np.ndarray | None] = [None] * n_clusterings
    owners: list[np.ndarray | None] = [None] * n_clusterings

    def fit(m: int) -> None:
        seed, k = derived_seed(base, m), int(ks[m])
        columns = None if views is None else view_columns(views[m])
        if columns is not None:
            model = _fit_view(X, columns, kinds[m], k, seed)
            for start in range(0, n, ASSIGN_CHUNK):
                labels[start:start + ASSIGN_CHUNK, m] = model.predict(X[start:start + ASSIGN_CHUNK])
        elif kinds[m] != "kmeans":
            size = fit_rows(kinds[m], n, LARGE_N, SAMPLE_SIZE)
            sample = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False)) if size < n else None
            model = fit_generator(kinds[m], X if sample is None else X[sample], k, seed, prototype_budget(n, LARGE_N))
            labels[:, m] = model.predict(X)
        else:
            from sklearn.cluster import KMeans

            model = KMeans(n_clusters=k, n_init=1, random_state=seed)
            if not large:
                labels[:, m] = model.fit_predict(X)
            else:
                sample = np.sort(np.random.default_rng(seed).choice(n, size=min(SAMPLE_SIZE, n), replace=False))
                model.fit(X[sample])
                for start in range(0, n, ASSIGN_CHUNK):
                    labels[start:start + ASSIGN_CHUNK, m] = model.predict(X[start:start + ASSIGN_CHUNK])
        centres[m] = np.asarray(model.cluster_centers_, dtype=np.float64)
        owners[m] = np.asarray(getattr(model, "centre_labels", np.arange(len(centres[m]))), dtype=np.int64)
        if progress is not None:
            progress(m, k)

    # One BLAS/OpenMP thread per fit: the parallelism is across fits, and
    # scikit-learn's threads spin-wait badly when the other cores are busy.
    load_libraries(kinds)
    with single_threaded(), ThreadPoolExecutor(max_workers=min(n_jobs, n_clusterings)) as pool:
        list(pool.map(fit, range(n_clusterings)))  # list() re-raises the first failed fit
    return BaseClusterings(labels, tuple(centres), tuple(owners), views)


def _fit_view(X: np.ndarray, columns: np.ndarray, kind: str, k: int, seed: int) -> ViewModel:
    """Generator ``kind`` fitted on the view ``columns`` of its fitting rows (the rows it is fitted on without a
    view), k capped by :func:`~lwec_tasks.core.views.view_k`."""
    n = X.shape[0]
    size = fit_rows(kind, n, LARGE_N, SAMPLE_SIZE)
    sample = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False)) if size < n else None
    rows = np.ascontiguousarray((X if sample is None else X[sample])[:, columns])
    k = view_k(rows, k)
    if kind != "kmeans":
        model = fit_generator(kind, rows, k, seed, prototype_budget(n, LARGE_N))
    else:
        from sklearn.cluster import KMeans

        model = KMeans(n_clusters=k, n_init=1, random_state=seed).fit(rows)
    return ViewModel(model, columns, X.shape[1])


def _check_views(views, n_clusterings: int, d: int) -> np.ndarray | None:
    """``views`` as (M, d) bool (None stays None); each clustering must see some column."""
    if views is None:
        return None
    views = np.asarray(views, dtype=bool)
    if views.shape != (n_clusterings, d) or not views.any(axis=1).all():
        raise LwecInputError(f"views must be ({n_clusterings}, {d}) with a column in every row, got {views.shape}")
    return views
