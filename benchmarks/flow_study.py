"""The end of a benchmark that runs the consensus flow on tables of its own: a scratch directory, rows, a table."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def report_flow_study(study: Callable[[Path], list[dict]], markdown: Callable[[list[dict]], str],
                      json_path: Path | None) -> int:
    """Run ``study(workdir)`` (a scratch directory for its SQLite tables and MLflow store, removed after) with
    Prefect's log at WARNING unless set, write its rows to ``json_path`` (None: not written), print
    ``markdown(rows)``; returns 0 (a command's exit status)."""
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    with tempfile.TemporaryDirectory() as workdir:
        rows = study(Path(workdir))
    if json_path:
        json_path.write_text(json.dumps(rows, indent=1))
    print(markdown(rows))
    return 0
