"""Processes of a process group, read from /proc: what a command left running after it ended."""

from __future__ import annotations

import os
import time
from pathlib import Path


def processes_in_group(group: int) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose process group is ``group`` (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        state, _parent, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == group and state != "Z" and int(entry.name) != os.getpid():
            found.append((int(entry.name), command))
    return found


def left_running(group: int, timeout: float = 10) -> list[tuple[int, str]]:
    """The processes of ``group`` still alive after waiting up to ``timeout`` seconds for them to end.

    A child that ends on its own once its parent is gone (GitPython's ``git cat-file``, which MLflow starts to
    tag a logged model with the source's commit, ends when its stdin closes) may outlive the command by a moment.
    """
    deadline = time.monotonic() + timeout
    while (left := processes_in_group(group)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
