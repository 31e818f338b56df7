"""The authors' base-clustering pools (optional): where they are, loading one, drawing ensembles."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from lwec_tasks.experiments.pools import Pool

PROJECT_ROOT = Path(__file__).resolve().parents[2]


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


def synthetic_pool(n_candidates=12, seed=0, with_truth=True) -> Pool:
    """Four blocks; each candidate clustering is the truth with noise, some split finer."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(4), [20, 15, 25, 10])
    columns = []
    for m in range(n_candidates):
        column = truth.copy()
        if m % 2:
            column[truth == 2] = 4 + (np.arange((truth == 2).sum()) % 2)
        flip = rng.random(len(truth)) < 0.15
        column[flip] = rng.integers(0, 6, flip.sum())
        columns.append(column)
    return Pool(np.column_stack(columns), truth if with_truth else None, "toy")


def save_npz(tmp_path, pool: Pool):
    """Write ``pool`` as ``<tmp_path>/toy.npz`` (members, and gt when known); returns the path."""
    path = tmp_path / "toy.npz"
    arrays = {"members": pool.members}
    if pool.truth is not None:
        arrays["gt"] = pool.truth
    np.savez(path, **arrays)
    return path
