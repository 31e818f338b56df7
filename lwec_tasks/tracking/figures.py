"""Figures logged with a consensus run (matplotlib ``Figure`` objects, no pyplot state)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure


def eci_figure(eci: np.ndarray, theta: float) -> Figure:
    """Histogram of the ECI of every base cluster, shape (n_c,)."""
    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.add_subplot()
    axes.hist(eci, bins=min(30, max(5, len(eci) // 3)), range=(0.0, 1.0), color="#4C72B0", edgecolor="white")
    axes.axvline(float(np.mean(eci)), color="#C44E52", linestyle="--", label=f"mean {np.mean(eci):.3f}")
    axes.set_xlabel("ensemble-driven cluster index (ECI)")
    axes.set_ylabel("number of base clusters")
    axes.set_title(f"ECI of {len(eci)} base clusters (θ = {theta:g})")
    axes.legend()
    return figure


def cluster_size_figure(labels: np.ndarray, method: str) -> Figure:
    """Bar chart of consensus cluster sizes, largest first; ``labels`` shape (N,)."""
    return cluster_size_bars(np.bincount(np.asarray(labels, dtype=np.int64)), method)


def cluster_size_bars(sizes: np.ndarray, method: str) -> Figure:
    """Bar chart of consensus cluster sizes given as counts, shape (k,), largest first."""
    sizes = np.sort(np.asarray(sizes, dtype=np.int64))[::-1]
    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.add_subplot()
    axes.bar(np.arange(1, len(sizes) + 1), sizes, color="#55A868")
    axes.set_xlabel("consensus cluster (by size)")
    axes.set_ylabel("objects")
    axes.set_title(f"{method.upper()}: {int((sizes > 0).sum())} clusters, {int(sizes.sum())} objects")
    return figure
