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

Every name below is imported on first use.
"""

from lwec_tasks import lazy_attributes

#: Public name → module that defines it, imported on first use (PEP 562): MLflow and matplotlib are slow to
#: import, and most callers need neither (resolving a tracking URI, masking it).
_EXPORTS = {
    "url_has_credentials": "lwec_tasks.masking",
    "SourceTable": "lwec_tasks.tracking.dataset",
    "eci_figure": "lwec_tasks.tracking.figures",
    "log_reproduction": "lwec_tasks.tracking.reproduction",
    "RunWriter": "lwec_tasks.tracking.runs",
    "run_writer": "lwec_tasks.tracking.runs",
    "TrackingError": "lwec_tasks.tracking.store",
    "default_tracking_uri": "lwec_tasks.tracking.store",
    "mask_uri": "lwec_tasks.tracking.store",
    "resolve_tracking_uri": "lwec_tasks.tracking.store",
    "run_page_url": "lwec_tasks.tracking.store",
    "tracking_client": "lwec_tasks.tracking.store",
    "PlacementModel": "lwec_tasks.tracking.model",
    "load_placement_model": "lwec_tasks.tracking.model",
    "log_placement_model": "lwec_tasks.tracking.model",
    "model_uri": "lwec_tasks.tracking.model",
}


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
