"""The process of a command's temporary Prefect API server: ``python -m lwec_tasks.cli.server_process PORT``.

It serves Prefect's REST API (no UI, no background services: :func:`lwec_tasks.frameworks.prefect_api_app`)
on ``127.0.0.1:PORT`` with uvicorn, and ends as soon as its standard input reaches end of file: the command
that started it holds the other end of that pipe, which the kernel closes however the command ends,
``kill -9`` included.
"""

from __future__ import annotations

import os
import sys
import threading


def exit_when_input_ends() -> None:
    """Block until standard input ends (the starting process is gone), then end this process at once."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def main(argv: list[str]) -> None:
    (port,) = argv
    threading.Thread(target=exit_when_input_ends, name="parent-watch", daemon=True).start()
    import uvicorn

    from lwec_tasks.frameworks import prefect_api_app

    uvicorn.run(prefect_api_app(), host="127.0.0.1", port=int(port), log_level="error",
                lifespan="on")


if __name__ == "__main__":
    main(sys.argv[1:])
