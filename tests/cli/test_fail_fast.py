"""`lwec run` and `lwec assign` fail fast and say so last: bad input, a database, a Prefect API or a Dask
scheduler that does not answer are reported in one line, the last of the output, before any flow starts.

Each command runs in its own process, as an operator runs it; services are "down" on real closed ports.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest

from helpers.pipeline import blobs_frame, free_port, table_exists, write_frame
from helpers.processes import left_running
from lwec_tasks.tracking.store import sqlite_store_whole

#: Bad input is reported in about 2.5 s on an idle 2-core machine (most of it importing the numeric core);
#: the bound leaves room for a busy machine and still fails when Prefect starts (its server takes ≥ 15 s).
BAD_INPUT_SECONDS = 10
#: A service that does not answer is reported within this many seconds.
SERVICE_DOWN_SECONDS = 30

#: Runs the CLI like the console script and says, after it, whether Prefect was imported at all.
SCRIPT = (
    "import sys\n"
    "from lwec_tasks.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('prefect imported:', 'prefect' in sys.modules)\n"
    "sys.exit(code)\n"
)


def lwec(cwd, *argv, **env):
    """(exit code, stdout, stderr, seconds) of ``lwec ARGV`` in a fresh process, without PREFECT_API_URL
    unless given in ``env``."""
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SCRIPT, *argv], cwd=cwd, capture_output=True, text=True,
                          env={**environment, **env}, timeout=180)
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


@pytest.fixture
def blobs(sqlite_url):
    write_frame(sqlite_url, "blobs", blobs_frame(n=60))
    return sqlite_url


@pytest.mark.parametrize("extra, named", [
    (["--table", "nope", "-k", "3"], "'nope'"),
    (["--table", "blobs", "-k", "3", "--features", "f0,missing_column"], "missing_column"),
])
def test_lwec_run_reports_a_wrong_table_or_column_before_prefect_starts(blobs, tmp_path, extra, named):
    code, out, err, seconds = lwec(tmp_path, "run", "--database-url", blobs, *extra)
    assert code == 2, err[-2000:]
    assert last_line(err).startswith("lwec run: error: ") and named in last_line(err)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "prefect imported: False" in out
    assert seconds < BAD_INPUT_SECONDS
    assert not table_exists(blobs, "blobs_lwec_labels")


@pytest.mark.parametrize("command, argv", [
    ("run", ["--table", "blobs", "-k", "1"]),
    ("demo", ["-k", "1", "--database", "demo.db"]),
])
def test_a_bad_number_of_clusters_is_refused_before_prefect_starts(blobs, tmp_path, command, argv):
    argv = ["--database-url", blobs, *argv] if command == "run" else argv
    code, out, err, seconds = lwec(tmp_path, command, *argv)
    assert code == 2, err[-2000:]
    assert last_line(err).startswith(f"lwec {command}: error: ") and "n_clusters" in last_line(err)
    assert "prefect imported: False" in out  # so no temporary Prefect server either
    assert seconds < BAD_INPUT_SECONDS
    assert not (tmp_path / "demo.db").exists()  # the demo checks its parameters before it builds its table


def test_lwec_assign_reports_a_wrong_table_before_prefect_starts(blobs, tmp_path):
    code, out, err, seconds = lwec(tmp_path, "assign", "--database-url", blobs, "--table", "nope",
                                   "--model-uri", "runs:/0123/model")
    assert code == 2, err[-2000:]
    assert last_line(err).startswith("lwec assign: error: ") and "'nope'" in last_line(err)
    assert err.count("\n") == 1
    assert "prefect imported: False" in out
    assert seconds < BAD_INPUT_SECONDS


def test_an_unreachable_database_is_one_line_naming_it_without_its_password(tmp_path):
    port = free_port()
    url = f"postgresql+psycopg://lwec:s3cret@127.0.0.1:{port}/features"
    code, out, err, seconds = lwec(tmp_path, "run", "--database-url", url, "--table", "t", "-k", "3")
    assert code == 1, err[-2000:]
    assert last_line(err).startswith("lwec run: error: cannot reach database ")
    assert f"lwec:***@127.0.0.1:{port}/features" in last_line(err)
    assert err.count("\n") == 1 and "s3cret" not in out + err  # the driver's two-line reason on one line
    assert "prefect imported: False" in out
    assert seconds < SERVICE_DOWN_SECONDS


@pytest.mark.parametrize("command", ["run", "assign"])
def test_an_unreachable_prefect_api_is_one_line_naming_it(blobs, tmp_path, command):
    port = free_port()
    api = f"http://ops:t0ken@127.0.0.1:{port}/api"
    argv = ["--database-url", blobs, "--table", "blobs"]
    argv += ["-k", "3"] if command == "run" else ["--model-uri", "runs:/0123/model"]
    code, out, err, seconds = lwec(tmp_path, command, *argv, PREFECT_API_URL=api)
    assert code == 1, err[-2000:]
    line = last_line(err)
    assert line.startswith(f"lwec {command}: error: cannot reach the Prefect API at http://ops:***@127.0.0.1:{port}/api")
    assert "PREFECT_API_URL" in line and "t0ken" not in out + err
    assert "Traceback" not in err
    assert seconds < SERVICE_DOWN_SECONDS


def test_an_unreachable_dask_scheduler_is_one_line_naming_it_before_prefect_starts(blobs, tmp_path):
    pytest.importorskip("distributed")
    address = f"tcp://127.0.0.1:{free_port()}"
    code, out, err, seconds = lwec(tmp_path, "run", "--database-url", blobs, "--table", "blobs", "-k", "3",
                                   "--dask-address", address)
    assert code == 1, err[-2000:]
    assert last_line(err).startswith(f"lwec run: error: cannot reach the Dask scheduler at {address!r}")
    assert "Traceback" not in err
    assert "prefect imported: False" in out
    assert seconds < SERVICE_DOWN_SECONDS
    assert not table_exists(blobs, "blobs_lwec_labels")


@pytest.mark.slow
def test_a_failure_met_while_reading_is_the_last_line_and_the_temporary_server_is_gone(tmp_path):
    """Duplicate ids are found while the flow reads the table (missing feature values no longer fail a run: they
    are imputed): the error is the last line of the whole output, and the temporary Prefect server started for
    the run is gone with it."""
    url = f"sqlite:///{tmp_path / 'gaps.db'}"
    frame = blobs_frame(n=60)
    frame.loc[5, "id"] = frame.loc[6, "id"]
    write_frame(url, "gaps", frame, primary_key=None)
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    done = subprocess.Popen([sys.executable, "-m", "lwec_tasks", "run", "--database-url", url, "--table", "gaps",
                             "-k", "3", "-M", "3", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**environment, "PREFECT_LOGGING_LEVEL": "INFO", "PREFECT_HOME": str(tmp_path)},
                            start_new_session=True)
    output, _ = done.communicate(timeout=300)
    assert done.returncode == 2, output[-3000:]
    lines = output.strip().splitlines()
    assert lines[-1].startswith("lwec run: error: ") and "duplicate id" in lines[-1], lines[-5:]
    assert "Traceback" not in output
    assert left_running(done.pid) == []  # the temporary server started for the run is gone with it


def test_an_mlflow_file_store_the_installed_mlflow_refuses_is_reported_before_prefect_starts(blobs, tmp_path):
    """A directory as tracking URI: recent MLflow releases refuse to open it, which would otherwise surface only
    after the labels were written."""
    store = tmp_path / "mlruns"
    environment = {k: v for k, v in os.environ.items() if k != "MLFLOW_ALLOW_FILE_STORE"}
    probe = subprocess.run([sys.executable, "-c", f"from mlflow import MlflowClient; MlflowClient({str(store)!r})"],
                           capture_output=True, text=True, env=environment, timeout=120)
    if probe.returncode == 0:
        pytest.skip("the installed MLflow opens file stores")
    code, out, err, seconds = lwec(tmp_path, "run", "--database-url", blobs, "--table", "blobs", "-k", "3",
                                   "--tracking-uri", str(store), MLFLOW_ALLOW_FILE_STORE="false")
    assert code == 2, err[-2000:]
    assert last_line(err).startswith("lwec run: error: ") and f"tracking_uri='{store}'" in last_line(err)
    assert "sqlite:///" in last_line(err) and "Traceback" not in err
    assert "prefect imported: False" in out
    assert not table_exists(blobs, "blobs_lwec_labels")


def test_an_mlflow_store_at_another_schema_is_reported_before_anything_is_written(blobs, tmp_path):
    """A SQLite store left at an older schema version (an older MLflow's, or one whose upgrade was stopped): one
    line naming the store and both fixes, and no labels written."""
    store = tmp_path / "mlflow.db"
    sqlite_store_whole(f"sqlite:///{store}")
    with sqlite3.connect(store) as connection:
        (head,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        connection.execute("UPDATE alembic_version SET version_num = '0584bdc529eb'")  # MLflow 2.x's first
    code, out, err, seconds = lwec(tmp_path, "run", "--database-url", blobs, "--table", "blobs", "-k", "3",
                                   "--tracking-uri", f"sqlite:///{store}")
    assert code == 2, err[-2000:]
    line = last_line(err)
    assert line.startswith("lwec run: error: ") and f"the MLflow store '{store}'" in line, line
    assert "0584bdc529eb" in line and head in line  # the schema found and the one expected
    assert f"mlflow db upgrade sqlite:///{store}" in line and f"mv {store} {store}.broken" in line
    assert "Traceback" not in err
    assert not table_exists(blobs, "blobs_lwec_labels")
