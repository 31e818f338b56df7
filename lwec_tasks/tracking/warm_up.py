"""Getting MLflow ready in the background while the flow computes, so that logging the run costs little.

Importing MLflow's client and model flavour and matplotlib, and opening a SQLite tracking store (whose tables
MLflow checks or creates), take seconds of pure Python. :func:`start_warm_up` does it in a daemon thread
while the database takes the labels (building the labels' key keeps the server busy, not this process);
:func:`wait_for_warm_up` joins it before the run is logged. A failure here is ignored: logging does the same
work again and reports it.
"""

from __future__ import annotations

import threading
from contextlib import suppress

_threads: dict[str | None, threading.Thread] = {}
_lock = threading.Lock()


def start_warm_up(tracking_uri: str | None) -> None:
    """Start warming up MLflow for the store at ``tracking_uri`` (as the flow's parameter gives it: None,
    ``env:VAR`` or a URI) in a daemon thread; once per process and store. Returns at once."""
    with _lock:
        if tracking_uri in _threads:
            return
        thread = threading.Thread(target=_warm_up, args=(tracking_uri,), name="lwec-mlflow-warm-up", daemon=True)
        _threads[tracking_uri] = thread
        thread.start()


def wait_for_warm_up(tracking_uri: str | None) -> None:
    """Wait until the warm-up for ``tracking_uri`` (if one was started) is done."""
    thread = _threads.get(tracking_uri)
    if thread is not None:
        thread.join()


def _warm_up(tracking_uri: str | None) -> None:
    try:
        import lwec_tasks.tracking.figures  # noqa: F401
        import lwec_tasks.tracking.model  # noqa: F401
        from lwec_tasks.tracking.store import resolve_tracking_uri, tracking_client

        uri = resolve_tracking_uri(tracking_uri)
        if uri.startswith("sqlite:"):  # other stores may be remote: they are contacted when the run is logged
            tracking_client(uri)  # opens the store, which MLflow caches per URI
        _warm_model_logging()
    except Exception:  # noqa: BLE001 - logging the run does this again and reports what fails
        pass


def _warm_model_logging() -> None:
    """What MLflow computes once per process when it logs a model: the source's git commit (GitPython) and the
    map from installed modules to their packages (to check the model's requirements)."""
    with suppress(ImportError):
        import git  # noqa: F401
    from mlflow.utils import requirements_utils

    initialise = getattr(requirements_utils, "_init_modules_to_packages_map", None)
    if initialise is not None:
        initialise()
