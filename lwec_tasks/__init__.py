"""lwec: locally weighted ensemble clustering (Huang, Wang, Lai; IEEE T-CYB 2018).

The numeric core (this package's top level) imports no Prefect or MLflow; the
pipeline tasks and I/O edges live in their own modules and the flows in
:mod:`flows`.
"""

__version__ = "0.1.0"

from lwec_tasks.core.base_clusterings import generate_base_clusterings
from lwec_tasks.core.eci import cluster_uncertainty, eci
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.errors import LwecInputError, LwecMemoryError
from lwec_tasks.core.estimators import LWEA, LWGP
from lwec_tasks.core.lwca import lwca
from lwec_tasks.core.lwea import lwea, lwea_linkage
from lwec_tasks.core.lwgp import lwgp
from lwec_tasks.core.metrics import ari, nmi, score_cuts

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
    "lwea_linkage",
    "lwgp",
    "nmi",
    "score_cuts",
]
