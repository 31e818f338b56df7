"""Helpers of the Dask tests: feature tables, labels read-back, and worker plugins that make a worker fail.

The plugins are imported by the worker processes (this folder is on their ``sys.path``, inherited from
the test process), where they patch a function of :mod:`lwec_tasks.stages.partitions`, a setting of
:mod:`lwec_tasks.core.lwgp` or the environment for as long as they are registered.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import sqlalchemy as sa
from distributed.diagnostics.plugin import WorkerPlugin


def blobs_table(url: str, table: str, n: int, n_features: int = 16, centers: int = 20, cluster_std: float = 6.0,
                seed: int = 1, text_ids: bool = False) -> pd.DataFrame:
    """``make_blobs`` rows in table ``table``: ``id`` (primary key; 0-padded text with ``text_ids``), features
    ``f0..``, ground truth ``target``. Ids follow the generated order, so id order is the rows' order."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=n, n_features=n_features, centers=centers, cluster_std=cluster_std,
                      random_state=seed)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
    ids = [f"r{i:08d}" for i in range(n)] if text_ids else np.arange(100, 100 + 3 * n, 3)
    frame.insert(0, "id", ids)
    frame["target"] = y
    id_type = sa.String(16) if text_ids else sa.BigInteger()
    schema = sa.Table(table, sa.MetaData(), sa.Column("id", id_type, primary_key=True),
                      *(sa.Column(f"f{j}", sa.Float) for j in range(n_features)), sa.Column("target", sa.Integer))
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            schema.drop(connection, checkfirst=True)
            schema.create(connection)
        frame.to_sql(table, engine, index=False, if_exists="append", chunksize=20_000)
    finally:
        engine.dispose()
    return frame


def labels_of(url: str, table: str, run_key: str) -> pd.DataFrame:
    """The stored rows of one run key, by id."""
    engine = sa.create_engine(url)
    try:
        labels = sa.Table(table, sa.MetaData(), autoload_with=engine)
        statement = sa.select(labels).where(labels.c.run_key == run_key).order_by(labels.c.id)
        with engine.connect() as connection:
            return pd.read_sql(statement, connection)
    finally:
        engine.dispose()


def table_names(url: str) -> list[str]:
    """The tables and views of the database's default schema."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return inspector.get_table_names() + inspector.get_view_names()
    finally:
        engine.dispose()


class FailingWrites(WorkerPlugin):
    """Makes a worker's label write fail for the partition holding ``bad_id``, after the other partitions
    may already have written theirs."""

    name = "lwec-test-failing-writes"

    def __init__(self, bad_id):
        self.bad_id = bad_id

    def setup(self, worker):
        from lwec_tasks.stages import partitions

        self.original = partitions.write_partition
        original, bad_id = self.original, self.bad_id

        def write_partition(database_url, target, keys, labels, run=None, columns=None, **confidence):
            if bad_id in set(keys.ids.tolist()):
                raise RuntimeError(f"injected failure writing the partition holding id {bad_id}")
            return original(database_url, target, keys, labels, run, columns, **confidence)

        partitions.write_partition = write_partition

    def teardown(self, worker):
        from lwec_tasks.stages import partitions

        partitions.write_partition = self.original


class MemoryLimit(WorkerPlugin):
    """Sets ``LWEC_MEMORY_LIMIT_BYTES`` in a worker, as if it had that little memory."""

    name = "lwec-test-memory-limit"

    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes

    def setup(self, worker):
        self.previous = os.environ.get("LWEC_MEMORY_LIMIT_BYTES")
        os.environ["LWEC_MEMORY_LIMIT_BYTES"] = str(self.limit_bytes)

    def teardown(self, worker):
        if self.previous is None:
            os.environ.pop("LWEC_MEMORY_LIMIT_BYTES", None)
        else:
            os.environ["LWEC_MEMORY_LIMIT_BYTES"] = self.previous


class KMeansSample(WorkerPlugin):
    """Lowers LWGP's k-means sampling threshold and sample size in a worker, so k-means on a few thousand
    microclusters takes the sampled path (replicates on a sample, then Lloyd on all rows)."""

    name = "lwec-test-kmeans-sample"
    threshold, size = 2_000, 1_000

    def setup(self, worker):
        from lwec_tasks.core import lwgp

        self.previous = lwgp.SAMPLE_THRESHOLD, lwgp.SAMPLE_SIZE
        lwgp.SAMPLE_THRESHOLD, lwgp.SAMPLE_SIZE = self.threshold, self.size

    def teardown(self, worker):
        from lwec_tasks.core import lwgp

        lwgp.SAMPLE_THRESHOLD, lwgp.SAMPLE_SIZE = self.previous
