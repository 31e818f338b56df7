"""What the warm process imports before it starts flow runs: the flows and what their runs import on the way.

Imported once by the warm process (:mod:`lwec_tasks.worker.warm_start`); every flow run's process is forked from
it, so a run starts with these modules loaded instead of importing them (seconds for Prefect, MLflow, scikit-learn,
matplotlib and the numeric modules), with lwec's compiled kernels in the cache (compiled here when they are not:
:func:`lwec_tasks.worker.warm_kernels.compile_ahead`) and with MLflow's map of the installed distributions made
(:func:`~lwec_tasks.tracking.model.map_installed_distributions`). Everything made here is frozen (``gc.freeze``):
the collector of a forked run never walks it, so the run's pages stay shared with the warm process.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import pkgutil

from lwec_tasks.collector import imports_without_collections

#: lwec's packages a flow run uses; every module in them is imported, with what they import at the top.
LWEC_PACKAGES = ("lwec_tasks.core", "lwec_tasks.io", "lwec_tasks.executors", "lwec_tasks.stages",
                 "lwec_tasks.tasks", "lwec_tasks.tracking")
#: Modules a flow run imports only inside functions (figures, Genie, scikit-learn's fitting and scoring modules and
#: the stable ids' assignment, LWEA's dendrogram, the MLflow model and its SQL store, MLflow's tracing and serving
#: code that its model log loads and GitPython that it reads the run's git information with, Prefect's task engine,
#: and the Dask client of a run given ``dask_address``, 0.3 s alone).
RUN_TIME_MODULES = ("genieclust", "distributed", "scipy.cluster.hierarchy", "mlflow.pyfunc", "mlflow.models.signature",
                    "mlflow.models.display_utils", "mlflow.pyfunc.scoring_server", "mlflow.tracing.processor",
                    "mlflow.tracing.export", "mlflow.system_metrics.metrics", "mlflow.store.tracking.sqlalchemy_store",
                    "git", "alembic.command", "alembic.config", "sklearn.mixture", "sklearn.cluster",
                    "sklearn.neighbors", "sklearn.metrics", "scipy.optimize",
                    "adbc_driver_manager.dbapi", "adbc_driver_sqlite.dbapi", "adbc_driver_postgresql.dbapi", "psycopg",
                    "prefect.engine", "prefect.flow_engine", "prefect.task_engine", "prefect.utilities.visualization")


def import_everything() -> None:
    """Import the flows, and those of :data:`LWEC_PACKAGES`' modules and :data:`RUN_TIME_MODULES` whose imports
    are installed (Dask and the PostgreSQL drivers are optional); then compile the kernels not cached yet."""
    with imports_without_collections():
        importlib.import_module("flows.consensus")
        importlib.import_module("flows.assign")
        for name in RUN_TIME_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        for package_name in LWEC_PACKAGES:
            package = importlib.import_module(package_name)
            for module in pkgutil.walk_packages(package.__path__, f"{package_name}."):
                with contextlib.suppress(ImportError):  # a module of an optional extra (Dask)
                    importlib.import_module(module.name)
        from lwec_tasks.tracking.figures import prepare_figures
        from lwec_tasks.tracking.model import map_installed_distributions

        prepare_figures()
        map_installed_distributions()  # what every run's model log would scan again
    from lwec_tasks.worker.warm_kernels import compile_ahead, warm_process_log

    compile_ahead(warm_process_log())  # the first run then loads the kernels instead of compiling them


import_everything()
gc.freeze()
