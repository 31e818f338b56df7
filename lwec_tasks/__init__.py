"""lwec: locally weighted ensemble clustering (Huang, Wang, Lai; IEEE T-CYB 2018).

The numeric core (this package's top level) imports no Prefect or MLflow; the
pipeline tasks and I/O edges live in their own modules and the flows in
:mod:`flows`.
"""

__version__ = "0.1.0"

import importlib

#: Public name → module that defines it. Loaded on first use (PEP 562), so a
#: command that only checks its input does not import numba and scikit-learn.
_EXPORTS = {
    "generate_base_clusterings": "lwec_tasks.core.base_clusterings",
    "cluster_uncertainty": "lwec_tasks.core.eci",
    "eci": "lwec_tasks.core.eci",
    "Ensemble": "lwec_tasks.core.ensemble",
    "LwecInputError": "lwec_tasks.core.errors",
    "LwecMemoryError": "lwec_tasks.core.errors",
    "LWEA": "lwec_tasks.core.estimators",
    "LWGP": "lwec_tasks.core.estimators",
    "lwca": "lwec_tasks.core.lwca",
    "lwea": "lwec_tasks.core.lwea",
    "lwea_linkage": "lwec_tasks.core.lwea",
    "lwgp": "lwec_tasks.core.lwgp",
    "ari": "lwec_tasks.core.metrics",
    "nmi": "lwec_tasks.core.metrics",
    "score_cuts": "lwec_tasks.core.metrics",
}


def lazy_attributes(package: str, exports: dict[str, str]):
    """``__getattr__`` and ``__dir__`` (PEP 562) for ``package``: each name of ``exports`` (name → module that
    defines it) is imported on first use and then kept in the package's namespace."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
