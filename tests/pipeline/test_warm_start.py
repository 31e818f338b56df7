"""The warm process of the ``lwec-warm-process`` worker, with real processes."""

from __future__ import annotations

import os
import sys

import pytest

from lwec_tasks.worker import warm_start
from lwec_tasks.worker.code_version import code_fingerprint
from lwec_tasks.worker.warm_process import WarmJobConfiguration

#: What a flow run imports on its way (the flows, MLflow's model code, Genie, the figures' renderer).
RUN_IMPORTS = ("flows.consensus", "flows.assign", "mlflow.pyfunc", "genieclust", "matplotlib.backends.backend_agg",
               "lwec_tasks.tasks.stages", "prefect.engine")


def report_imports(queue) -> None:
    """In a forked process: which of :data:`RUN_IMPORTS` are loaded before it does anything, and its parent."""
    queue.put(([name for name in RUN_IMPORTS if name in sys.modules], os.getppid()))


def test_a_forked_process_starts_with_the_runs_imports_done():
    context = warm_start.warm_context()
    warm_start.wait_until_warm(context)
    queue = context.Queue()
    process = context.Process(target=report_imports, args=(queue,))
    process.start()
    loaded, parent = queue.get(timeout=120)
    process.join(timeout=60)
    assert process.exitcode == 0
    assert loaded == list(RUN_IMPORTS)
    assert parent != os.getpid()  # forked by the warm process, not by this one


@pytest.mark.parametrize(("command", "forked"), [
    (None, True),
    ("prefect flow-run execute", True),
    ("python -m prefect.engine", True),
    ("/opt/venv/bin/python3 -m prefect.engine", True),
    ("bash -c 'echo own command'", False),
])
def test_only_prefects_engine_runs_in_the_warm_fork(command, forked):
    assert WarmJobConfiguration(command=command).runs_engine() is forked


def test_a_jobs_own_command_runs_with_its_environment_and_directory(tmp_path):
    process = warm_start.start_command("sh -c 'pwd > seen; echo \"$LWEC_PROBE\" >> seen'",
                                       {"PATH": os.environ["PATH"], "LWEC_PROBE": "from the job"}, tmp_path)
    assert process.wait(timeout=60) == 0
    assert (tmp_path / "seen").read_text().splitlines() == [str(tmp_path), "from the job"]


def test_the_code_fingerprint_changes_with_any_source_file(tmp_path):
    package = tmp_path / "package"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    (package / "notes.txt").write_text("not code")
    first = code_fingerprint([package])
    assert code_fingerprint([package]) == first
    (package / "notes.txt").write_text("still not code")
    assert code_fingerprint([package]) == first

    stat = (package / "a.py").stat()
    os.utime(package / "a.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # touched
    touched = code_fingerprint([package])
    (package / "sub" / "b.py").write_text("y = 20\n")  # rewritten
    rewritten = code_fingerprint([package])
    (package / "sub" / "c.py").write_text("")  # added
    added = code_fingerprint([package])
    (package / "sub" / "c.py").unlink()  # removed again
    assert len({first, touched, rewritten, added}) == 4
    assert code_fingerprint([package]) == rewritten
