"""Writing runs to MLflow: one helper for every run the package logs.

Runs are written through :class:`mlflow.MlflowClient` with explicit run ids
(the fluent ``mlflow.active_run()`` is per thread, and Prefect may run tasks in
worker threads). :func:`run_writer` opens the experiment in the store and turns
any failure into a :class:`TrackingError` with the URI's secrets masked;
:func:`log_run` writes a consensus run with it, and
:func:`lwec_tasks.tracking.reproduction.log_reproduction` a parent run with
one nested run per method.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from lwec_tasks.core.placement import Placement
from lwec_tasks.masking import scrub
from lwec_tasks.tracking.store import TrackingError, experiment_id, mask_uri

#: MLflow caps a param value at 6000 characters; longer values are cut to this.
MAX_PARAM_LENGTH = 500
#: Tag that makes a run a nested (child) run of another in the MLflow UI.
PARENT_RUN_TAG = "mlflow.parentRunId"


@dataclass
class RunRecord:
    """Everything logged for one consensus run.

    Attributes
    ----------
    params : str-able values (truncated to 500 characters each)
    metrics : finite floats; None or NaN values are skipped
    tags : str values
    labels : DataFrame with columns ``id, label`` (plus ``truth`` when known), one row per object
    clusters : DataFrame, one row per base cluster (column, label, size, uncertainty, ECI)
    figures : artifact file name → matplotlib Figure
    model : the run's :class:`~lwec_tasks.core.placement.Placement`, logged as the
        MLflow model ``model`` (see :func:`lwec_tasks.tracking.model.log_placement_model`); None: no model
    model_input_example : a few rows with the feature columns, stored with the model
        (default: centres of the first base clustering, in raw feature units)
    register_model_name : register the model under this name in the Model Registry
    """

    params: dict
    metrics: dict
    tags: dict
    labels: pd.DataFrame
    clusters: pd.DataFrame
    figures: dict[str, Figure] = field(default_factory=dict)
    model: Placement | None = None
    model_input_example: pd.DataFrame | None = None
    register_model_name: str | None = None


class RunWriter:
    """Writes runs into one experiment of one MLflow store; get one from :func:`run_writer`.

    Runs started here and not yet finished are marked FAILED if the
    ``run_writer`` block fails.
    """

    def __init__(self, client, tracking_uri: str, experiment_id: str):
        self.client = client
        self.tracking_uri = tracking_uri
        self.experiment_id = experiment_id
        self._open: list[str] = []

    def start_run(
        self,
        run_name: str | None = None,
        *,
        params: Mapping | None = None,
        metrics: Mapping | None = None,
        tags: Mapping | None = None,
        parent_run_id: str | None = None,
    ) -> str:
        """Create a run with its params, metrics and tags; return its id.

        Param values are turned into strings and cut to 500 characters; metrics
        that are None or not finite are skipped. ``parent_run_id`` nests the run
        under that run.
        """
        from mlflow.entities import Metric, Param

        tags = {key: str(value) for key, value in (tags or {}).items()}
        if parent_run_id is not None:
            tags[PARENT_RUN_TAG] = parent_run_id
        run_id = self.client.create_run(self.experiment_id, run_name=run_name, tags=tags).info.run_id
        self._open.append(run_id)
        now = int(time.time() * 1000)
        batch_params = [Param(key, str(value)[:MAX_PARAM_LENGTH]) for key, value in (params or {}).items()]
        batch_metrics = [
            Metric(key, float(value), timestamp=now, step=0)
            for key, value in (metrics or {}).items()
            if value is not None and np.isfinite(value)
        ]
        if batch_params or batch_metrics:
            self.client.log_batch(run_id, metrics=batch_metrics, params=batch_params, tags=[])
        return run_id

    def log_table(self, run_id: str, frame: pd.DataFrame, artifact_file: str) -> None:
        """``frame`` as a CSV artifact (no index column), written by Arrow's multi-threaded CSV writer."""
        import pyarrow as pa
        import pyarrow.csv

        with tempfile.TemporaryDirectory(prefix="lwec-artifact-") as scratch:
            path = Path(scratch, Path(artifact_file).name)
            pyarrow.csv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path)
            directory = str(Path(artifact_file).parent)
            self.client.log_artifact(run_id, str(path), None if directory == "." else directory)

    def log_figure(self, run_id: str, figure: Figure, artifact_file: str) -> None:
        self.client.log_figure(run_id, figure, artifact_file)

    def log_dict(self, run_id: str, data: dict, artifact_file: str) -> None:
        """``data`` as a JSON (or YAML, by extension) artifact."""
        self.client.log_dict(run_id, data, artifact_file)

    def finish(self, run_id: str) -> None:
        """Mark the run FINISHED."""
        self.client.set_terminated(run_id, "FINISHED")
        self._open.remove(run_id)

    def fail_open_runs(self) -> list[str]:
        """Mark every run not yet finished FAILED (as far as the store still answers); return their ids."""
        failed = list(self._open)
        for run_id in reversed(failed):
            with suppress(Exception):  # best effort: the store may be what failed
                self.client.set_terminated(run_id, "FAILED")
        self._open.clear()
        return failed


@contextmanager
def run_writer(tracking_uri: str, experiment: str) -> Iterator[RunWriter]:
    """A :class:`RunWriter` for ``experiment`` (created when missing) in the store at ``tracking_uri``.

    Any exception in the block — the store unreachable, a write refused —
    marks the block's unfinished runs FAILED and is raised as
    :class:`TrackingError` naming the store with its password masked (not
    chained: the original message may carry the URI with its password).
    """
    writer = None
    try:
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        writer = RunWriter(client, tracking_uri, experiment_id(client, experiment, tracking_uri))
        yield writer
    except Exception as error:  # noqa: BLE001 - every MLflow failure becomes a TrackingError
        failed = writer.fail_open_runs() if writer is not None else []
        raise TrackingError(scrub(
            f"logging to MLflow at {mask_uri(tracking_uri)} failed"
            f"{f' (run {failed[0]})' if failed else ''}: {type(error).__name__}: {_first_line(error)}",
            tracking_uri,
        )) from None


def log_run(record: RunRecord, *, tracking_uri: str, experiment: str, run_name: str | None = None) -> str:
    """Create the MLflow run, log ``record`` to it and return the run id.

    Artifacts: ``labels.csv``, ``eci_per_cluster.csv`` and ``figures/<name>``
    for every figure; with ``record.model``, the MLflow model ``model`` (URI
    ``runs:/<run id>/model``, also in the run's tag ``lwec.model_uri``; see
    :func:`lwec_tasks.tracking.model.model_uri`), registered under
    ``record.register_model_name`` when given. Raises :class:`TrackingError` (with the URI's password
    masked) when the store cannot be reached or any write fails; a run created
    before the failure is marked FAILED when the store still answers.
    """
    with run_writer(tracking_uri, experiment) as writer:
        run_id = writer.start_run(run_name, params=record.params, metrics=record.metrics, tags=record.tags)
        writer.log_table(run_id, record.labels, "labels.csv")
        writer.log_table(run_id, record.clusters, "eci_per_cluster.csv")
        for name, figure in record.figures.items():
            writer.log_figure(run_id, figure, f"figures/{name}")
        if record.model is not None:
            from lwec_tasks.tracking.model import active_run_in, log_placement_model

            with active_run_in(tracking_uri, run_id):
                log_placement_model(record.model, record.model_input_example, record.register_model_name)
        writer.finish(run_id)
    return run_id


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""
