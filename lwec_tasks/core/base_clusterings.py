"""Base clusterings by k-means with a random number of clusters (paper §V-A)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans, MiniBatchKMeans
from threadpoolctl import threadpool_limits

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.seeds import base_seed, derived_seed
from lwec_tasks.core.validation import check_integer

# Above this many objects, base clusterings use mini-batch k-means.
MINIBATCH_THRESHOLD = 100_000


def _check_features(X) -> np.ndarray:
    if isinstance(X, pd.DataFrame):
        non_numeric = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
        if non_numeric:
            raise LwecInputError(f"features have non-numeric column(s): {', '.join(non_numeric)}")
        names = [str(c) for c in X.columns]
        X = X.to_numpy(dtype=np.float64)
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "iuf":
            raise LwecInputError(f"features must be numeric, got dtype {X.dtype}")
        names = [f"column {j}" for j in range(X.shape[1])] if X.ndim == 2 else []
        X = X.astype(np.float64, copy=False)
    if X.ndim != 2:
        raise LwecInputError(f"features must be 2-D (N objects × d features), got shape {X.shape}")
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise LwecInputError(f"features need at least 2 rows and 1 column, got shape {X.shape}")
    bad = ~np.isfinite(X)
    if bad.any():
        column = int(np.argmax(bad.any(axis=0)))
        raise LwecInputError(
            f"features column {names[column]!r} has {int(bad[:, column].sum())} NaN/inf value(s)"
            f" ({int(bad.sum())} in all)"
        )
    return X


#: Number of base clusterings M when none is given (the paper's ensemble size).
DEFAULT_ENSEMBLE_SIZE = 10


def generate_base_clusterings(
    X, n_clusterings: int = DEFAULT_ENSEMBLE_SIZE, k_min: int = 2, k_max: int | None = None, random_state=None
) -> np.ndarray:
    """Build an ensemble of k-means base clusterings.

    Parameters
    ----------
    X : array-like or DataFrame of shape (N, d), finite numbers
    n_clusterings : int, default 10
        M, the number of base clusterings.
    k_min, k_max : int
        Each clustering's k is drawn uniformly from [k_min, k_max]; ``k_max``
        defaults to ⌊√N⌋ (paper §V-A) and is capped at N.
    random_state : None, int or RandomState
        The same seed gives the same labels.

    Returns
    -------
    ndarray of shape (N, M), int64 labels 0..k−1 per column.
    """
    X = _check_features(X)
    n = X.shape[0]
    n_clusterings = check_integer("n_clusterings", n_clusterings, 1)
    k_min = check_integer("k_min", k_min, 2)
    if k_max is None:
        k_max = max(math.isqrt(n), k_min)
    else:
        k_max = check_integer("k_max", k_max, 2)
    if k_min > k_max:
        raise LwecInputError(f"k_min ({k_min}) is larger than k_max ({k_max})")
    if k_max > n:
        raise LwecInputError(f"k_max ({k_max}) is larger than the number of objects ({n})")
    base = base_seed(random_state)
    rng = np.random.default_rng(base)
    ks = rng.integers(k_min, k_max + 1, size=n_clusterings)
    labels = np.empty((n, n_clusterings), dtype=np.int64)
    # One thread per k-means: the fits are short, and scikit-learn's OpenMP/BLAS
    # threads spin-wait badly when the other core is busy (3–10× slower then).
    # The labels do not depend on the thread count.
    with threadpool_limits(1):
        for m, k in enumerate(ks):
            seed = derived_seed(base, m)
            if n > MINIBATCH_THRESHOLD:
                model = MiniBatchKMeans(
                    n_clusters=int(k), n_init=1, random_state=seed, batch_size=4096
                )
            else:
                model = KMeans(n_clusters=int(k), n_init=1, random_state=seed)
            labels[:, m] = model.fit_predict(X)
    return labels
