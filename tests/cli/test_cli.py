"""The `lwec` console entry point."""

from __future__ import annotations

import subprocess
import sys

from lwec_tasks import __version__
from lwec_tasks.cli import main


def test_version_and_help(capsys):
    try:
        main(["--version"])
    except SystemExit as stop:
        assert stop.code == 0
    assert f"lwec {__version__}" in capsys.readouterr().out
    assert main([]) == 0
    assert "usage: lwec" in capsys.readouterr().out


def test_console_script_is_installed():
    result = subprocess.run(
        [sys.executable, "-m", "lwec_tasks", "--help"], capture_output=True, text=True, check=True
    )
    assert "Locally weighted ensemble clustering" in result.stdout
