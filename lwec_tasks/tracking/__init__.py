"""MLflow edge of the pipeline: where runs are logged and what a run record holds.

- :mod:`~lwec_tasks.tracking.store` — tracking URI, default store, experiment and artifact location, run links
- :mod:`~lwec_tasks.tracking.runs` — writing runs (:func:`run_writer`)
- :mod:`~lwec_tasks.tracking.dataset` — the source table as the run's dataset input (:class:`SourceTable`)
- :mod:`~lwec_tasks.tracking.limits` — how long requests to a store may take before it counts as down
- :mod:`~lwec_tasks.tracking.failures` — why logging failed, in a few words
- :mod:`~lwec_tasks.tracking.figures` — the figures logged with a consensus run
- :mod:`~lwec_tasks.tracking.reproduction` — logging a reproduction (parent run, nested run per method)
- :mod:`~lwec_tasks.tracking.model` — the run's model (a :class:`~lwec_tasks.core.placement.Placement`
  as an MLflow pyfunc model): :func:`log_placement_model`, :func:`load_placement_model`
  (imported on first use: it imports MLflow)
"""

from lwec_tasks.masking import url_has_credentials
from lwec_tasks.tracking.dataset import SourceTable
from lwec_tasks.tracking.figures import cluster_size_bars, cluster_size_figure, eci_figure
from lwec_tasks.tracking.reproduction import log_reproduction
from lwec_tasks.tracking.runs import RunWriter, run_writer
from lwec_tasks.tracking.store import (
    TrackingError,
    default_tracking_uri,
    mask_uri,
    resolve_tracking_uri,
    run_page_url,
    tracking_client,
)

#: Names of :mod:`lwec_tasks.tracking.model`, imported on first access (MLflow is slow to import).
_MODEL_NAMES = ("PlacementModel", "load_placement_model", "log_placement_model", "model_uri")


def __getattr__(name: str):
    if name in _MODEL_NAMES:
        from lwec_tasks.tracking import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PlacementModel",
    "RunWriter",
    "SourceTable",
    "TrackingError",
    "cluster_size_bars",
    "cluster_size_figure",
    "default_tracking_uri",
    "eci_figure",
    "log_reproduction",
    "load_placement_model",
    "log_placement_model",
    "mask_uri",
    "model_uri",
    "resolve_tracking_uri",
    "run_page_url",
    "run_writer",
    "tracking_client",
    "url_has_credentials",
]
