"""Database errors: only connection failures are "unreachable" (and retried); everything else is refused at once.

Every message is one line, names the database with its password masked, and quotes no SQL and no row values.
Real servers and real errors: revoked privileges, read-only transactions, closed ports, a silent listener.
"""

from __future__ import annotations

import re
import urllib.parse

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import drop_labels_table, postgres_url_or_skip, unique
from lwec_tasks.io import (
    DatabaseRefusedError,
    LabelRows,
    describe_source,
    open_engine,
    read_rows,
    write_labels,
)
from lwec_tasks.io.catalog import count_values
from lwec_tasks.io.errors import database_errors
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.staging import begin_run, discard_run
from lwec_tasks.stages.partitions import PartitionKeys, write_partition


def rows_for(ids, key="a"):
    ids = np.asarray(ids, dtype=object) if isinstance(ids[0], str) else np.asarray(ids)
    return LabelRows(run_key=key, ids=ids, labels=np.arange(len(ids)) % 2, k=2, method="lwea", theta=0.4,
                     ensemble_size=4, seed=0, source_table="features")


def assert_one_clean_line(message: str, *absent: str) -> None:
    assert "\n" not in message and "[SQL" not in message and "[parameters" not in message, message
    for text in ("SELECT", "INSERT", "COPY", "DELETE", *absent):
        assert text not in message, message


@pytest.fixture
def pg():
    url = postgres_url_or_skip()
    engine = open_engine(url)
    names: list[str] = []
    yield url, engine, names
    with engine.begin() as connection:
        for name in names:
            drop_labels_table(connection, name)
    engine.dispose()


def with_password(url: str) -> str:
    """The test server's URL with a password visible in it (to check that it is masked)."""
    return sa.make_url(url).render_as_string(hide_password=False)


# ----------------------------------------------------------------------------- refused: not retried


@pytest.mark.postgres
def test_postgres_permission_denied_on_read_is_refused_in_one_line(pg):
    url, engine, names = pg
    name = unique("secret_features")
    names.append(name)
    with engine.begin() as connection:
        connection.exec_driver_sql(f'CREATE TABLE "{name}" (id bigint primary key, f0 float8)')
        connection.exec_driver_sql(f"INSERT INTO \"{name}\" VALUES (1, 0.5), (2, 1.5)")
        connection.exec_driver_sql(f'REVOKE SELECT ON "{name}" FROM CURRENT_USER')
    source = describe_source(engine, parse_table_name(name))  # the catalogue is readable
    for attempt in (lambda: count_values(engine, source, ["f0"]),
                    lambda: read_rows(engine, source, ["id", "f0"], order_by="id")):
        with pytest.raises(DatabaseRefusedError) as error:
            attempt()
        message = str(error.value)
        assert message.startswith("database postgresql+psycopg://lwec:***@") and "lwec:lwec@" not in message
        assert f"permission denied for table {name}" in message
        assert_one_clean_line(message)
        assert error.value.__cause__ is None and error.value.__suppress_context__


@pytest.mark.postgres
def test_postgres_permission_denied_on_write_is_refused(pg):
    url, engine, names = pg
    out = unique("locked_labels")
    names.append(out)
    write_labels(engine, parse_table_name(out), rows_for([1, 2, 3]))
    rows = rows_for([7, 8, 9], key="b")
    pending = begin_run(engine, parse_table_name(out), sa.BigInteger(), rows)
    target = re.escape(str(pending.target))  # the run's own table
    with engine.begin() as connection:
        connection.exec_driver_sql(f'REVOKE INSERT ON "{pending.target}" FROM CURRENT_USER')
    with pytest.raises(DatabaseRefusedError, match=rf"refused to write labels to table '{target}': "
                                                   rf"permission denied for table {target}$") as error:
        write_partition(url, pending.target, PartitionKeys(rows.ids, None), rows.labels, pending.append_run)
    assert_one_clean_line(str(error.value), "7, 8")
    discard_run(engine, pending)
    with engine.connect() as connection:  # the refused run left nothing behind
        assert connection.exec_driver_sql(f'select run_key from "{out}_runs"').scalars().all() == ["a"]


@pytest.mark.postgres
def test_postgres_read_only_transactions_are_refused(pg):
    url, engine, names = pg
    read_only = f"{with_password(url)}?options={urllib.parse.quote('-c default_transaction_read_only=on')}"
    out = unique("ro_labels")
    names.append(out)
    engine = open_engine(read_only)
    try:
        with pytest.raises(DatabaseRefusedError, match="read-only transaction") as error:
            write_labels(engine, parse_table_name(out), rows_for([1, 2]))
        assert_one_clean_line(str(error.value), ":lwec@")
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_ids_of_another_type_are_refused_without_their_values(pg):
    url, engine, names = pg
    out = unique("typed_labels")
    names.append(out)
    write_labels(engine, parse_table_name(out), rows_for([1, 2]))  # bigint ids
    with pytest.raises(DatabaseRefusedError, match=r"invalid input syntax for type bigint") as error:
        write_labels(engine, parse_table_name(out), rows_for(["row-7", "row-8"], key="b"))
    assert_one_clean_line(str(error.value), "row-7")


@pytest.mark.postgres
def test_postgres_a_data_error_does_not_quote_the_value(pg):
    url, engine, _ = pg
    with engine.connect() as connection, pytest.raises(DatabaseRefusedError) as error, \
            database_errors(engine, "read table 'x'"):
        connection.exec_driver_sql("select 'row-7'::bigint")
    assert str(error.value).endswith("refused to read table 'x': invalid input syntax for type bigint")
    assert_one_clean_line(str(error.value), "row-7")


@pytest.mark.postgres
def test_postgres_a_failed_password_is_refused_not_retried():
    url = sa.make_url(postgres_url_or_skip()).set(password="wrong-s3cret")
    with pytest.raises(DatabaseRefusedError, match="password authentication failed") as error:
        describe_source(open_engine(url.render_as_string(hide_password=False)), parse_table_name("features"))
    assert "wrong-s3cret" not in str(error.value)
    assert_one_clean_line(str(error.value))


def test_sqlite_read_only_database_is_refused(tmp_path):
    path = tmp_path / "ro.db"
    path.touch()
    writable = open_engine(f"sqlite:///{path}")
    write_labels(writable, parse_table_name("labels"), rows_for([1, 2]))
    writable.dispose()
    engine = open_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    with pytest.raises(DatabaseRefusedError, match="attempt to write a readonly database") as error:
        write_labels(engine, parse_table_name("labels"), rows_for([3, 4], key="b"))
    assert_one_clean_line(str(error.value))
    engine.dispose()
