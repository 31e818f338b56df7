"""The services a command's flow needs, checked before the flow starts.

A Prefect API that does not answer, or a Dask scheduler that does not
(:func:`lwec_tasks.executors.dask.check_scheduler`, given :data:`CHECK_TIMEOUT_SECONDS`), is
reported within seconds as a :class:`ConnectionError` whose one-line message
names the service and its address (credentials masked), instead of after the
flow engine's own retries. An MLflow file store that the installed MLflow
refuses is reported before anything runs, and a SQLite store that is incomplete
or at another schema before the flow starts, not after the labels are written.
"""

from __future__ import annotations

from lwec_tasks.masking import mask_url

#: Seconds each check waits for an answer.
CHECK_TIMEOUT_SECONDS = 5


class PrefectApiUnreachableError(ConnectionError):
    """The Prefect API in ``PREFECT_API_URL`` did not answer its health check (nothing was run)."""


def check_prefect_api(timeout: float = CHECK_TIMEOUT_SECONDS) -> None:
    """Raise :class:`PrefectApiUnreachableError` unless the configured Prefect API answers within ``timeout`` s.

    Without an API URL (``PREFECT_API_URL`` or the active Prefect profile) the flow runs against a
    temporary server that Prefect starts for this process, and there is nothing to check. Imports Prefect.
    """
    from prefect.settings import get_current_settings

    from lwec_tasks.tasks.api_client import client_asking_once

    url = get_current_settings().api.url
    if not url:
        return
    with client_asking_once(timeout) as client:
        problem = client.api_healthcheck()
    if problem is not None:
        reason = " ".join(str(problem).split()).replace(url, mask_url(url)) or type(problem).__name__
        raise PrefectApiUnreachableError(
            f"cannot reach the Prefect API at {mask_url(url)} (PREFECT_API_URL): {reason}; start it with "
            "`prefect server start`, or unset PREFECT_API_URL to run against a temporary local server")


def check_tracking_store(tracking_uri: str | None) -> None:
    """Raise :class:`~lwec_tasks.core.errors.LwecInputError` naming ``tracking_uri`` when it is a local
    directory (an MLflow file store) that the installed MLflow refuses to open (MLflow 3.17 and later, unless
    ``MLFLOW_ALLOW_FILE_STORE=true``). Other stores are not contacted here (a SQLite store is checked by
    :func:`check_sqlite_store` once MLflow is imported). Imports MLflow only for a file store.
    """
    from urllib.parse import urlsplit

    from lwec_tasks.tracking.store import resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    if urlsplit(uri).scheme in ("", "file"):
        _check_file_store(uri)


def check_sqlite_store(tracking_uri: str | None) -> None:
    """Raise :class:`~lwec_tasks.core.errors.LwecInputError` naming the store when ``tracking_uri`` is an
    existing SQLite MLflow store whose creation never finished, or whose schema is not the one the installed
    MLflow expects (made by an older MLflow, or left half-upgraded), with both fixes. Nothing else is checked; a
    store that does not exist yet is created whole by the run. Opens the store with MLflow (imports it)."""
    from lwec_tasks.tracking.store import resolve_tracking_uri, sqlite_file

    uri = resolve_tracking_uri(tracking_uri)
    path = sqlite_file(uri)
    if path is not None:
        _check_sqlite_store(uri, path)


def _check_file_store(uri: str) -> None:
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    from lwec_tasks.core.errors import LwecInputError

    try:
        MlflowClient(uri)
    except MlflowException as error:
        reason = " ".join(str(error).split(". ")[0].split())
        raise LwecInputError(
            f"tracking_uri={uri!r} is an MLflow file store, which MLflow refuses: {reason}; use a database store "
            "such as sqlite:///mlflow.db (the default), or set MLFLOW_ALLOW_FILE_STORE=true") from None


def _check_sqlite_store(uri: str, path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    from lwec_tasks.core.errors import LwecInputError
    from lwec_tasks.tracking.store import IncompleteStoreError, sqlite_store_whole

    try:
        sqlite_store_whole(uri)
        MlflowClient(uri).search_experiments(max_results=1)
    except IncompleteStoreError as error:
        raise LwecInputError(str(error)) from None
    except MlflowException as error:
        reason = " ".join(str(error).split(". ")[0].split())
        raise LwecInputError(
            f"the MLflow store {str(path)!r} cannot be used: {reason}; if an older MLflow made it, back it up "
            f"and upgrade it (mlflow db upgrade {uri}); if a run was stopped while creating or upgrading it, "
            f"move it aside (mv {path} {path}.broken) and run again, which creates a new store") from None
