"""The code a Dask worker runs for the pipeline, imported once when the worker starts.

``dask worker ... --preload lwec_tasks.stages.worker_code`` (docs/scale.md) imports it as the worker starts; the
flow's check of the workers imports it too (:func:`lwec_tasks.executors.dask.worker_facts`), so a worker started
without it imports it before the run's first task rather than inside a stage. It imports every module of
:mod:`lwec_tasks.stages` (the functions the tasks run, with the numeric core and generators' libraries they
import), the figures' module (a Dask run's figures are drawn on a worker) and the installed database drivers
partitions read and write with: a worker that imported only the
read's module met the rest one by one, inside the stages whose first task needed them (about a second of a
2M-row run on a fresh two-worker cluster, the flow process having imported them all before it started).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil

import lwec_tasks.stages

#: The drivers a partition's read or write may use (ADBC for PostgreSQL and SQLite; psycopg, SQLAlchemy's for
#: ``postgresql+psycopg`` URLs); those not installed are skipped.
DRIVER_MODULES = ("adbc_driver_postgresql.dbapi", "adbc_driver_sqlite.dbapi", "psycopg")


#: The run's figures, which a Dask run draws on a worker (:func:`lwec_tasks.tasks.track.draw_figures`).
FIGURES_MODULE = "lwec_tasks.tracking.figures"


def import_worker_code() -> list[str]:
    """Import the stages' modules, the figures' (with what their first drawing loads) and the installed
    :data:`DRIVER_MODULES`; returns the names imported."""
    names = [module.name for module in pkgutil.iter_modules(lwec_tasks.stages.__path__, "lwec_tasks.stages.")
             if module.name != __name__]
    imported = []
    for name in [*names, FIGURES_MODULE, *DRIVER_MODULES]:
        with contextlib.suppress(ImportError):  # an optional driver
            importlib.import_module(name)
            imported.append(name)
    importlib.import_module(FIGURES_MODULE).prepare_figures()
    return imported


import_worker_code()
