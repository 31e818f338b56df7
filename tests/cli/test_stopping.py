"""Stopping ``lwec run``: SIGINT and SIGTERM end it with one line saying what was and was not published, and
nothing is published after the signal; ``kill -9`` leaves no process and no database connection behind.

Real processes and signals: each run is a fresh ``lwec run`` process in a session of its own, so that whatever
it started can be found afterwards by its process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from helpers.pipeline import (
    blobs_frame,
    postgres_url_or_skip,
    read_labels,
    sessions_waiting_to_write,
    table_exists,
    unique,
    write_frame,
)
from helpers.processes import left_running
from lwec_tasks.io.cleanup import run_tables_of
from lwec_tasks.io.connection import APPLICATION_NAME
from lwec_tasks.io.label_storage import storage_names
from lwec_tasks.io.names import parse_table_name

#: Runs ``lwec ARGV...`` as the console script does, first sending this process SIGNAL where WHERE says:
#: "write" — as the first partition's labels are appended (before the run is published); "mlflow" — as the
#: MLflow run is about to be created (after the labels were published); "publish" — never, but the publishing
#: transaction starts 3 s after "lwec-test: publishing" is printed; "import" — while the command's modules are
#: imported, by code that swallows the KeyboardInterrupt; "none" — not at all.
SIGNALLING = """
import os, signal, sys, time
print("lwec-test: started", file=sys.stderr, flush=True)
where, name, *argv = sys.argv[1:]
number = getattr(signal, name)
if where == "write":
    from lwec_tasks.stages import partitions
    original_write = partitions.write_partition
    def write_partition(*args, **kwargs):
        os.kill(os.getpid(), number)
        time.sleep(0.5)  # the command's thread takes the signal meanwhile; this one goes on to the boundary
        return original_write(*args, **kwargs)
    partitions.write_partition = write_partition
elif where == "publish":
    from lwec_tasks.io import staging
    original_finish = staging.finish_run
    def finish_run(*args, **kwargs):
        print("lwec-test: publishing", file=sys.stderr, flush=True)
        time.sleep(3)  # the test takes the writers' lock of the output table meanwhile
        return original_finish(*args, **kwargs)
    staging.finish_run = finish_run
elif where == "import":  # a library, imported with the command, that swallows a KeyboardInterrupt
    import lwec_tasks.cli
    original_build = lwec_tasks.cli.build_parser
    def build_parser(*args, **kwargs):
        try:
            os.kill(os.getpid(), number)
            time.sleep(0.5)
        except:  # noqa: E722 - what such a library does
            pass
        return original_build(*args, **kwargs)
    lwec_tasks.cli.build_parser = build_parser
elif where == "mlflow":
    from lwec_tasks.tracking import runs
    original_writer = runs.run_writer
    def run_writer(*args, **kwargs):
        os.kill(os.getpid(), number)
        time.sleep(5)
        return original_writer(*args, **kwargs)
    runs.run_writer = run_writer
from lwec_tasks.cli import main
sys.argv = ["lwec", *argv]
sys.exit(main())
"""


def run_arguments(url: str, table: str, output: str, tmp_path: Path, run_name: str = "stopped") -> list[str]:
    return ["run", "--database-url", url, "--table", table, "-k", "3", "-M", "3", "--output-table", output,
            "--run-name", run_name, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]


def start_lwec(argv: list[str], env: dict, cwd: Path, where: str = "none", name: str = "SIGINT") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SIGNALLING, where, name, *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def without_api(tmp_path: Path) -> dict:
    """This process's environment without a Prefect API (the command starts its temporary server)."""
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return {**environment, "PREFECT_HOME": str(tmp_path / "prefect"), "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture
def blobs(sqlite_url):
    write_frame(sqlite_url, "blobs", blobs_frame(n=300))
    return sqlite_url


def check_stopped(process: subprocess.Popen, status: int, timeout: float = 120) -> str:
    """The stop line, after checking the exit status, that it is the only line after the signal's effects (the
    last one), and that there is no traceback."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == status, (out[-2000:], err[-3000:])
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err, err[-3000:]
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("lwec run: Stopped ("), err[-3000:]
    assert sum("Stopped (" in line for line in (out + err).splitlines()) == 1
    assert left_running(process.pid) == []
    return lines[-1]


@pytest.mark.parametrize("name, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_while_the_labels_are_written_publishes_nothing(blobs, tmp_path, prefect_api, name, status):
    output = unique("stop_write")
    process = start_lwec(run_arguments(blobs, "blobs", output, tmp_path), {**prefect_api.env, "PYTHONPATH":
                         os.pathsep.join(sys.path)}, tmp_path, where="write", name=name)
    line = check_stopped(process, status)
    assert f"Stopped ({name}) before anything was published" in line
    assert f"labels of run key 'stopped' in table '{output}'" in line
    assert not table_exists(blobs, output) or read_labels(blobs, output, "stopped").empty


def test_a_signal_after_the_labels_were_published_says_so_and_logs_no_mlflow_run(blobs, tmp_path, prefect_api):
    output = unique("stop_mlflow")
    process = start_lwec(run_arguments(blobs, "blobs", output, tmp_path), {**prefect_api.env, "PYTHONPATH":
                         os.pathsep.join(sys.path)}, tmp_path, where="mlflow")
    line = check_stopped(process, 130)
    assert f"published: labels of run key 'stopped' in table '{output}'; nothing else" in line
    assert len(read_labels(blobs, output, "stopped")) == 300


def test_ctrl_c_at_any_moment_ends_the_run_in_one_line(blobs, tmp_path, prefect_api):
    """Signals at moments spread over a run (imports, checks, flow): exit 130 and one line each time, or, if the
    run was done first, its normal outcome."""
    env = {**prefect_api.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    outcomes = []
    for delay in (0.3, 2.0, 5.0):
        process = start_lwec(run_arguments(blobs, "blobs", unique("stop_any"), tmp_path), env, tmp_path)
        # From the moment the program runs: a signal while the interpreter itself is still starting (slow on a busy
        # machine) ends it before any of its code, lwec's handlers included, can run.
        started = process.stderr.readline()
        time.sleep(delay)
        # On a busy machine this test's own thread can be held up for longer than the whole run takes
        running = process.poll() is None
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        err = started + err
        assert "Traceback" not in out + err, err[-3000:]
        if process.returncode == 0:
            outcomes.append("done" if running else "done before the signal")
            continue
        assert process.returncode == 130, err[-3000:]
        assert "Stopped (SIGINT)" in err.strip().splitlines()[-1], err[-3000:]
        assert left_running(process.pid) == []
        outcomes.append("stopped")
    assert outcomes[0] in ("stopped", "done before the signal"), outcomes


def test_a_signal_during_the_commands_imports_stops_it_even_when_a_library_swallows_the_interrupt(blobs, tmp_path,
                                                                                                   prefect_api):
    env = {**prefect_api.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    output = unique("stop_import")
    process = start_lwec(run_arguments(blobs, "blobs", output, tmp_path), env, tmp_path, where="import")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == "lwec: Stopped (SIGINT) before anything was published", err[-3000:]
    assert "Traceback" not in out + err
    assert not table_exists(blobs, output)


def kill_when(process: subprocess.Popen, marker: str | None, delay: float) -> None:
    """SIGKILL ``process`` ``delay`` seconds after ``marker`` appeared in its standard error (None: after it
    started)."""
    if marker is not None:
        seen = ""
        deadline = time.monotonic() + 120
        while marker not in seen and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            seen += line
        assert marker in seen, seen[-3000:]
    time.sleep(delay)
    process.kill()
    process.wait(timeout=30)


@pytest.mark.parametrize("marker, delay", [(None, 3.0), ("Beginning flow run", 0.0), ("Beginning flow run", 1.5)])
def test_kill_9_leaves_no_process_behind(blobs, tmp_path, marker, delay):
    """Without a Prefect API the command starts a temporary server: it ends with the command."""
    env = {**without_api(tmp_path), "PREFECT_LOGGING_LEVEL": "INFO"}
    process = start_lwec(run_arguments(blobs, "blobs", unique("killed"), tmp_path), env, tmp_path)
    kill_when(process, marker, delay)
    assert left_running(process.pid) == []


def backends(url: str) -> int:
    """lwec's connections to ``url``'s database (its sessions are named after it; other sessions, the tests'
    own or another suite's, do not count)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_type = 'client backend' AND application_name = :name"),
                {"name": APPLICATION_NAME}).scalar_one()
    finally:
        engine.dispose()


@pytest.fixture
def postgres_blobs():
    url = postgres_url_or_skip()
    table = unique("stop_src")
    write_frame(url, table, blobs_frame(n=20_000))
    yield url, table
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.text(f'DROP TABLE IF EXISTS "{table}"'))
    engine.dispose()


@pytest.mark.parametrize("marker, delay", [("Beginning flow run", 0.5), ("Beginning flow run", 2.5)])
def test_postgres_kill_9_leaves_no_process_nor_connection(postgres_blobs, tmp_path, prefect_api, marker, delay):
    url, table = postgres_blobs
    before = backends(url)
    env = {**prefect_api.env, "PYTHONPATH": os.pathsep.join(sys.path), "PREFECT_LOGGING_LEVEL": "INFO"}
    process = start_lwec(run_arguments(url, table, unique("killed"), tmp_path), env, tmp_path)
    kill_when(process, marker, delay)
    assert left_running(process.pid) == []
    deadline = time.monotonic() + 10
    while backends(url) > before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert backends(url) <= before


def test_postgres_sigint_during_the_write_publishes_nothing(postgres_blobs, tmp_path, prefect_api):
    url, table = postgres_blobs
    output = unique("stop_pg")
    before = backends(url)
    process = start_lwec(run_arguments(url, table, output, tmp_path), {**prefect_api.env, "PYTHONPATH":
                         os.pathsep.join(sys.path)}, tmp_path, where="write")
    line = check_stopped(process, 130)
    assert "before anything was published" in line
    assert not table_exists(url, output) or read_labels(url, output, "stopped").empty
    deadline = time.monotonic() + 10
    while backends(url) > before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert backends(url) <= before


def test_postgres_sigint_while_the_publish_waits_for_another_writer_publishes_nothing(postgres_blobs, tmp_path,
                                                                                    prefect_api):
    """A second session holds the output table's writers' lock: the run's publish waits for it. Ctrl-C then ends
    the command at once (exit 130, one line) without waiting for the lock, and once the lock is free nothing of
    the run is published; the next run removes what it left."""
    url, table = postgres_blobs
    output = unique("stop_wait")
    before = backends(url)
    env = {**prefect_api.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = start_lwec(run_arguments(url, table, output, tmp_path), env, tmp_path, where="publish")
    holder = sa.create_engine(url, poolclass=sa.pool.NullPool).connect()
    try:
        seen = ""
        while "lwec-test: publishing" not in seen and process.poll() is None:
            seen += process.stderr.readline()
        assert "lwec-test: publishing" in seen, seen[-3000:]
        holder.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(str(storage_names(parse_table_name(output)).view)))))
        engine = sa.create_engine(url)
        try:
            deadline = time.monotonic() + 30
            while sessions_waiting_to_write(engine) == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert sessions_waiting_to_write(engine) >= 1, "the run never waited for the writers' lock"
        finally:
            engine.dispose()
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        line = check_stopped(process, 130, timeout=60)
        assert time.monotonic() - started < 15  # it did not wait for the lock, which is still held
        assert "labels of run key 'stopped'" in line and "not published" in line
    finally:
        holder.rollback()
        holder.close()
        if process.poll() is None:
            process.kill()
    deadline = time.monotonic() + 10
    while backends(url) > before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert backends(url) <= before  # the waiting session ended without publishing once the lock was free
    assert read_labels(url, output, "stopped").empty

    later = start_lwec(run_arguments(url, table, output, tmp_path, run_name="later"), env, tmp_path)
    _, err = later.communicate(timeout=300)
    assert later.returncode == 0, err[-3000:]
    engine = sa.create_engine(url)
    try:
        names = storage_names(parse_table_name(output))
        with engine.connect() as connection:
            runs = connection.execute(sa.text(f"SELECT run_key, published FROM {names.runs}")).all()
            left = set(run_tables_of(connection, names))
    finally:
        engine.dispose()
    assert runs == [("later", True)] and len(left) == 1
