"""Where MLflow runs go: the tracking URI, the experiment and its artifact location, links to runs.

Every run the package logs (consensus runs, reproductions) goes through these
functions, so they share one default store and one artifact layout.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.masking import mask_url

#: Environment variable MLflow itself reads for the tracking URI.
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
#: Base address of the MLflow UI for run links when the tracking URI is not itself an http(s) server.
MLFLOW_UI_URL_ENV = "LWEC_MLFLOW_UI_URL"
#: Where ``mlflow ui`` serves by default.
DEFAULT_MLFLOW_UI_URL = "http://127.0.0.1:5000"
#: Folder, beside a SQLite store's database file, that holds its runs' artifacts.
LOCAL_ARTIFACTS_DIR = "mlartifacts"
#: Experiment tag MLflow 3's UI reads to open an experiment on its runs (model training) or its traces (GenAI).
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
#: The kind of the experiments lwec logs to: model development, not GenAI.
EXPERIMENT_KIND = "custom_model_development"

#: The tracking URI with its password (user-info or query string) masked; the package's one URL masker.
mask_uri = mask_url


class TrackingError(RuntimeError):
    """Logging to MLflow failed (the rest of the run's output may still exist).

    ``retryable`` is True when the store did not answer and logging again from
    the start may succeed. It is False for a store that refused a request, and
    for a tracking server (http/https) even when it did not answer: MLflow has
    then already retried each request (see :mod:`lwec_tasks.tracking.limits`).
    """

    def __init__(self, message: str, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable


def default_tracking_uri(directory: str | os.PathLike | None = None) -> str:
    """``sqlite:///<directory>/mlflow.db``, directory defaulting to the working directory."""
    path = Path(directory or os.getcwd()).resolve() / "mlflow.db"
    return f"sqlite:///{path}"


def resolve_tracking_uri(explicit: str | None = None) -> str:
    """The tracking URI to use: ``explicit``, else ``$MLFLOW_TRACKING_URI``, else a local SQLite store.

    ``explicit`` may be ``env:VAR`` to read the URI from environment variable VAR
    (keeping a password out of flow parameters). The local store is
    :func:`default_tracking_uri` (an absolute path, so a stray ``./mlruns``
    folder never switches MLflow to its file store).
    """
    if explicit and explicit.startswith("env:"):
        variable = explicit[len("env:"):]
        value = os.environ.get(variable)
        if not value:
            raise LwecInputError(f"tracking_uri={explicit!r}: environment variable {variable!r} is not set")
        return value
    return explicit or os.environ.get(TRACKING_URI_ENV) or default_tracking_uri()


def local_artifact_location(tracking_uri: str) -> str | None:
    """For a SQLite store, ``file://`` URI of ``mlartifacts/`` beside the database file.

    Other stores choose their own location (None).
    """
    if not tracking_uri.startswith("sqlite:///"):
        return None
    database = Path(tracking_uri[len("sqlite:///"):])
    return (database.resolve().parent / LOCAL_ARTIFACTS_DIR).as_uri()


def tracking_client(tracking_uri: str):
    """An ``mlflow.MlflowClient`` for the store at ``tracking_uri``, with lwec's request limits
    (:func:`~lwec_tasks.tracking.limits.limit_mlflow_requests`) in effect. A SQLite store that does not exist
    yet is created whole first (:func:`sqlite_store_whole`)."""
    from mlflow import MlflowClient

    from lwec_tasks.tracking.limits import limit_mlflow_requests

    limit_mlflow_requests()
    sqlite_store_whole(tracking_uri)
    return MlflowClient(tracking_uri=tracking_uri)


class IncompleteStoreError(RuntimeError):
    """A SQLite MLflow store whose creation never finished (no schema version recorded)."""


def sqlite_file(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI (None for other stores and in-memory SQLite)."""
    if not tracking_uri.lower().startswith("sqlite:///"):
        return None
    path = tracking_uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def sqlite_store_whole(tracking_uri: str) -> None:
    """Make sure the SQLite MLflow store at ``tracking_uri`` (if it is one) is whole.

    A store that does not exist yet (no file, or an empty one) is created by MLflow in a temporary file beside
    it and then linked into place in one step, so a process killed meanwhile leaves no half-made store (and
    two runs creating it at once end up with one of theirs). An existing store without a recorded schema
    version (one whose creation was interrupted by an earlier release) raises :class:`IncompleteStoreError`
    naming the file and its fix. Other stores are left alone.
    """
    path = sqlite_file(tracking_uri)
    if path is None:
        return
    path = path.resolve()
    if path.exists() and path.stat().st_size > 0:
        if not _has_schema_version(path):
            raise IncompleteStoreError(
                f"the MLflow store {str(path)!r} is incomplete (its creation was interrupted): move it aside "
                f"(mv {path} {path}.broken) and run again, which creates a new store")
        return
    _remove_abandoned_creations(path)
    creating = path.with_name(f".{path.name}.{os.getpid()}.creating")
    try:
        from mlflow import MlflowClient

        MlflowClient(tracking_uri=f"sqlite:///{creating}").search_experiments(max_results=1)  # MLflow creates it
        if path.exists():  # an empty file: replaced; a store made meanwhile by another run: kept
            if path.stat().st_size == 0:
                os.replace(creating, path)
        else:
            with contextlib.suppress(FileExistsError):
                os.link(creating, path)
    finally:
        creating.unlink(missing_ok=True)


def _has_schema_version(path: Path) -> bool:
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as connection:
            return connection.execute("SELECT count(*) FROM alembic_version").fetchone()[0] > 0
    except sqlite3.DatabaseError:
        return False


def _remove_abandoned_creations(path: Path) -> None:
    """Remove temporary files of store creations whose process is gone (killed while creating the store)."""
    if not Path("/proc/self").exists():  # no way to tell a live creator from a dead one
        return
    for leftover in path.parent.glob(f".{path.name}.*.creating"):
        pid = leftover.name[len(path.name) + 2:-len(".creating")]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            leftover.unlink(missing_ok=True)



def experiment_id(client, name: str, tracking_uri: str) -> str:
    """Id of experiment ``name`` in the store ``client`` talks to, creating it when missing.

    A new experiment keeps its artifacts at :func:`local_artifact_location` and
    is tagged ``mlflow.experimentKind = custom_model_development``, so MLflow 3's
    UI opens it on its runs. An existing experiment without that tag gets it; one
    with any kind already (set by a user or inferred by the UI) keeps its kind.
    """
    existing = client.get_experiment_by_name(name)
    if existing is None:
        return client.create_experiment(name, artifact_location=local_artifact_location(tracking_uri),
                                        tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
    if EXPERIMENT_KIND_TAG not in (existing.tags or {}):
        client.set_experiment_tag(existing.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    return existing.experiment_id


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
        experiment_id = tracking_client(tracking_uri).get_run(run_id).info.experiment_id
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"
