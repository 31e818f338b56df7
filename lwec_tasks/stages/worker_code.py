"""The code a Dask cluster runs for the pipeline, imported once when its processes start.

``dask worker ... --preload lwec_tasks.stages.worker_code`` and ``dask scheduler ... --preload
lwec_tasks.stages.worker_code`` (docs/scale.md) import it as they start: the workers run the tasks' functions, and
the scheduler unpickles every task it is sent, importing the module of its function. The flow's check of the
workers imports it too (:func:`lwec_tasks.executors.dask.worker_facts`), so a worker started without it imports it
before the run's first task rather than inside a stage.

It imports every module of :mod:`lwec_tasks.stages` (the functions the tasks run, with the numeric core), the
generators' scikit-learn modules (:data:`~lwec_tasks.core.generators.FITTING_LIBRARIES`, which the stages import
only where they fit, so that the flow process does not), the figures' module (a Dask run's figures are drawn on a
worker) and the installed database drivers partitions read and write with. A worker that imported only the read's
module met the rest one by one, inside the stages whose first task needed them; a fresh scheduler without it spent
1.2 s of a 2M-row run's read importing that module.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil

import lwec_tasks.stages
from lwec_tasks.core.generators import FITTING_LIBRARIES

#: The run's figures, which a Dask run draws on a worker (:func:`lwec_tasks.tasks.track.draw_figures`).
FIGURES_MODULE = "lwec_tasks.tracking.figures"
#: The drivers a partition's read or write may use (ADBC for PostgreSQL and SQLite; psycopg, SQLAlchemy's for
#: ``postgresql+psycopg`` URLs); those not installed are skipped.
DRIVER_MODULES = ("adbc_driver_postgresql.dbapi", "adbc_driver_sqlite.dbapi", "psycopg")


def import_worker_code() -> list[str]:
    """Import the stages' modules, the generators' libraries, the figures' module (with what their first drawing
    loads) and the installed :data:`DRIVER_MODULES`; returns the names imported."""
    names = [module.name for module in pkgutil.iter_modules(lwec_tasks.stages.__path__, "lwec_tasks.stages.")
             if module.name != __name__]
    names += FITTING_LIBRARIES
    for name in [*names, FIGURES_MODULE]:
        importlib.import_module(name)
    importlib.import_module(FIGURES_MODULE).prepare_figures()
    drivers = []
    for name in DRIVER_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
            drivers.append(name)
    return [*names, FIGURES_MODULE, *drivers]


import_worker_code()
