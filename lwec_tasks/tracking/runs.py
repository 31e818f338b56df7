"""Writing runs to MLflow: one helper for every run the package logs.

Runs are written through :class:`mlflow.MlflowClient` with explicit run ids
(the fluent ``mlflow.active_run()`` is per thread, and Prefect may run tasks in
worker threads). :func:`run_writer` opens the experiment in the store and turns
any failure into a :class:`TrackingError` with the URI's secrets masked;
the consensus flow writes its run with it
(:func:`lwec_tasks.tasks.track.log_to_mlflow`), and
:func:`lwec_tasks.tracking.reproduction.log_reproduction` a parent run with
one nested run per method.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

import numpy as np
import pandas as pd

from lwec_tasks.masking import scrub, url_has_credentials
from lwec_tasks.tracking.dataset import SourceTable, dataset_input
from lwec_tasks.tracking.failures import failure_reason, store_did_not_answer
from lwec_tasks.tracking.limits import check_database_store, is_http_store
from lwec_tasks.tracking.store import TrackingError, experiment_id, mask_uri, tracking_client

#: MLflow caps a param value at 6000 characters; longer values are cut to this.
MAX_PARAM_LENGTH = 500
#: Tag that makes a run a nested (child) run of another in the MLflow UI.
PARENT_RUN_TAG = "mlflow.parentRunId"


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

    def start_run(self, run_name: str | None = None, *, params: Mapping | None = None,
                  metrics: Mapping | None = None, tags: Mapping | None = None,
                  parent_run_id: str | None = None, series: Mapping | None = None) -> str:
        """Create a run with its params, metrics and tags; return its id.

        Param values are turned into strings and cut to 500 characters; metrics
        that are None or not finite are skipped. ``parent_run_id`` nests the run
        under that run. ``series`` maps a metric name to (step, value) pairs: a metric
        logged at several steps (a curve over k, say), shown as a chart by the MLflow UI.
        """
        from mlflow.entities import Metric, Param

        tags = {key: str(value) for key, value in (tags or {}).items()}
        if parent_run_id is not None:
            tags[PARENT_RUN_TAG] = parent_run_id
        run_id = self.client.create_run(self.experiment_id, run_name=run_name, tags=tags).info.run_id
        self._open.append(run_id)
        now = int(time.time() * 1000)
        batch_params = [Param(key, str(value)[:MAX_PARAM_LENGTH]) for key, value in (params or {}).items()]
        batch_metrics = [Metric(key, float(value), timestamp=now, step=0) for key, value in (metrics or {}).items()
                         if value is not None and np.isfinite(value)]
        batch_metrics += [Metric(key, float(value), timestamp=now, step=int(step))
                          for key, points in (series or {}).items() for step, value in points
                          if value is not None and np.isfinite(value)]
        if batch_params or batch_metrics:
            self.client.log_batch(run_id, metrics=batch_metrics, params=batch_params, tags=[])
        return run_id

    def log_table(self, run_id: str, frame: pd.DataFrame, artifact_file: str) -> None:
        """``frame`` (a small table: one row per base cluster, per method, ...) as a CSV artifact, no index."""
        with tempfile.TemporaryDirectory(prefix="lwec-artifact-") as scratch:
            path = Path(scratch, Path(artifact_file).name)
            frame.to_csv(path, index=False)
            directory = str(Path(artifact_file).parent)
            self.client.log_artifact(run_id, str(path), None if directory == "." else directory)

    def log_files(self, run_id: str, files: Mapping[str, bytes], directory: str) -> None:
        """Artifacts ``directory/<name>`` holding the bytes of ``files`` (name → content), in one upload."""
        with tempfile.TemporaryDirectory(prefix="lwec-artifact-") as scratch:
            for name, content in files.items():
                Path(scratch, name).write_bytes(content)
            self.client.log_artifacts(run_id, scratch, directory)

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
    keep_credentials_unprinted(tracking_uri)
    try:
        check_database_store(tracking_uri)
        client = tracking_client(tracking_uri)
        writer = RunWriter(client, tracking_uri, experiment_id(client, experiment, tracking_uri))
        yield writer
    except Exception as error:  # noqa: BLE001 - every MLflow failure becomes a TrackingError
        failed = writer.fail_open_runs() if writer is not None else []
        raise tracking_error(error, tracking_uri, failed[0] if failed else None) from None


#: MLflow's switch (``mlflow.environment_variables``) for the run and experiment links it prints.
SUPPRESS_URL_PRINTING = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"


def keep_credentials_unprinted(tracking_uri: str) -> None:
    """When ``tracking_uri`` carries a password, stop MLflow printing links to runs and experiments in this
    process: it prints them ("View run ... at: <URI>") with the tracking URI's credentials in them. Sets
    ``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT`` for the process (nothing to undo: the links are a convenience)."""
    if url_has_credentials(tracking_uri):
        os.environ[SUPPRESS_URL_PRINTING] = "true"


def tracking_error(error: BaseException, tracking_uri: str, run_id: str | None = None) -> TrackingError:
    """``error`` (raised while logging to the store at ``tracking_uri``) as a one-line :class:`TrackingError`
    naming the store (password masked) and ``run_id``, the run marked FAILED (None: no run was created)."""
    message = (f"logging to MLflow at {mask_uri(tracking_uri)} failed{f' (run {run_id})' if run_id else ''}: "
               f"{failure_reason(error)}")
    unreachable = store_did_not_answer(error)
    kind = StoreUnreachableError if unreachable else TrackingError
    retryable = unreachable and not is_http_store(tracking_uri)
    return kind(scrub(" ".join(message.split()), tracking_uri), retryable=retryable)


class StoreUnreachableError(TrackingError):
    """A :class:`TrackingError` for a store that did not answer (refused or timed-out connections, an unknown
    host, repeated 5xx answers, a locked SQLite file): the same request may succeed once the store is back."""


