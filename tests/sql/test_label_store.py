"""One run's labels storage (lwec_tasks.io.label_store): names checked on opening, the URL resolved and the engine
made on first use, runs published through it recorded, the engine and idle ADBC connections closed with it."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import drop_labels_table, postgres_url_or_skip, unique
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import adbc_pool
from lwec_tasks.io.bulk_read import adbc_connector
from lwec_tasks.io.label_store import PublishedRun, open_label_store
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.run_metadata import RunMetadata
from lwec_tasks.io.staging import append_to


def run_of(run_key: str) -> RunMetadata:
    return RunMetadata(run_key=run_key, k=2, method="lwea", theta=0.4, ensemble_size=5, seed=1,
                       source_table="features")


def test_a_reference_is_resolved_on_first_use_and_never_shown(monkeypatch, tmp_path):
    url = f"sqlite:///{tmp_path / 'labels.db'}"
    sa.create_engine(url).connect().close()
    monkeypatch.delenv("LWEC_STORE_URL", raising=False)
    with open_label_store("env:LWEC_STORE_URL", parse_table_name("labels")) as store:  # nothing resolved yet: no error
        assert repr(store) == "LabelStore('labels')"
        with pytest.raises(LwecInputError, match="LWEC_STORE_URL"):
            _ = store.engine
        monkeypatch.setenv("LWEC_STORE_URL", url)
        assert store.database_url == url
        monkeypatch.setenv("LWEC_STORE_URL", "sqlite:///elsewhere.db")
        assert store.engine.url.render_as_string() == url  # resolved once, kept


def test_a_name_too_long_for_its_tables_is_refused_on_opening():
    with pytest.raises(LwecInputError, match="output_table"), open_label_store("sqlite://", parse_table_name("x" * 60)):
        pass


def test_runs_published_through_the_store_are_recorded(db_url):
    name = unique("store")
    ids, labels = np.arange(10, 30), np.arange(20) % 2
    with open_label_store(db_url, parse_table_name(name)) as store:
        try:
            for run_key in ("first", "second"):
                run = run_of(run_key)
                pending = store.begin(sa.BigInteger(), run)

                def append(pending=pending):
                    return append_to(store.engine, pending.target, ids, labels, run=pending.append_run,
                                     columns=pending.target_columns)

                assert store.publish(pending, run, len(ids), append, keep_runs=1) == (20, [] if run_key == "first"
                                                                                      else ["first"])
            assert store.prune(run_of("second"), keep_runs=1) == []
            assert store.published == [PublishedRun("first", 20), PublishedRun("second", 20, ("first",)),
                                       PublishedRun("second", 0)]
            assert store.ensure_views() == f"{name}_latest"
            with store.engine.connect() as connection:
                stored = connection.execute(sa.text(f"select run_key, count(*) from {name} group by run_key")).all()
            assert stored == [("second", 20)]
        finally:
            with store.engine.begin() as connection:
                drop_labels_table(connection, name)


@pytest.mark.postgres
def test_closing_disposes_the_engine_and_the_idle_adbc_connections_to_its_database():
    url = postgres_url_or_skip()
    adbc_pool.close_idle_connections()
    with open_label_store(url, parse_table_name(unique("store"))) as store:
        connect = adbc_connector(store.engine, read_only=True)
        with connect() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        assert sum(len(idle) for idle in adbc_pool.PROCESS_POOL.idle.values()) == 1
        engine = store.engine
        with engine.connect():
            pass
        assert engine.pool.checkedin() == 1
    assert sum(len(idle) for idle in adbc_pool.PROCESS_POOL.idle.values()) == 0
    assert engine.pool.checkedin() == 0
    assert "engine" not in vars(store)
