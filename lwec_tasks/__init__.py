"""lwec: locally weighted ensemble clustering (Huang, Wang, Lai; IEEE T-CYB 2018).

The numeric core (this package's top level) imports no Prefect or MLflow; the
pipeline tasks and I/O edges live in their own modules and the flows in
:mod:`flows`.
"""

__version__ = "0.1.0"

from lwec_tasks.ensemble import Ensemble
from lwec_tasks.errors import LwecInputError, LwecMemoryError
from lwec_tasks.estimators import LWEA, LWGP
from lwec_tasks.generate import generate_base_clusterings
from lwec_tasks.lwca import lwca
from lwec_tasks.lwea import lwea
from lwec_tasks.lwgp import lwgp
from lwec_tasks.metrics import ari, nmi, score_cuts
from lwec_tasks.uncertainty import cluster_uncertainty, eci

__all__ = [
    "LWEA",
    "LWGP",
    "Ensemble",
    "LwecInputError",
    "LwecMemoryError",
    "ari",
    "cluster_uncertainty",
    "eci",
    "generate_base_clusterings",
    "lwca",
    "lwea",
    "lwgp",
    "nmi",
    "score_cuts",
]
