"""Logging a run as the consensus flow logs one, for tests that need a run (or a labelling model) in a store."""

from __future__ import annotations

import pandas as pd


def log_model_run(tracking_uri: str, experiment: str, placement=None, input_example: pd.DataFrame | None = None,
                  params: dict | None = None, metrics: dict | None = None) -> str:
    """One MLflow run with ``params``/``metrics``, an ECI table and, given a Placement, the labelling model
    ``model`` (as :func:`lwec_tasks.tasks.track.log_to_mlflow` logs it); returns the run id."""
    from lwec_tasks.tracking import run_writer
    from lwec_tasks.tracking.fluent import active_run_in
    from lwec_tasks.tracking.model import log_placement_model

    with run_writer(tracking_uri, experiment) as writer:
        run_id = writer.start_run(None, params=params or {"method": "lwea"}, metrics=metrics or {}, tags={})
        writer.log_table(run_id, pd.DataFrame({"cluster": [0], "eci": [1.0]}), "eci_per_cluster.csv")
        if placement is not None:
            with active_run_in(tracking_uri, run_id):
                log_placement_model(placement, input_example)
        writer.finish(run_id)
    return run_id
