"""A real HTTP server on localhost that answers every request the same way, standing in for an MLflow
tracking server that refuses (403), fails (500) or hangs; and a port nothing listens on."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: The names of MLflow's HTTP client settings lwec gives defaults to.
MLFLOW_HTTP_SETTINGS = (
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER",
    "MLFLOW_HTTP_REQUEST_TIMEOUT",
    "MLFLOW_HTTP_RESPECT_RETRY_AFTER_HEADER",
)


@dataclass
class Answering:
    """A running server: its base URL and the request paths it has seen."""

    url: str
    paths: list[str] = field(default_factory=list)


@contextmanager
def answering_server(status: int, body: bytes = b"", content_type: str = "text/html",
                     delay: float = 0.0) -> Iterator[Answering]:
    """Serve ``status`` with ``body`` to every GET and POST on 127.0.0.1 (a free port) for the block.

    ``delay``: seconds to wait before answering (a server that hangs).
    """
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            seen.append(self.path)
            if delay:
                time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Answering(f"http://127.0.0.1:{server.server_port}", seen)
    finally:
        server.shutdown()
        server.server_close()


def mlflow_error_body(error_code: str, message: str) -> bytes:
    """The JSON body an MLflow server sends with an error."""
    return json.dumps({"error_code": error_code, "message": message}).encode()


def closed_port() -> int:
    """A port on 127.0.0.1 that was bound a moment ago and is closed now (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def unset_mlflow_http_settings(monkeypatch) -> None:
    """Remove MLflow's HTTP client settings from the environment for the test, restoring them afterwards."""
    for name in MLFLOW_HTTP_SETTINGS:
        monkeypatch.setenv(name, "placeholder")  # records the value to restore
        monkeypatch.delenv(name)
