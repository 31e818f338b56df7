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
from contextlib import nullcontext

#: Set to "1" by the starting command that reads no block: the server does not register Prefect's block types as
#: it starts, unless the user's settings say otherwise (:func:`block_registration`).
SKIP_BLOCKS_VARIABLE = "LWEC_SERVER_SKIP_BLOCK_REGISTRATION"
#: The settings that skip it (1.5–2 CPU-seconds on a new database).
SKIPPED_BLOCK_REGISTRATION = {"PREFECT_SERVER_REGISTER_BLOCKS_ON_START": False,
                              "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": False}


def exit_when_input_ends() -> None:
    """Block until standard input ends (the starting process is gone), then end this process at once."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def explicit_prefect_settings() -> dict[str, str]:
    """The Prefect settings set explicitly (the environment under any of a setting's names, a profile, a settings
    file, ``temporary_settings``), as environment variables under their canonical names. Imports Prefect."""
    from prefect.settings import get_current_settings

    return get_current_settings().to_environment_variables(exclude_unset=True)


def block_registration(skip: bool) -> dict[str, bool]:
    """The settings updates that skip registering block types when ``skip``, leaving out any the user set
    (:func:`explicit_prefect_settings`); {} when not ``skip``."""
    if not skip:
        return {}
    users = explicit_prefect_settings()
    return {name: value for name, value in SKIPPED_BLOCK_REGISTRATION.items() if name not in users}


def main(argv: list[str]) -> None:
    (port,) = argv
    threading.Thread(target=exit_when_input_ends, name="parent-watch", daemon=True).start()
    import uvicorn
    from prefect.settings import temporary_settings

    from lwec_tasks.frameworks import prefect_api_app

    updates = block_registration(os.environ.pop(SKIP_BLOCKS_VARIABLE, "") == "1")
    with temporary_settings(updates=updates) if updates else nullcontext():
        uvicorn.run(prefect_api_app(), host="127.0.0.1", port=int(port), log_level="error", lifespan="on")


if __name__ == "__main__":
    main(sys.argv[1:])
