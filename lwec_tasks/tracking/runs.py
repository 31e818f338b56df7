"""Logging a consensus run to MLflow.

One MLflow run per flow run, written through :class:`mlflow.MlflowClient`
with an explicit run id (the fluent ``mlflow.active_run()`` is per thread,
and Prefect may run tasks in worker threads).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

#: Environment variable MLflow itself reads for the tracking URI.
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
#: Base address of the MLflow UI for run links when the tracking URI is not itself an http(s) server.
MLFLOW_UI_URL_ENV = "LWEC_MLFLOW_UI_URL"
#: Where ``mlflow ui`` serves by default.
DEFAULT_MLFLOW_UI_URL = "http://127.0.0.1:5000"
#: MLflow caps a param value at 6000 characters; longer values are cut to this.
_MAX_PARAM_LENGTH = 500


class TrackingError(RuntimeError):
    """Logging to MLflow failed (the rest of the run's output may still exist)."""


def default_tracking_uri(directory: str | os.PathLike | None = None) -> str:
    """``sqlite:///<directory>/mlflow.db``, directory defaulting to the working directory."""
    path = Path(directory or os.getcwd()).resolve() / "mlflow.db"
    return f"sqlite:///{path}"


def resolve_tracking_uri(explicit: str | None = None) -> str:
    """The tracking URI to use: ``explicit``, else ``$MLFLOW_TRACKING_URI``, else a local SQLite store.

    ``explicit`` may be ``env:VAR`` to read the URI from environment variable VAR
    (keeping a password out of flow parameters).
    """
    if explicit and explicit.startswith("env:"):
        variable = explicit[len("env:"):]
        value = os.environ.get(variable)
        if not value:
            from lwec_tasks.core.errors import LwecInputError

            raise LwecInputError(f"tracking_uri={explicit!r}: environment variable {variable!r} is not set")
        return value
    return explicit or os.environ.get(TRACKING_URI_ENV) or default_tracking_uri()


def mask_uri(uri: str) -> str:
    """``uri`` with any password in its user-info part or credential in its query string replaced by ``***``."""
    from lwec_tasks.io.connection import MASK, mask_query_value

    parts = original = urlsplit(uri)
    if parts.password is not None:
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username}:{MASK}@{host}")
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        masked = [(key, mask_query_value(key, value)) for key, value in pairs]
        if masked != pairs:
            parts = parts._replace(query=urlencode(masked, safe="*{}"))
    return uri if parts == original else urlunsplit(parts)


def run_page_url(tracking_uri: str, run_id: str, experiment_id: str | None = None) -> str:
    """Address of the run's page in the MLflow UI.

    An http(s) tracking URI is the UI itself; for any other store (a SQLite file,
    a database) the UI is the one at ``$LWEC_MLFLOW_UI_URL``, default
    ``http://127.0.0.1:5000`` (``mlflow ui --backend-store-uri <store>``).
    ``experiment_id`` is looked up when not given. Credentials are never included.
    """
    if tracking_uri.startswith(("http://", "https://")):
        parts = urlsplit(tracking_uri)
        base = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", "")).rstrip("/")
    else:
        base = os.environ.get(MLFLOW_UI_URL_ENV, DEFAULT_MLFLOW_UI_URL).rstrip("/")
    if experiment_id is None:
        from mlflow import MlflowClient

        experiment_id = MlflowClient(tracking_uri).get_run(run_id).info.experiment_id
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"


@dataclass
class RunRecord:
    """Everything logged for one run.

    Attributes
    ----------
    params : str-able values (truncated to 500 characters each)
    metrics : finite floats; None or NaN values are skipped
    tags : str values
    labels : DataFrame with columns ``id, label`` (plus ``truth`` when known), one row per object
    clusters : DataFrame, one row per base cluster (column, label, size, uncertainty, ECI)
    figures : artifact file name → matplotlib Figure
    """

    params: dict
    metrics: dict
    tags: dict
    labels: pd.DataFrame
    clusters: pd.DataFrame
    figures: dict[str, Figure] = field(default_factory=dict)


def log_run(record: RunRecord, *, tracking_uri: str, experiment: str, run_name: str | None = None) -> str:
    """Create the MLflow run, log ``record`` to it and return the run id.

    Raises :class:`TrackingError` (with the URI's password masked) when the
    store cannot be reached or any write fails; a run created before the
    failure is marked FAILED when the store still answers.
    """
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag

    client = MlflowClient(tracking_uri=tracking_uri)
    run_id = None
    try:
        experiment_id = _experiment_id(client, experiment, tracking_uri)
        run = client.create_run(experiment_id, run_name=run_name, tags={k: str(v) for k, v in record.tags.items()})
        run_id = run.info.run_id
        params = [Param(k, str(v)[:_MAX_PARAM_LENGTH]) for k, v in record.params.items()]
        metrics = [
            Metric(k, float(v), timestamp=_now_ms(), step=0)
            for k, v in record.metrics.items()
            if v is not None and np.isfinite(v)
        ]
        client.log_batch(run_id, metrics=metrics, params=params, tags=[])
        with tempfile.TemporaryDirectory(prefix="lwec-mlflow-") as scratch:
            labels_path = Path(scratch, "labels.csv")
            record.labels.to_csv(labels_path, index=False)
            clusters_path = Path(scratch, "eci_per_cluster.csv")
            record.clusters.to_csv(clusters_path, index=False)
            client.log_artifact(run_id, str(labels_path))
            client.log_artifact(run_id, str(clusters_path))
        for name, figure in record.figures.items():
            client.log_figure(run_id, figure, f"figures/{name}")
        client.set_terminated(run_id, "FINISHED")
    except Exception as error:
        if run_id is not None:
            try:
                client.set_terminated(run_id, "FAILED")
            except Exception:
                pass
        # Not chained: the original message may carry the URI with its password.
        raise TrackingError(_scrub(
            f"logging to MLflow at {mask_uri(tracking_uri)} failed"
            f"{f' (run {run_id})' if run_id else ''}: {type(error).__name__}: {_first_line(error)}",
            tracking_uri,
        )) from None
    return run_id


def _scrub(text: str, uri: str) -> str:
    """``text`` with the URI's password (plain or percent-encoded) replaced by ``***``."""
    password = urlsplit(uri).password
    if password:
        for form in {password, quote(password, safe=""), unquote(password)}:
            text = text.replace(form, "***")
    return text


def _experiment_id(client, name: str, tracking_uri: str) -> str:
    existing = client.get_experiment_by_name(name)
    if existing is not None:
        return existing.experiment_id
    return client.create_experiment(name, artifact_location=_local_artifact_location(tracking_uri))


def _local_artifact_location(tracking_uri: str) -> str | None:
    """For a SQLite store, keep artifacts in ``mlartifacts/`` beside the database file.

    Other stores choose their own location (None).
    """
    if not tracking_uri.startswith("sqlite:///"):
        return None
    database = Path(tracking_uri[len("sqlite:///"):])
    return (database.resolve().parent / "mlartifacts").as_uri()


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def eci_figure(eci: np.ndarray, theta: float) -> Figure:
    """Histogram of the ECI of every base cluster, shape (n_c,)."""
    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.add_subplot()
    axes.hist(eci, bins=min(30, max(5, len(eci) // 3)), range=(0.0, 1.0), color="#4C72B0", edgecolor="white")
    axes.axvline(float(np.mean(eci)), color="#C44E52", linestyle="--", label=f"mean {np.mean(eci):.3f}")
    axes.set_xlabel("ensemble-driven cluster index (ECI)")
    axes.set_ylabel("number of base clusters")
    axes.set_title(f"ECI of {len(eci)} base clusters (θ = {theta:g})")
    axes.legend()
    return figure


def cluster_size_figure(labels: np.ndarray, method: str) -> Figure:
    """Bar chart of consensus cluster sizes, largest first; ``labels`` shape (N,)."""
    sizes = np.sort(np.bincount(np.asarray(labels, dtype=np.int64)))[::-1]
    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.add_subplot()
    axes.bar(np.arange(1, len(sizes) + 1), sizes, color="#55A868")
    axes.set_xlabel("consensus cluster (by size)")
    axes.set_ylabel("objects")
    axes.set_title(f"{method.upper()}: {len(sizes)} clusters, {int(sizes.sum())} objects")
    return figure
