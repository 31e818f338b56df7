"""How long lwec waits for an MLflow store before it reports the store as down.

MLflow's REST client retries every request by itself; with MLflow's defaults
(7 retries, back-off factor 2, 120 s per request) a tracking server that is down
is reported only after minutes. :func:`limit_mlflow_requests` puts lwec's
shorter defaults for MLflow's own variables into the environment, each only when
the variable is not set already (so a value the user set always wins):

=========================================  =====  ==========================
variable                                   lwec   MLflow's own default
=========================================  =====  ==========================
``MLFLOW_HTTP_REQUEST_MAX_RETRIES``        2      7
``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR``     1      2
``MLFLOW_HTTP_REQUEST_BACKOFF_JITTER``     0.5    1.0
``MLFLOW_HTTP_REQUEST_TIMEOUT``            10     120 (seconds per request)
``MLFLOW_HTTP_RESPECT_RETRY_AFTER_HEADER`` false  true (a ``Retry-After``
                                                  of an hour is waited out)
=========================================  =====  ==========================

With lwec's values a request to a closed port fails after about 3 s (three
attempts, 0 s and 2 s apart), so does a server answering HTTP 5xx, and a server
that accepts connections but never answers after about 33 s.

A store that is a database (``postgresql://``, ``mysql://``, ``mssql://``) is
retried by MLflow for about 100 s when it cannot connect;
:func:`check_database_store` connects once first, with a
:data:`DATABASE_CONNECT_TIMEOUT` s timeout, so such a store is reported at once.
"""

from __future__ import annotations

import os

#: lwec's defaults for MLflow's HTTP client settings (see the module docstring).
HTTP_REQUEST_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_HTTP_RESPECT_RETRY_AFTER_HEADER": "false",
}
#: Seconds lwec waits for a database-backed store to accept a connection.
DATABASE_CONNECT_TIMEOUT = 10
#: SQLAlchemy backends MLflow stores runs in, other than SQLite.
DATABASE_BACKENDS = ("postgresql", "mysql", "mssql")


def limit_mlflow_requests() -> None:
    """Set each of :data:`HTTP_REQUEST_DEFAULTS` in ``os.environ`` unless it is already set.

    MLflow reads these variables at every request, so this takes effect for the
    whole process from the next request on.
    """
    for name, value in HTTP_REQUEST_DEFAULTS.items():
        os.environ.setdefault(name, value)


def is_http_store(tracking_uri: str) -> bool:
    """Whether ``tracking_uri`` is an MLflow tracking server (``http://`` or ``https://``)."""
    return tracking_uri.lower().startswith(("http://", "https://"))


def database_backend(tracking_uri: str) -> str | None:
    """``postgresql``, ``mysql`` or ``mssql`` when ``tracking_uri`` is such a database; else None (SQLite too)."""
    backend = tracking_uri.split(":", 1)[0].split("+", 1)[0].lower()
    return backend if backend in DATABASE_BACKENDS else None


def check_database_store(tracking_uri: str) -> None:
    """Connect once to a database-backed store and close again; no-op for other stores.

    Raises whatever the driver raises when the database does not accept the
    connection within :data:`DATABASE_CONNECT_TIMEOUT` s, before MLflow would spend about 100 s retrying, and
    :class:`~lwec_tasks.core.errors.LwecInputError` naming ``tracking_uri`` when its driver is missing. The
    engine is the project's own (:func:`lwec_tasks.io.connection.opened_engine`).
    """
    if database_backend(tracking_uri) is None:
        return
    from lwec_tasks.io.connection import opened_engine

    with opened_engine(tracking_uri, connect_timeout=DATABASE_CONNECT_TIMEOUT, parameter="tracking_uri") as engine, \
            engine.connect():
        pass
