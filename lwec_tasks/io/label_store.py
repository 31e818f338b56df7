"""One run's labels storage: where it is (the resolved URL), how to reach it (one engine) and what it is called
(:class:`~lwec_tasks.io.label_storage.StorageNames`), with every step that changes it.

A flow opens one :class:`LabelStore` beside its executor (:func:`open_label_store`) and hands it to the stages
that touch the labels: they begin a run, have the partitions append its rows, publish or prune it, tidy what
deleted runs left and keep the ``<view>_latest`` view through the store, which records each run it published.
Partitions that run in other processes (Dask workers) get :attr:`LabelStore.database_url`, a plain string, and
open their own engine with it (:func:`~lwec_tasks.stages.partitions.partition_engine`).

The URL reference (``env:``, ``block:``, ``secret:``) is resolved once, when the store is first asked for the
URL or the engine, so a reference that does not resolve fails the first stage that needs the database, as a
URL that does not connect does. On exit the engine is disposed of, and the flow process's idle ADBC
connections to the database (:mod:`lwec_tasks.io.adbc_pool`) are closed with it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property

import sqlalchemy as sa

from lwec_tasks.io.connection import mask_url, open_engine, resolve_database_url
from lwec_tasks.io.label_storage import StorageNames, storage_names
from lwec_tasks.io.names import TableName
from lwec_tasks.io.run_metadata import RunMetadata


@dataclass(frozen=True)
class PublishedRun:
    """What one publish changed: ``run_key``, ``rows`` written (0: the stored labels were kept), and the run
    keys its pruning deleted, most recent first."""

    run_key: str
    rows: int
    pruned: tuple[str, ...] = ()


@dataclass(eq=False)
class LabelStore:
    """The labels storage ``names`` in the database at ``reference`` (a URL, or ``env:``/``block:``/``secret:``
    naming one). :attr:`database_url` and :attr:`engine` are made on first use and kept; :attr:`published`
    lists the runs published through the store, in order. Close it (:meth:`close`, or :func:`open_label_store`)."""

    reference: str = field(repr=False)
    names: StorageNames
    published: list[PublishedRun] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"LabelStore({self.names!r})"

    @cached_property
    def database_url(self) -> str:
        """The URL itself (a reference resolved, once): what partitions in other processes connect with."""
        return resolve_database_url(self.reference)

    @cached_property
    def engine(self) -> sa.Engine:
        """The store's engine (:func:`~lwec_tasks.io.connection.open_engine`; nothing connected yet)."""
        return open_engine(self.database_url)

    @property
    def masked_url(self) -> str:
        """The URL as it may be shown (no password)."""
        return mask_url(self.reference)

    # ------------------------------------------------------------------------- writing a run

    def begin(self, id_type: sa.types.TypeEngine, run: RunMetadata):
        """Add ``run`` unpublished, the storage made ready first (:func:`lwec_tasks.io.staging.begin_run`);
        returns its :class:`~lwec_tasks.io.staging.PendingRun`."""
        from lwec_tasks.io.staging import begin_run

        return begin_run(self.engine, self.names, id_type, run)

    def publish(self, pending, run: RunMetadata, expected_rows: int, append: Callable[[], int],
                keep_runs: int | None = None) -> tuple[int, list[str]]:
        """Append the pending run's rows (``append()``) and publish them in one transaction, pruning beyond
        ``keep_runs`` (:func:`lwec_tasks.io.staging.publish_appended`: on failure the run is discarded and the
        error raised); returns (rows published, run keys pruned) and records them."""
        from lwec_tasks.io.staging import publish_appended

        written, pruned = publish_appended(self.engine, pending, run, expected_rows, append, keep_runs)
        self.published.append(PublishedRun(run.run_key, written, tuple(pruned)))
        return written, pruned

    def matching_run(self, run: RunMetadata, n_rows: int) -> int | None:
        """The published run that may already hold ``run``'s ``n_rows`` labels, or None
        (:func:`lwec_tasks.io.staging.published_run_matching`)."""
        from lwec_tasks.io.staging import published_run_matching

        return published_run_matching(self.engine, self.names, run, n_rows)

    def prune(self, run: RunMetadata, keep_runs: int | None) -> list[str]:
        """For a rerun whose labels are stored already: only the pruning beyond ``keep_runs``
        (:func:`lwec_tasks.io.staging.prune_unchanged_run`); returns the run keys deleted and records them."""
        from lwec_tasks.io.staging import prune_unchanged_run

        pruned = prune_unchanged_run(self.engine, self.names, run, keep_runs)
        self.published.append(PublishedRun(run.run_key, 0, tuple(pruned)))
        return pruned

    # ------------------------------------------------------------------------- after a write

    def tidy(self, log):
        """Remove what deleted or abandoned runs left, or defer it (:func:`lwec_tasks.io.cleanup.tidy`)."""
        from lwec_tasks.io.cleanup import tidy

        return tidy(self.engine, self.names, log)

    def ensure_views(self) -> str:
        """Create ``<view>_latest`` if missing (:func:`lwec_tasks.io.history.ensure_latest_view`); its name."""
        from lwec_tasks.io.history import ensure_latest_view

        return ensure_latest_view(self.engine, self.names)

    def record_mlflow_run(self, run_key: str, mlflow_run_id: str) -> None:
        """Note the MLflow run of ``run_key`` in the runs table (:func:`lwec_tasks.io.history.record_mlflow_run`)."""
        from lwec_tasks.io.history import record_mlflow_run

        record_mlflow_run(self.engine, self.names, run_key, mlflow_run_id)

    def promote(self, run_key: str) -> None:
        """Clear the ``held`` mark of ``run_key`` (:func:`lwec_tasks.io.history.promote_run`)."""
        from lwec_tasks.io.history import promote_run

        promote_run(self.engine, self.names, run_key)

    # ------------------------------------------------------------------------- closing

    def close(self) -> None:
        """Dispose of the engine, if one was made, and close the process's idle ADBC connections to its database."""
        engine = self.__dict__.pop("engine", None)
        if engine is None:
            return
        try:
            # PostgreSQL is the only database ADBC connections are pooled for; a process that never loaded the
            # pool (a preflight check) has none, and need not load the bulk readers to find that out.
            if engine.url.get_backend_name() == "postgresql" and "lwec_tasks.io.adbc_pool" in sys.modules:
                from lwec_tasks.io.adbc_pool import close_idle_connections_to
                from lwec_tasks.io.bulk_read import postgres_uri

                close_idle_connections_to(postgres_uri(engine.url))
        finally:
            engine.dispose()


@contextmanager
def open_label_store(database_url: str, output_table: TableName | StorageNames) -> Iterator[LabelStore]:
    """The :class:`LabelStore` of ``output_table`` in the database at ``database_url`` (a URL or a reference),
    closed on exit. The names are derived and checked here (:func:`~lwec_tasks.io.label_storage.storage_names`);
    nothing is resolved or connected until a stage asks."""
    store = LabelStore(database_url, storage_names(output_table))
    try:
        yield store
    finally:
        store.close()
