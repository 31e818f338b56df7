"""Defaults and the "auto" literal shared by the numeric core, the run parameters and the CLI.

Only the standard library here: the command line reads these before it decides
whether the numeric core (numba, scikit-learn) is needed at all.
"""

from __future__ import annotations

#: The paper's θ (ECI's sharpness), §V-B.
DEFAULT_THETA = 0.4
#: Base clusterings per run (M), as in the paper's experiments.
DEFAULT_ENSEMBLE_SIZE = 10
#: The value of ``n_clusters`` that asks for an automatic choice of k.
AUTO = "auto"


def is_auto(n_clusters) -> bool:
    """Whether ``n_clusters`` asks for the automatic choice (the string "auto", any case)."""
    return isinstance(n_clusters, str) and n_clusters.strip().lower() == AUTO
