"""Prefect's API client for a question that must not wait on its retries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def client_asking_once(timeout: float) -> Iterator:
    """Prefect's sync client, each request tried once and waiting at most ``timeout`` seconds: the client's own
    retries would wait about a minute for a host that does not answer."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_CLIENT_MAX_RETRIES, temporary_settings

    with temporary_settings({PREFECT_CLIENT_MAX_RETRIES: 0}), \
            get_client(sync_client=True, httpx_settings={"timeout": timeout}) as client:
        yield client
