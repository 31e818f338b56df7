"""Helpers for the pipeline tests: feature tables, labels read-back, expected labels, PostgreSQL URL,
and the subprocess / Prefect client plumbing of the end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

# Set before Prefect is imported anywhere in the session.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

POSTGRES_URL_ENV = "LWEC_TEST_POSTGRES_URL"


def unique(prefix: str) -> str:
    """A fresh name (experiment, table) so tests never see each other's output."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def blobs_frame(n: int = 240, n_features: int = 4, centers: int = 3, seed: int = 7) -> pd.DataFrame:
    """Features ``f0..``, ``target``, a text column ``note``, and ids 1000.. in shuffled row order."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=n, n_features=n_features, centers=centers, cluster_std=1.5, random_state=seed)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
    frame.insert(0, "id", np.arange(1000, 1000 + n))
    frame["target"] = y
    frame["note"] = [f"row {i}" for i in range(n)]
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def write_frame(url: str, table: str, frame: pd.DataFrame, primary_key: str | None = "id") -> None:
    """Create ``table`` (replacing it) with ``frame``; ``id`` becomes the primary key when given."""
    from lwec_tasks.io.duckdb_dialect import DOUBLE  # (importing lwec_tasks.io registers its DuckDB dialect)

    engine = sa.create_engine(url)
    # float64 as DOUBLE on DuckDB too, whose FLOAT is single precision
    types = {"int64": sa.BigInteger(), "float64": DOUBLE, "object": sa.Text(), "str": sa.Text()}
    columns = [
        # autoincrement=False: the ids are given (and DuckDB has no SERIAL)
        sa.Column(name, types.get(str(dtype), sa.Text()), primary_key=(name == primary_key), autoincrement=False)
        for name, dtype in frame.dtypes.items()
    ]
    schema = sa.Table(table, sa.MetaData(), *columns)
    records = [
        {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
        for row in frame.astype(object).to_dict(orient="records")
    ]
    with engine.begin() as connection:
        schema.drop(connection, checkfirst=True)
        schema.create(connection)
        connection.execute(sa.insert(schema), records)
    engine.dispose()


def drop_labels_table(connection: sa.Connection, table: str) -> None:
    """Drop a labels table's storage (its views and runs and rows tables) or a wide labels table of an earlier
    release with its ``<table>_latest`` view (PostgreSQL refuses to drop a table a view uses)."""
    from lwec_tasks.io.catalog import relation_kind
    from lwec_tasks.io.names import parse_table_name
    from lwec_tasks.io.storage_setup import drop_storage

    name = parse_table_name(table)
    drop_storage(connection, name)
    if relation_kind(connection, name) == "table":
        sa.Table(name.name, sa.MetaData(), schema=name.schema).drop(connection)


def read_labels(url: str, table: str, run_key: str | None = None) -> pd.DataFrame:
    engine = sa.create_engine(url)
    labels = sa.Table(table, sa.MetaData(), autoload_with=engine)
    statement = sa.select(labels).order_by(labels.c.run_key, labels.c.id)
    if run_key is not None:
        statement = statement.where(labels.c.run_key == run_key)
    with engine.connect() as connection:
        frame = pd.read_sql(statement, connection)
    engine.dispose()
    return frame


def table_exists(url: str, table: str) -> bool:
    engine = sa.create_engine(url)
    try:
        return sa.inspect(engine).has_table(table)
    finally:
        engine.dispose()


def expected_labels(frame: pd.DataFrame, features, k: int, ensemble_size: int, seed: int, theta: float = 0.4,
                    method: str = "lwea", generators: str | None = None) -> pd.Series:
    """Labels computed straight from the library on the standardised features, indexed by id (base clusterings
    by ``generators``, default the run's default mix)."""
    from sklearn.preprocessing import StandardScaler

    from lwec_tasks import Ensemble, generate_base_clusterings, lwea, lwgp
    from lwec_tasks.core.mixes import RUN_DEFAULT_MIX

    generators = RUN_DEFAULT_MIX if generators is None else generators
    ordered = frame.sort_values("id")
    X = StandardScaler().fit_transform(ordered[list(features)].to_numpy(dtype=float))
    ensemble = Ensemble(generate_base_clusterings(X, n_clusterings=ensemble_size, random_state=seed,
                                                  generators=generators))
    if method == "lwea":
        labels = lwea(ensemble, k, theta=theta)
    else:
        labels = lwgp(ensemble, k, theta=theta, random_state=seed)
    return pd.Series(labels, index=ordered["id"].to_numpy(), name="label")


def postgres_url_or_skip() -> str:
    """The test server's URL from $LWEC_TEST_POSTGRES_URL; skips when unset or unreachable."""
    url = os.environ.get(POSTGRES_URL_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_URL_ENV} is not set; no PostgreSQL server to test against")
    try:
        engine = sa.create_engine(url, connect_args={"connect_timeout": 5})
        with engine.connect():
            pass
        engine.dispose()
    except Exception as error:  # noqa: BLE001 - any failure means: no server here
        pytest.skip(f"PostgreSQL at {sa.make_url(url).render_as_string(hide_password=True)} "
                    f"is unreachable: {type(error).__name__}")
    return url


def sessions_waiting_to_write(engine: sa.Engine) -> int:
    """Sessions of ``engine``'s database waiting for their turn to write a labels table: lwec tries for the
    table's writers' lock again and again meanwhile, inside its transaction, each try its last query."""
    with engine.connect() as connection:
        return connection.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND state IN ('active', 'idle in transaction') AND query LIKE '%pg_try_advisory_xact_lock%'")).scalar_one()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def mlflow_runs(tracking_uri: str, experiment: str) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    return client.search_runs([found.experiment_id])


def wait_for(check, timeout: float, what: str, process: subprocess.Popen | None = None, log: Path | None = None):
    """Poll ``check()`` until it returns something truthy; fail with the process log after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            break
        try:
            result = check()
            if result:
                return result
        except Exception:  # noqa: BLE001 - not ready yet
            pass
        time.sleep(1)
    tail = log.read_text()[-4000:] if log and log.exists() else ""
    pytest.fail(f"timed out waiting for {what}\n{tail}")


def start(args: list[str], env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    """Start ``args`` in the background with stdout and stderr going to ``log``."""
    return subprocess.Popen(args, env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen) -> None:
    """Terminate ``process``, killing it if it has not exited after 20 s."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def client_for(api_url: str):
    """A synchronous Prefect client for the server at ``api_url`` (use it as a context manager)."""
    from prefect.client.orchestration import SyncPrefectClient

    return SyncPrefectClient(api_url)


PROJECT_ROOT = Path(__file__).resolve().parents[2]


class EarlierRun:
    """A stored run's (id, label) rows, ascending by id: ``run_key``, ``ids`` (numpy), ``labels`` (int64)."""

    def __init__(self, run_key: str, ids: np.ndarray, labels: np.ndarray):
        self.run_key, self.ids, self.labels = run_key, ids, labels


def latest_earlier_run(engine: sa.Engine, labels_table: str, source_table: str,
                       exclude_run_key: str) -> EarlierRun | None:
    """The run the stable ids align to (the pipeline's :func:`earlier_run`), with its rows read plainly."""
    from lwec_tasks.io.history import labels_table_clause
    from lwec_tasks.io.label_storage import storage_names
    from lwec_tasks.io.names import parse_table_name
    from lwec_tasks.stages.planning import earlier_run

    earlier = earlier_run(engine, storage_names(parse_table_name(labels_table)), source_table, exclude_run_key)
    if earlier is None:
        return None
    table = labels_table_clause(parse_table_name(labels_table))
    with engine.connect() as connection:
        rows = connection.execute(sa.select(table.c.id, table.c.label).where(
            table.c.run_key == earlier.run_key, table.c.source_table == source_table).order_by(table.c.id)).all()
    ids = np.asarray([row[0] for row in rows])
    if ids.dtype.kind not in "iufU":
        ids = np.empty(len(rows), dtype=object)
        ids[:] = [row[0] for row in rows]
    return EarlierRun(earlier.run_key, ids, np.array([row[1] for row in rows], dtype=np.int64))


def read_stage(data: pd.DataFrame, tmp_path, table: str = "features", **request):
    """The read stage on ``data`` written as a SQLite table (no primary key: duplicate ids can be stored),
    in-process on one thread; returns (table, ids, truth, raw features) gathered from the partitions.
    ``request`` holds ConsensusRequest fields (default n_clusters=2)."""
    import logging

    from lwec_tasks.executors import InProcess
    from lwec_tasks.request import ConsensusRequest
    from lwec_tasks.stages.read import load_table

    url = f"sqlite:///{tmp_path / 'features.db'}"
    engine = sa.create_engine(url)
    data.to_sql(table, engine, index=False, if_exists="replace")
    engine.dispose()
    request = ConsensusRequest(database_url=url, table=table, **{"n_clusters": 2, **request})
    loaded = load_table(InProcess(1), request, logging.getLogger("test"))
    rows = [handle.result() for handle in loaded.rows]
    truth = None if rows[0].truth is None else np.concatenate([r.truth for r in rows])
    return loaded, np.concatenate([r.ids for r in rows]), truth, np.concatenate([r.X for r in rows])


def read_rows_portable(*args, **kwargs) -> pd.DataFrame:
    """:func:`lwec_tasks.io.source.read_rows` with the fast paths off: ``pandas.read_sql`` in chunks, any database."""
    from lwec_tasks.io.bulk_read import FAST_PATH_ENV
    from lwec_tasks.io.source import read_rows

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FAST_PATH_ENV, "0")
        return read_rows(*args, **kwargs)


def ingest_only(patch) -> None:
    """Make every label write fail unless its rows are appended by ADBC bulk ingestion (``patch``: a
    ``pytest.MonkeyPatch``)."""
    import lwec_tasks.io.staging as staging

    ingest = staging._ingest

    def checked(*args):
        assert ingest(*args), "the executemany append was used"
        return True

    patch.setattr(staging, "_ingest", checked)
