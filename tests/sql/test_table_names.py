"""Table names with a schema (``analytics.features``), quoted parts, mixed case and spaces, on SQLite and PostgreSQL."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa

from helpers.pipeline import blobs_frame, latest_earlier_run, postgres_url_or_skip, unique, write_frame
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import (
    LabelRows,
    TableName,
    check_label_table,
    check_new_table_name,
    default_output_table,
    describe_source,
    ensure_latest_view,
    latest_view_name,
    open_engine,
    parse_table_name,
    read_rows,
    write_labels,
)


@pytest.mark.parametrize("text, parsed", [
    ("features", TableName("features")),
    ("analytics.features", TableName("features", "analytics")),
    ('"my.table"', TableName("my.table")),
    ('analytics."my.table"', TableName("my.table", "analytics")),
    ('"Sales Data"."Feature Table"', TableName("Feature Table", "Sales Data")),
    ("Feature Table", TableName("Feature Table")),
    ('"Feature Table"', TableName("Feature Table")),
    ('"say ""hi"""', TableName('say "hi"')),
    ('blobs"; DROP TABLE blobs; --', TableName('blobs"; DROP TABLE blobs; --')),  # not the grammar: one literal name
    ('a."b', TableName('a."b')),
])
def test_names_parse_into_schema_and_table(text, parsed):
    assert parse_table_name(text) == parsed
    assert parse_table_name(str(parsed)) == parsed  # the canonical spelling reads back the same


def test_canonical_spelling_quotes_only_parts_that_need_it():
    assert str(TableName("features", "analytics")) == "analytics.features"
    assert str(TableName("my.table", "analytics")) == 'analytics."my.table"'
    assert str(TableName("Feature Table")) == "Feature Table"


def test_three_parts_are_refused_with_the_quoting_rule():
    with pytest.raises(LwecInputError, match=r'3 dot-separated parts.*"my.table"'):
        parse_table_name("db.analytics.features")


def test_output_names_may_carry_a_schema_and_defaults_stay_in_the_source_schema():
    assert check_new_table_name("analytics.labels") == TableName("labels", "analytics")
    assert str(check_new_table_name('"Sales Data".labels')) == "Sales Data.labels"  # spaces need no quotes
    for bad in ("analytics.my labels", 'analytics."a.b"', "a.b.c", ".labels"):
        with pytest.raises(LwecInputError, match="not allowed|dot-separated"):
            check_new_table_name(bad)
    assert str(default_output_table(TableName("features", "analytics"))) == "analytics.features_lwec_labels"
    assert str(default_output_table(TableName("my.table", "analytics"))) == "analytics.my_table_lwec_labels"
    assert str(default_output_table(TableName("Feature Table"))) == "Feature_Table_lwec_labels"
    assert latest_view_name(TableName("labels", "analytics")) == TableName("labels_latest", "analytics")
    with pytest.raises(LwecInputError, match="63 bytes"):
        latest_view_name(TableName("x" * 60, "analytics"))  # the schema does not count towards the name's length


def rows_for(key, ids, labels, source):
    return LabelRows(run_key=key, ids=np.asarray(ids), labels=np.asarray(labels), k=2, method="lwea", theta=0.4,
                     ensemble_size=4, seed=0, source_table=source)


# ----------------------------------------------------------------------------- PostgreSQL schemas


def write_in_schema(url, schema, table, frame):
    engine = sa.create_engine(url)
    columns = [sa.Column("id", sa.BigInteger, primary_key=True),
               *(sa.Column(name, sa.Float) for name in frame.columns if name.startswith("f"))]
    created = sa.Table(table, sa.MetaData(), *columns, schema=schema)
    with engine.begin() as connection:
        created.create(connection)
        connection.execute(sa.insert(created), frame[[c.name for c in columns]].to_dict("records"))
    engine.dispose()


@pytest.mark.postgres
def test_postgres_schema_qualified_source_labels_view_and_history(pg_schema):
    url, schema = pg_schema
    frame = blobs_frame(n=40).drop(columns=["target", "note"])
    write_in_schema(url, schema, "features", frame)
    source_name = f"{schema}.features"
    engine = open_engine(url)
    try:
        source = describe_source(engine, parse_table_name(source_name))
        assert source.name == source_name and source.table.schema == schema
        read = read_rows(engine, source, ["id", "f0"], order_by="id")
        assert read["id"].tolist() == sorted(frame["id"])

        output = default_output_table(parse_table_name(source_name))
        assert str(output) == f"{schema}.features_lwec_labels"
        check_label_table(engine, output, parse_table_name(source_name), id_type=source.table.c.id.type, id_column="id")
        ids = np.sort(frame["id"].to_numpy())
        write_labels(engine, output, rows_for("first", ids, ids % 2, source_name), keep_runs=5)
        write_labels(engine, output, rows_for("second", ids, (ids + 1) % 2, source_name), keep_runs=5)
        view = ensure_latest_view(engine, output)
        assert view == f"{schema}.features_lwec_labels_latest"
        inspector = sa.inspect(engine)
        tables = set(inspector.get_table_names(schema=schema))
        assert {"features_lwec_labels_runs", "features_lwec_labels_rows"} <= tables
        assert {"features_lwec_labels", "features_lwec_labels_latest"} <= set(inspector.get_view_names(schema=schema))
        default = set(inspector.get_table_names() + inspector.get_view_names())  # nothing in the default schema
        assert not default & {"features_lwec_labels", "features_lwec_labels_runs", "features_lwec_labels_rows"}
        with engine.connect() as connection:
            latest = connection.execute(sa.select(sa.table("features_lwec_labels_latest", sa.column("run_key"),
                                                           schema=schema).c.run_key).distinct()).scalars().all()
        assert latest == ["second"]
        earlier = latest_earlier_run(engine, output, source_name, "third")
        assert earlier.run_key == "second" and earlier.ids.tolist() == ids.tolist()
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_quoted_names_with_dots_spaces_and_case(pg_schema):
    url, schema = pg_schema
    frame = blobs_frame(n=20).drop(columns=["target", "note"])
    write_in_schema(url, schema, "my.table", frame)
    write_in_schema(url, schema, "Feature Table", frame)
    engine = open_engine(url)
    try:
        assert describe_source(engine, parse_table_name(f'{schema}."my.table"')).table.name == "my.table"
        assert describe_source(engine, parse_table_name(f'{schema}."Feature Table"')).table.name == "Feature Table"
        assert describe_source(engine, parse_table_name(f"{schema}.Feature Table")).table.name == "Feature Table"
        with pytest.raises(LwecInputError, match=r"not found.*existing tables: .*Feature Table"):
            describe_source(engine, parse_table_name(f"{schema}.feature table"))  # case is kept: no such table
        out = f'{schema}."Feature Table"'
        labels = default_output_table(parse_table_name(out))
        write_labels(engine, labels, rows_for("a", frame["id"].to_numpy(), np.zeros(20, dtype=int), out))
        assert str(labels) == f"{schema}.Feature_Table_lwec_labels"
        stored = sa.Table("Feature_Table_lwec_labels", sa.MetaData(), schema=schema, autoload_with=engine)
        with engine.connect() as connection:
            assert connection.execute(sa.select(sa.func.count()).select_from(stored)).scalar() == 20
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_unknown_schema_names_the_schemas_and_how_to_quote():
    url = postgres_url_or_skip()
    engine = open_engine(url)
    table = unique("dotted")
    write_frame(url, f"{table}.x", blobs_frame(n=10))  # a table whose name contains a dot, default schema
    try:
        with pytest.raises(LwecInputError, match=r"has no schema 'no_such_schema'.*its schemas are.*'public'"):
            describe_source(engine, parse_table_name("no_such_schema.features"))
        with pytest.raises(LwecInputError, match=rf'in double quotes: "{table}.x"'):
            describe_source(engine, parse_table_name(f"{table}.x"))
        assert describe_source(engine, parse_table_name(f'"{table}.x"')).table.name == f"{table}.x"
        with pytest.raises(LwecInputError, match=r"has no schema 'no_such_schema'"):
            check_label_table(engine, parse_table_name("no_such_schema.labels"), parse_table_name(f'"{table}.x"'))
    finally:
        with engine.begin() as connection:
            sa.Table(f"{table}.x", sa.MetaData()).drop(connection, checkfirst=True)
        engine.dispose()


# ----------------------------------------------------------------------------- SQLite


def test_sqlite_main_schema_is_accepted_and_other_schemas_are_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'names.db'}"
    frame = blobs_frame(n=20)
    write_frame(url, "features", frame)
    write_frame(url, "Feature Table", frame)
    engine = open_engine(url)
    source = describe_source(engine, parse_table_name("main.features"))
    assert source.name == "main.features"
    assert len(read_rows(engine, source, ["id", "f0"], order_by="id")) == 20
    write_labels(engine, parse_table_name("main.labels"), rows_for("a", frame["id"].to_numpy(), np.zeros(20, dtype=int),
                                                 "main.features"))
    assert ensure_latest_view(engine, parse_table_name("main.labels")) == "main.labels_latest"
    assert sa.inspect(engine).has_table("labels")
    assert len(read_rows(engine, describe_source(engine, parse_table_name('"Feature Table"')), ["id"])) == 20
    with pytest.raises(LwecInputError, match=r"no schema 'analytics' \(a SQLite schema is an attached database: "
                                             r"\['main'\]\).*\"analytics.features\""):
        describe_source(engine, parse_table_name("analytics.features"))
    with pytest.raises(LwecInputError, match="has no schema 'analytics'"):
        check_label_table(engine, parse_table_name("analytics.labels"), parse_table_name("features"))
    with pytest.raises(LwecInputError, match="is the source table"):
        check_label_table(engine, parse_table_name("main.features"),
                          parse_table_name("features"))  # the same table, spelled two ways
    engine.dispose()


# ----------------------------------------------------------------------------- 63-byte names


def test_default_output_names_fit_63_bytes_with_every_name_derived_from_them():
    import hashlib

    from lwec_tasks.io.label_storage import storage_names
    from lwec_tasks.request import ConsensusRequest

    for source in ("f" * 63, "analytics." + "g" * 63, "Ä" * 31, "x" * 44, "x" * 45):
        output = default_output_table(parse_table_name(source))
        names = storage_names(output)
        for name in (names.view, names.runs, names.rows, names.latest):
            assert len(name.name.encode("utf-8")) <= 63, name
        assert check_new_table_name(output) == output == default_output_table(parse_table_name(source))  # deterministic
        request = ConsensusRequest(database_url="sqlite:///x.db", table=source, n_clusters=3)
        assert request.resolved_output_table == str(output) and request.output_name == output
    assert default_output_table(TableName("x" * 44)) == TableName("x" * 44 + "_lwec_labels")  # fits as it is: whole
    cut = default_output_table(TableName("x" * 45)).name
    assert cut == "x" * 35 + "_" + hashlib.md5(b"x" * 45).hexdigest()[:8] + "_lwec_labels" and len(cut) == 56
    assert default_output_table(TableName("y" * 60 + "a")) != default_output_table(TableName("y" * 60 + "b"))


def test_a_too_long_output_table_is_refused_naming_the_option_and_what_lwec_would_derive():
    from lwec_tasks.request import ConsensusRequest

    given = "o" * 60
    with pytest.raises(LwecInputError) as error:
        ConsensusRequest(database_url="sqlite:///x.db", table="features", n_clusters=3, output_table=given)
    message = str(error.value)
    assert message.startswith(f"output_table (--output-table)={given!r} is too long: the view lwec makes beside "
                              f"it, '{given}_latest', would be 67 bytes")
    assert message.endswith("give output_table (--output-table) an output table name of at most 56 bytes")
    ConsensusRequest(database_url="sqlite:///x.db", table="features", n_clusters=3, output_table="o" * 56)
