"""MLflow edge of the pipeline: where runs are logged and what a run record holds."""

from lwec_tasks.tracking.runs import (
    RunRecord,
    TrackingError,
    cluster_size_figure,
    default_tracking_uri,
    eci_figure,
    log_run,
    mask_uri,
    resolve_tracking_uri,
    run_page_url,
)

__all__ = [
    "RunRecord",
    "TrackingError",
    "cluster_size_figure",
    "default_tracking_uri",
    "eci_figure",
    "log_run",
    "mask_uri",
    "resolve_tracking_uri",
    "run_page_url",
]
