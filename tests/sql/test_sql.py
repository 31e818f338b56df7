"""Reading feature tables and writing label tables, on SQLite and (when available) PostgreSQL."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from helpers.pipeline import blobs_frame, drop_labels_table, free_port, read_labels, unique, write_frame
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import (
    DatabaseRefusedError,
    DatabaseUnreachableError,
    LabelRows,
    check_label_table,
    check_new_table_name,
    default_output_table,
    describe_source,
    mask_url,
    open_engine,
    read_rows,
    write_labels,
)
from lwec_tasks.io.names import TableName, parse_table_name


@pytest.fixture
def features_table(db_url):
    table = unique("features")
    frame = blobs_frame(n=120)
    write_frame(db_url, table, frame)
    yield table, frame
    engine = sa.create_engine(db_url)
    with engine.begin() as connection:
        for name in (table, f"{table}_labels"):
            drop_labels_table(connection, name)
    engine.dispose()


def test_reflection_reports_columns_types_and_key(db_url, features_table):
    table, _ = features_table
    source = describe_source(open_engine(db_url), parse_table_name(table))
    assert source.columns == ("id", "f0", "f1", "f2", "f3", "target", "note")
    assert source.numeric_columns == ("id", "f0", "f1", "f2", "f3", "target")
    assert source.primary_key == ("id",)


def test_unknown_table_lists_existing_tables(db_url, features_table):
    table, _ = features_table
    engine = open_engine(db_url)
    write_labels(engine, parse_table_name(f"{table}_labels"), LabelRows(run_key="a", ids=np.array([1, 2]),
                                                                        labels=np.array([0, 1]),
                                                      k=2, method="lwea", theta=0.4, ensemble_size=3, seed=0,
                                                      source_table=table))
    with pytest.raises(LwecInputError, match=rf"table 'nope' not found .*existing tables: .*'{table}'") as error:
        describe_source(engine, parse_table_name("nope"))
    # The labels storage is listed by its view only: not by its runs and rows tables, nor by each run's own table
    # (PostgreSQL).
    message = str(error.value)
    assert f"'{table}_labels'" in message and "$" not in message
    assert "_labels_rows" not in message and "_labels_runs" not in message
    engine.dispose()


@pytest.mark.parametrize("hostile", ['x"; DROP TABLE {t}; --', "{t}; DELETE FROM {t}", "{t}' OR '1'='1"])
def test_injection_shaped_table_names_are_unknown_tables_and_harm_nothing(db_url, features_table, hostile):
    table, frame = features_table
    with pytest.raises(LwecInputError, match="not found"):
        describe_source(open_engine(db_url), parse_table_name(hostile.format(t=table)))
    source = describe_source(open_engine(db_url), parse_table_name(table))
    assert len(read_rows(open_engine(db_url), source, ["id"])) == len(frame)


def test_chunked_read_returns_every_row_in_id_order(db_url, features_table):
    table, frame = features_table
    engine = open_engine(db_url)
    rows = read_rows(engine, describe_source(engine, parse_table_name(table)), ["id", "f0", "note"], order_by="id",
                     chunk_size=7)
    expected = frame.sort_values("id")[["id", "f0", "note"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(rows, expected, check_dtype=False)


def rows_for(key, ids, labels, seed=0):
    return LabelRows(run_key=key, ids=np.asarray(ids), labels=np.asarray(labels), k=2, method="lwea",
                     theta=0.4, ensemble_size=10, seed=seed, source_table="features")


def test_rewriting_a_run_key_replaces_its_rows_and_keeps_other_keys(db_url, features_table):
    table, _ = features_table
    out = f"{table}_labels"
    engine = open_engine(db_url)
    assert write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 3], [0, 1, 1])) == 3
    write_labels(engine, parse_table_name(out), rows_for("b", [1, 2], [1, 0]))
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 3], [1, 0, 0], seed=5))
    stored = read_labels(db_url, out)
    assert stored[["run_key", "id", "label"]].values.tolist() == [
        ["a", 1, 1], ["a", 2, 0], ["a", 3, 0], ["b", 1, 1], ["b", 2, 0]]
    assert set(stored.loc[stored.run_key == "a", "seed"]) == {5}
    # Python ints, not numpy BLOBs: an integer comparison in SQL finds them.
    with engine.connect() as connection:
        labels = sa.Table(out, sa.MetaData(), autoload_with=connection)
        assert connection.execute(sa.select(sa.func.count()).where(labels.c.label == 0)).scalar() == 3


def test_a_failed_write_leaves_the_previous_rows_untouched(db_url, features_table):
    table, _ = features_table
    out = f"{table}_labels"
    engine = open_engine(db_url)
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 3], [0, 1, 1]))
    before = read_labels(db_url, out)
    # duplicate id: the insert fails after the delete
    with pytest.raises(DatabaseRefusedError, match="duplicate|UNIQUE"):
        write_labels(engine, parse_table_name(out), rows_for("a", [7, 8, 8], [1, 1, 1]))
    pd.testing.assert_frame_equal(read_labels(db_url, out), before)


def test_a_failed_first_write_leaves_no_table_behind(db_url, features_table):
    table, _ = features_table
    out = f"{table}_labels"
    engine = open_engine(db_url)
    with pytest.raises(DatabaseRefusedError, match="duplicate|UNIQUE"):  # duplicate id in the very first write
        write_labels(engine, parse_table_name(out), rows_for("a", [7, 8, 8], [1, 1, 1]))
    assert not sa.inspect(engine).has_table(out)
    engine.dispose()


def test_existing_foreign_output_table_and_source_table_are_refused(db_url, features_table):
    table, _ = features_table
    engine = open_engine(db_url)
    with pytest.raises(LwecInputError, match="is not an lwec labels table"):
        check_label_table(engine, parse_table_name(table), parse_table_name("other"))
    with pytest.raises(LwecInputError, match="is the source table"):
        check_label_table(engine, parse_table_name(table), parse_table_name(table))
    check_label_table(engine, parse_table_name(f"{table}_labels"), parse_table_name(table))  # not there yet: fine


@pytest.mark.parametrize("name", ['labels"; DROP TABLE x; --', "my labels", "1labels", "a" * 64, "lab-els", ""])
def test_created_table_names_must_be_plain_identifiers(name):
    with pytest.raises(LwecInputError, match="output_table"):
        check_new_table_name(name)


def test_default_output_table_is_a_plain_identifier():
    assert default_output_table(TableName("features")) == TableName("features_lwec_labels")
    assert str(check_new_table_name(default_output_table(TableName('9 odd"; name')))) == "t_9_odd___name_lwec_labels"


def test_passwords_never_appear_in_printed_urls():
    assert mask_url("postgresql+psycopg://lwec:s3cret@db:5432/x") == "postgresql+psycopg://lwec:***@db:5432/x"
    assert "s3cret" not in mask_url("not a url :// user:s3cret@host")


@pytest.mark.parametrize("url", [
    "postgresql+psycopg://lwec@db/x?password=s3cret&sslmode=require",
    "mysql+pymysql://lwec@db/x?PWD=s3cret",
    "mysql+pymysql://lwec@db/x?passwd=s3cret",
    "postgresql+psycopg://lwec@db/x?sslpassword=s3cret",
    "snowflake://lwec@acct/db?token=s3cret",
    "mssql+pyodbc:///?odbc_connect=DRIVER%3D%7BODBC+Driver+18%7D%3BSERVER%3Ddb%3BUID%3Dlwec%3BPWD%3Ds3cret",
    "not a url @host?password=s3cret",
])
def test_passwords_in_the_query_string_are_masked_too(url):
    from lwec_tasks.io import url_has_credentials

    assert "s3cret" not in mask_url(url)
    assert "***" in mask_url(url)
    assert url_has_credentials(url)
    assert not url_has_credentials("postgresql+psycopg://lwec@db/x?sslmode=require")
    assert mask_url("postgresql+psycopg://lwec@db/x?sslmode=require") == "postgresql+psycopg://lwec@db/x?sslmode=require"


@pytest.mark.parametrize("url, masked", [
    # SQLAlchemy accepts an unencoded "@" or "/" in the password; none of it may show.
    ("postgresql://lwec:p@ss/w@db:5432/x", "postgresql://lwec:***@db:5432/x"),
    ("postgresql://lwec:p%40ss@db/x?sslmode=require&password=s3cret",
     "postgresql://lwec:***@db/x?sslmode=require&password=***"),
    ("sqlite:////data/a@b.db", "sqlite:////data/a@b.db"),  # an "@" in a path is not a password
    ("https://u:p@mlflow:5000/?token=s3cret&x=1", "https://u:***@mlflow:5000/?token=***&x=1"),
    ("mlruns", "mlruns"),
    ("user:s3cret@host", "***@host"),  # no scheme: everything before "@" is hidden
])
def test_one_masker_for_database_urls_and_tracking_uris(url, masked):
    from lwec_tasks.io import url_has_credentials

    assert mask_url(url) == masked
    assert url_has_credentials(url) == (masked != url)


def test_sqlalchemy_url_objects_are_masked_like_strings():
    url = sa.make_url("postgresql+psycopg://lwec:s3cret@db/x?password=s3cret&sslmode=require")
    assert mask_url(url) == "postgresql+psycopg://lwec:***@db/x?password=***&sslmode=require"


def test_the_masker_needs_only_the_standard_library():
    import ast
    import sys

    import lwec_tasks.masking

    tree = ast.parse(Path(lwec_tasks.masking.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_errors_mask_a_password_in_the_query_string():
    url = f"postgresql+psycopg://lwec@127.0.0.1:{free_port()}/nothing?password=s3cret"
    with pytest.raises(DatabaseUnreachableError) as error:
        describe_source(open_engine(url), parse_table_name("features"))
    assert "s3cret" not in str(error.value) and "password=***" in str(error.value)


def test_unreachable_server_raises_a_retryable_error_without_the_password():
    url = f"postgresql+psycopg://lwec:s3cret@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(DatabaseUnreachableError) as error:
        describe_source(open_engine(url), parse_table_name("features"))
    assert "cannot reach database postgresql+psycopg://lwec:***@127.0.0.1" in str(error.value)
    assert "s3cret" not in str(error.value)


def test_env_form_reads_the_url_from_the_environment(monkeypatch, tmp_path):
    (tmp_path / "env.db").touch()
    monkeypatch.setenv("LWEC_TEST_DB", f"sqlite:///{tmp_path / 'env.db'}")
    assert open_engine("env:LWEC_TEST_DB").url.database == str(tmp_path / "env.db")
    with pytest.raises(LwecInputError, match="LWEC_TEST_MISSING"):
        open_engine("env:LWEC_TEST_MISSING")


def test_a_missing_sqlite_file_is_reported_not_created(tmp_path):
    missing = tmp_path / "missing.db"
    with pytest.raises(LwecInputError, match="does not exist"):
        open_engine(f"sqlite:///{missing}")
    assert not missing.exists()
