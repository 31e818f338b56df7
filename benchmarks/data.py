"""Ensembles the benchmarks run on: the authors' pools and synthetic ones."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parents[1]
ENSEMBLE_SIZE = 10
DRAW_SEED = 0


def pools_dir() -> Path | None:
    """$LWEC_POOLS_DIR, else ../shared/data/pools next to the project; None if absent."""
    for candidate in (os.environ.get("LWEC_POOLS_DIR"), PROJECT_ROOT.parent / "shared/data/pools"):
        if candidate and Path(candidate).is_dir() and any(Path(candidate).glob("bc_pool_*.mat")):
            return Path(candidate)
    return None


def pool_available(name: str) -> bool:
    directory = pools_dir()
    return directory is not None and (directory / f"bc_pool_{name}.mat").exists()


def load_ensemble(spec: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(labels N × M, ground truth or None) for a spec.

    ``pool:LR`` — M = 10 columns drawn (seed 0) from the authors' LR pool;
    ``synthetic:N[:k_min:k_max]`` — :func:`lwec_tasks.core.synthetic.synthetic_ensemble`.
    """
    kind, _, rest = spec.partition(":")
    if kind == "pool":
        from scipy.io import loadmat

        data = loadmat(pools_dir() / f"bc_pool_{rest}.mat")
        members = data["members"].astype(np.int64)
        columns = np.random.default_rng(DRAW_SEED).choice(members.shape[1], ENSEMBLE_SIZE, replace=False)
        return members[:, columns], data["gt"].ravel().astype(np.int64)
    if kind == "synthetic":
        from lwec_tasks.core.synthetic import synthetic_ensemble

        parts = [int(float(p)) for p in rest.split(":")]
        n = parts[0]
        k_min, k_max = (parts[1], parts[2]) if len(parts) == 3 else (100, 1000)
        labels, truth = synthetic_ensemble(n, ENSEMBLE_SIZE, k_min=k_min, k_max=k_max)
        return labels, truth
    raise ValueError(f"unknown ensemble spec {spec!r}")
