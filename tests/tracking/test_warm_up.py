"""MLflow made ready in the background (lwec_tasks.tracking.warm_up): what it prepares; it never fails a run."""

from __future__ import annotations

import subprocess
import sys

import sqlalchemy as sa

from helpers.pipeline import PROJECT_ROOT

# Run in a fresh interpreter: whether MLflow and matplotlib are imported is process state.
_SCRIPT = """
import sys
from lwec_tasks.tracking.warm_up import start_warm_up, wait_for_warm_up
assert "mlflow" not in sys.modules and "matplotlib" not in sys.modules
start_warm_up({uri!r})
start_warm_up({uri!r})  # once per store
wait_for_warm_up({uri!r})
print(sorted(name for name in ("mlflow.pyfunc", "matplotlib.figure") if name in sys.modules))
"""


def _warm_up_in_a_fresh_process(uri: str) -> str:
    result = subprocess.run([sys.executable, "-c", _SCRIPT.format(uri=uri)], cwd=PROJECT_ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_it_imports_mlflow_and_matplotlib_and_opens_a_sqlite_store(tmp_path):
    database = tmp_path / "mlflow.db"
    assert _warm_up_in_a_fresh_process(f"sqlite:///{database}") == "['matplotlib.figure', 'mlflow.pyfunc']"
    tables = sa.inspect(sa.create_engine(f"sqlite:///{database}")).get_table_names()
    assert {"experiments", "runs", "metrics"} <= set(tables)  # MLflow created its store


def test_a_store_it_cannot_open_is_left_to_the_run_to_report(tmp_path):
    # An unset environment variable: resolving the URI fails in the warm-up, silently; the imports are done.
    assert _warm_up_in_a_fresh_process("env:LWEC_WARM_UP_TEST_UNSET") == "['matplotlib.figure', 'mlflow.pyfunc']"
    # A remote store is not contacted (nothing listens there): the warm-up ends at once.
    assert _warm_up_in_a_fresh_process("http://127.0.0.1:9/") == "['matplotlib.figure', 'mlflow.pyfunc']"
