"""Shared fixtures: the authors' base-clustering pools (optional) and hypothesis settings."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# numba compiles on first use; no per-example deadline.
settings.register_profile("lwec", deadline=None, max_examples=60)
settings.load_profile("lwec")

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def pools_dir() -> Path | None:
    """Folder with bc_pool_*.mat: $LWEC_POOLS_DIR, else ../shared/data/pools."""
    candidates = [os.environ.get("LWEC_POOLS_DIR"), PROJECT_ROOT.parent / "shared/data/pools"]
    for candidate in candidates:
        if candidate and Path(candidate, "bc_pool_VS.mat").exists():
            return Path(candidate)
    return None


def paper_scores_path() -> Path | None:
    directory = pools_dir()
    path = directory.parent / "paper_scores.csv" if directory else None
    return path if path and path.exists() else None


def load_pool(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(members N × P int64, ground truth N) of an authors' pool; skips the test if absent."""
    directory = pools_dir()
    if directory is None:
        pytest.skip("authors' pools not found (set LWEC_POOLS_DIR or place them in ../shared/data/pools)")
    from scipy.io import loadmat

    data = loadmat(directory / f"bc_pool_{name}.mat")
    return data["members"].astype(np.int64), data["gt"].ravel().astype(np.int64)


def draw_ensemble(members: np.ndarray, size: int, seed: int, run: int = 0) -> np.ndarray:
    """``size`` columns drawn without replacement from a pool; run ``run`` of seed ``seed``."""
    rng = np.random.default_rng([seed, run])
    return members[:, rng.choice(members.shape[1], size, replace=False)]
