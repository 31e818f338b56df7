"""The only use of MLflow's process-wide ("fluent") state: logging and loading a pyfunc model.

Every run is written through an explicit :class:`mlflow.MlflowClient` (:mod:`lwec_tasks.tracking.runs`).
Two MLflow calls offer no client form and read the process-wide tracking URI and active run instead:

* ``mlflow.pyfunc.log_model`` (MLflow 3) creates the logged model in the active run's experiment; without an
  active run it lands in the process's current experiment (the ``Default`` one), not the run's;
* ``mlflow.pyfunc.load_model`` resolves ``runs:/`` and ``models:/`` URIs in the process-wide store.

So those calls, and only those, run inside :func:`active_run_in` or :func:`using_tracking_uri`, which set
that state through MLflow's public functions for the block, one block at a time in the process (the state
is process-wide, and Prefect may run tasks in several threads), and put it back afterwards.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import mlflow

from lwec_tasks.tracking.store import TRACKING_URI_ENV

#: Held by whatever reads or changes MLflow's process-wide tracking URI and active run: one at a time.
FLUENT_LOCK = threading.RLock()


@contextmanager
def active_run_in(tracking_uri: str, run_id: str) -> Iterator[mlflow.ActiveRun]:
    """Make ``run_id`` of the store at ``tracking_uri`` the active MLflow run for the block.

    The process-wide tracking URI is restored afterwards; the run is ended
    (FINISHED, or FAILED when the block raises).
    """
    with FLUENT_LOCK, using_tracking_uri(tracking_uri), mlflow.start_run(run_id=run_id) as run:
        yield run


@contextmanager
def using_tracking_uri(tracking_uri: str) -> Iterator[None]:
    """MLflow's process-wide tracking URI set to ``tracking_uri`` for the block (one block at a time), then
    restored, with ``$MLFLOW_TRACKING_URI`` as it was (MLflow's setter would unset a variable the user had set).

    What is restored is what ``mlflow.get_tracking_uri()`` answered before: a URI set in the process is set
    again; one that came from ``$MLFLOW_TRACKING_URI`` (or none at all) is left to the variable again.
    """
    with FLUENT_LOCK:
        environment = os.environ.get(TRACKING_URI_ENV)
        previous = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
        if previous is not None and previous == environment:
            previous = None  # it came from the variable, which is put back below
        mlflow.set_tracking_uri(tracking_uri)
        try:
            yield
        finally:
            mlflow.set_tracking_uri(previous)
            if environment is None:
                os.environ.pop(TRACKING_URI_ENV, None)
            else:
                os.environ[TRACKING_URI_ENV] = environment
