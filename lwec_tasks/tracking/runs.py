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
from lwec_tasks.tracking.dataset import SourceTable, dataset_input
from lwec_tasks.tracking.failures import failure_reason, store_did_not_answer
from lwec_tasks.tracking.limits import check_database_store, is_http_store
from lwec_tasks.tracking.store import TrackingError, experiment_id, mask_uri, tracking_client

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
    source : the table the run clustered, logged as the run's dataset input (see
        :mod:`lwec_tasks.tracking.dataset`); None: no dataset input
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
    source: SourceTable | None = None


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
        """``frame`` as a CSV artifact (no index column), written by Arrow's multi-threaded CSV writer.

        Integer, float, boolean and text columns are written as they are; a
        column of any other values (uuid, decimal, bytes, integers beyond 64 bits,
        mixed kinds) is written as text (see :func:`csv_ready`).
        """
        import pyarrow.csv

        with tempfile.TemporaryDirectory(prefix="lwec-artifact-") as scratch:
            path = Path(scratch, Path(artifact_file).name)
            pyarrow.csv.write_csv(csv_ready(frame), path)
            directory = str(Path(artifact_file).parent)
            self.client.log_artifact(run_id, str(path), None if directory == "." else directory)

    def log_figure(self, run_id: str, figure: Figure, artifact_file: str) -> None:
        self.client.log_figure(run_id, figure, artifact_file)

    def log_dataset(self, run_id: str, table: SourceTable) -> None:
        """Record ``table`` as the run's dataset input with context ``training``."""
        self.client.log_inputs(run_id, datasets=[dataset_input(table)])

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

    Requests are bounded (:mod:`lwec_tasks.tracking.limits`): a tracking server
    that is down is reported within seconds, and a database-backed store is
    connected to once before MLflow is. Any exception in the block — the store
    unreachable, a write refused — marks the block's unfinished runs FAILED and
    is raised as :class:`TrackingError`, one line: ``logging to MLflow at <URI,
    password masked> failed[ (run <id>)]: <reason>`` (not chained: the original
    message may carry the URI with its password). Its ``retryable`` is True when
    a store that is not a tracking server did not answer.
    """
    writer = None
    try:
        check_database_store(tracking_uri)
        client = tracking_client(tracking_uri)
        writer = RunWriter(client, tracking_uri, experiment_id(client, experiment, tracking_uri))
        yield writer
    except Exception as error:  # noqa: BLE001 - every MLflow failure becomes a TrackingError
        failed = writer.fail_open_runs() if writer is not None else []
        raise tracking_error(error, tracking_uri, failed[0] if failed else None) from None


def tracking_error(error: BaseException, tracking_uri: str, run_id: str | None = None) -> TrackingError:
    """``error`` (raised while logging to the store at ``tracking_uri``) as a one-line :class:`TrackingError`
    naming the store (password masked) and ``run_id``, the run marked FAILED (None: no run was created)."""
    message = (f"logging to MLflow at {mask_uri(tracking_uri)} failed{f' (run {run_id})' if run_id else ''}: "
               f"{failure_reason(error)}")
    retryable = store_did_not_answer(error) and not is_http_store(tracking_uri)
    return TrackingError(scrub(" ".join(message.split()), tracking_uri), retryable=retryable)


def log_run(record: RunRecord, *, tracking_uri: str, experiment: str, run_name: str | None = None) -> str:
    """Create the MLflow run, log ``record`` to it and return the run id.

    ``record.source`` becomes the run's dataset input (context ``training``).
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
        if record.source is not None:
            writer.log_dataset(run_id, record.source)
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


def csv_ready(frame: pd.DataFrame):
    """``frame`` as a ``pyarrow.Table`` that Arrow's CSV writer accepts (no index column).

    Columns Arrow reads as integers, floats, booleans or text are kept; every
    other column becomes text: ``str(value)`` (``uuid.UUID`` → its canonical
    form, ``Decimal`` → its exact digits), bytes as hex, missing values empty.
    """
    import pyarrow as pa

    return pa.table({str(name): _csv_column(frame[name]) for name in frame.columns})


def _csv_column(values: pd.Series):
    import pyarrow as pa

    try:
        array = pa.array(values, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        array = None
    if array is not None and _csv_writes_as_is(array.type):
        return array
    return pa.array([_as_text(value) for value in values], type=pa.string())


def _csv_writes_as_is(arrow_type) -> bool:
    import pyarrow as pa

    return (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_boolean(arrow_type)
            or pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_null(arrow_type))


def _as_text(value) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)
