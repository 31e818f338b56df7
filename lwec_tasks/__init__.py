"""lwec: locally weighted ensemble clustering (Huang, Wang, Lai; IEEE T-CYB 2018).

The numeric core (this package's top level) imports no Prefect or MLflow; the
pipeline tasks live in :mod:`lwec_tasks.tasks` and the flows in :mod:`flows`.
"""

__version__ = "0.1.0"

from lwec_tasks.ensemble import Ensemble
from lwec_tasks.errors import LwecInputError, LwecMemoryError
from lwec_tasks.lwca import lwca
from lwec_tasks.lwea import lwea
from lwec_tasks.uncertainty import cluster_uncertainty, eci

__all__ = [
    "Ensemble",
    "LwecInputError",
    "LwecMemoryError",
    "cluster_uncertainty",
    "eci",
    "lwca",
    "lwea",
]
