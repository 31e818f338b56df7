"""An output table that is a view, or any other non-table, is refused before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.pipeline import drop_labels_table, unique
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import LabelRows, check_label_table, ensure_latest_view, open_engine, write_labels
from lwec_tasks.io.names import parse_table_name


@pytest.fixture
def labels_with_view(db_url):
    """A labels table with its ``_latest`` view; dropped afterwards."""
    engine = open_engine(db_url)
    table = unique("out")
    rows = LabelRows(run_key="a", ids=np.array([1, 2]), labels=np.array([0, 1]), k=2, method="lwea", theta=0.4,
                     ensemble_size=4, seed=0, source_table="features")
    write_labels(engine, parse_table_name(table), rows)
    view = ensure_latest_view(engine, parse_table_name(table))
    yield engine, table, view
    with engine.begin() as connection:
        drop_labels_table(connection, table)
    engine.dispose()


def test_the_latest_view_is_refused_naming_the_labels_table(labels_with_view):
    engine, table, view = labels_with_view
    with pytest.raises(LwecInputError) as error:
        check_label_table(engine, parse_table_name(view), parse_table_name("features"))
    message = str(error.value)
    assert message == (f"output_table={view!r} is a view, not a table; labels are written to a table: choose "
                       f"another name (this looks like the latest-labels view of {table!r}: pass "
                       f"output_table={table!r})")
    check_label_table(engine, parse_table_name(table), parse_table_name("features"))  # the table itself is fine


def test_any_view_is_refused(db_url, labels_with_view):
    engine, table, _ = labels_with_view
    view = unique("report")
    with engine.begin() as connection:
        connection.exec_driver_sql(f'CREATE VIEW "{view}" AS SELECT * FROM "{table}"')
    try:
        with pytest.raises(LwecInputError, match=rf"output_table='{view}' is a view, not a table"):
            check_label_table(engine, parse_table_name(view), parse_table_name("features"))
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(f'DROP VIEW "{view}"')


def test_sqlite_names_are_compared_without_case(tmp_path):
    (tmp_path / "case.db").touch()
    engine = open_engine(f"sqlite:///{tmp_path / 'case.db'}")
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x)")
        connection.exec_driver_sql("CREATE VIEW Report AS SELECT * FROM t")
        connection.exec_driver_sql("CREATE INDEX by_x ON t (x)")
    with pytest.raises(LwecInputError, match="is a view"):
        check_label_table(engine, parse_table_name("report"), parse_table_name("t"))  # SQLite: the same name
    with pytest.raises(LwecInputError, match="is an index, not a table"):
        check_label_table(engine, parse_table_name("by_x"), parse_table_name("t"))
    engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("ddl, kind", [
    ("CREATE MATERIALIZED VIEW {name} AS SELECT 1 AS x", "materialized view"),
    ("CREATE SEQUENCE {name}", "sequence"),
])
def test_postgres_other_relations_are_refused(ddl, kind):
    from helpers.pipeline import postgres_url_or_skip

    engine = open_engine(postgres_url_or_skip())
    name = unique("rel")
    with engine.begin() as connection:
        connection.exec_driver_sql(ddl.format(name=name))
    try:
        with pytest.raises(LwecInputError, match=rf"output_table='{name}' is a {kind}, not a table"):
            check_label_table(engine, parse_table_name(name), parse_table_name("features"))
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(f"DROP {kind.upper()} {name}")
        engine.dispose()
