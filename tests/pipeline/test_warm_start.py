"""The warm process of the ``lwec-warm-process`` worker, with real processes."""

from __future__ import annotations

import os
import sys

import pytest

from lwec_tasks.worker import warm_start
from lwec_tasks.worker.code_version import code_fingerprint
from lwec_tasks.worker.warm_process import WarmJobConfiguration

#: What a flow run imports on its way (the flows, MLflow's model code and tracing, Genie, the figures' renderer,
#: LWEA's dendrogram, Prefect's engines).
RUN_IMPORTS = ("flows.consensus", "flows.assign", "mlflow.pyfunc", "mlflow.tracing.processor", "genieclust",
               "matplotlib.backends.backend_agg", "scipy.cluster.hierarchy", "lwec_tasks.tasks.stages",
               "prefect.engine", "prefect.task_engine")


def report_imports(queue) -> None:
    """In a forked process: which of :data:`RUN_IMPORTS` are loaded before it does anything, whether MLflow's map
    of the installed distributions is made (its model log scans them otherwise), and its parent."""
    requirements = sys.modules.get("mlflow.utils.requirements_utils")
    mapped = requirements is not None and getattr(requirements, "_PACKAGES_TO_MODULES", None) is not None
    queue.put(([name for name in RUN_IMPORTS if name in sys.modules], mapped, os.getppid()))


def test_a_forked_process_starts_with_the_runs_imports_done():
    context = warm_start.warm_context()
    warm_start.wait_until_warm(context)
    queue = context.Queue()
    process = context.Process(target=report_imports, args=(queue,))
    process.start()
    loaded, mapped, parent = queue.get(timeout=120)
    process.join(timeout=60)
    assert process.exitcode == 0
    assert loaded == list(RUN_IMPORTS)
    assert mapped
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


def report_adopted(queue, env, cwd) -> None:
    """In a forked process: the API URL, logging level and directory a flow run would see under ``env``."""
    import logging

    from prefect.settings import get_current_settings

    with warm_start.adopted(env, cwd):
        queue.put((get_current_settings().api.url, logging.getLogger("prefect.flow_runs").getEffectiveLevel(),
                   os.getcwd(), os.environ.get("LWEC_PROBE"), "HOME" in os.environ))


def test_a_forked_run_takes_its_jobs_environment_not_the_warm_processes(tmp_path):
    """The warm process has HOME, Prefect's settings and its logging level from the worker's environment; the
    job's environment names another API, DEBUG, and no HOME."""
    import logging

    context = warm_start.warm_context()
    queue = context.Queue()
    env = {"PATH": os.environ["PATH"], "PREFECT_API_URL": "http://127.0.0.1:9/api",
           "PREFECT_LOGGING_LEVEL": "DEBUG", "LWEC_PROBE": "the job's"}
    process = context.Process(target=report_adopted, args=(queue, env, str(tmp_path)))
    process.start()
    seen = queue.get(timeout=120)
    process.join(timeout=60)
    assert seen == ("http://127.0.0.1:9/api", logging.DEBUG, str(tmp_path), "the job's", False)
