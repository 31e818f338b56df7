"""Names that always fit: every name lwec derives from a source table's name (up to PostgreSQL's 63 bytes) fits
63 bytes, and an ``--output-table`` too long for the names beside it is refused before anything is written."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy.dialects import postgresql

from helpers.pipeline import blobs_frame
from lwec_tasks.cli import main
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import TableName, check_new_table_name, default_output_table
from lwec_tasks.io.identifiers import run_key_index_name
from lwec_tasks.io.label_storage import rows_table, runs_table, storage_names
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.preflight import check_assign_request

FEATURES = ["f0", "f1", "f2", "f3"]


def derived_names(source: str) -> list[TableName]:
    """Every relation, index and per-run table name lwec makes for ``source``'s default output table."""
    names = storage_names(default_output_table(parse_table_name(source)))
    runs, rows = runs_table(names), rows_table(names, sa.BigInteger())
    ddl = [sa.schema.CreateTable(runs), sa.schema.CreateTable(rows), *map(sa.schema.CreateIndex, runs.indexes)]
    for statement in ddl:  # SQLAlchemy refuses an identifier over 63 characters when it compiles the DDL
        statement.compile(dialect=postgresql.dialect())
    indexes = [names.runs.with_name(index.name) for index in runs.indexes]
    per_run = [table for run in (1, 2**31 - 1, 2**63 - 1) for table in (names.run_rows(run), names.staging(run))]
    return [names.view, names.runs, names.rows, names.latest, *indexes, *per_run, names.run_rows("unpartitioned")]


def fits(name: TableName) -> bool:
    return len(name.name.encode("utf-8")) <= 63


#: Table names up to 63 UTF-8 bytes: any characters (spaces, quotes, dots, non-ASCII) but NUL and surrogates.
ANY_NAME = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1, max_size=63).filter(
    lambda name: len(name.encode("utf-8")) <= 63)
#: Plain identifiers (kept as they are in the default output table's name).
PLAIN_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,62}", fullmatch=True)
SCHEMA = st.one_of(st.none(), st.sampled_from(["analytics", "Sales Data"]))
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(name=st.one_of(ANY_NAME, PLAIN_NAME), schema=SCHEMA)
def test_every_name_derived_from_a_source_of_up_to_63_bytes_fits(name, schema):
    source = str(TableName(name, schema))
    output = default_output_table(parse_table_name(source))
    assert check_new_table_name(output) == output  # the default passes the check an explicit one must pass
    derived = derived_names(source)
    assert all(fits(table) for table in derived), [(str(t), len(t.name.encode())) for t in derived]
    assert len({table.name for table in derived}) == len(derived)  # no two relations of one storage share a name
    assert all(table.schema == schema for table in derived)  # beside the source, in its schema
    assert storage_names(default_output_table(parse_table_name(source))) == storage_names(output)  # same every run


@FAST
@given(first=PLAIN_NAME, second=PLAIN_NAME)
def test_distinct_plain_sources_share_no_derived_name(first, second):
    assume(first != second)
    assert not {t.name for t in derived_names(first)} & {t.name for t in derived_names(second)}


@FAST
@given(first=ANY_NAME, second=ANY_NAME)
def test_distinct_sources_get_distinct_outputs_but_where_only_replaced_characters_differ(first, second):
    """Characters other than letters, digits and ``_`` become ``_`` in a short source's default output name (as
    documented: ``Feature Table`` → ``Feature_Table_lwec_labels``; ``t_`` goes before a leading digit), so only
    those sources share one (the storage keeps each source table's runs apart); a long name is shortened with
    the hash of the name as given, which tells them apart."""
    assume(first != second)
    stems = [stem(first), stem(second)]
    if stems[0] != stems[1] or min(map(len, stems)) > 44:  # longer stems: cut, and the hash of the name added
        assert default_output_table(TableName(first)) != default_output_table(TableName(second))


def stem(name: str) -> str:
    """The documented start of a default output table's name: other characters than letters, digits and ``_``
    replaced by ``_``, ``t_`` before a digit."""
    replaced = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return f"t_{replaced}" if replaced[0].isdigit() else replaced


def test_a_63_character_source_keeps_the_names_it_gets_now():
    """Pinned: changing a default name would hide a source's earlier runs from its ``_latest`` view."""
    names = storage_names(default_output_table(parse_table_name("s" * 63)))
    assert str(names.view) == "sssssssssssssssssssssssssssssssssss_d3bf3d54_lwec_labels"
    assert run_key_index_name(names.runs).name == "sssssssssssssssssssssssssssssssssss_d3bf3d54_lw_4e2db790_by_key"
    assert run_key_index_name(TableName("labels_runs")).name == "labels_runs_by_key"  # short: as before


# ----------------------------------------------------------------------------- on PostgreSQL

LONG_SOURCE = "Quarterly Features " + "q" * 44  # 63 characters, a space in it


def write_features(url: str, schema: str, table: str, n: int = 60) -> None:
    frame = blobs_frame(n=n)
    created = sa.Table(table, sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
                       *(sa.Column(name, sa.Float) for name in FEATURES), schema=schema)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        created.create(connection)
        connection.execute(sa.insert(created), frame[["id", *FEATURES]].to_dict("records"))
    engine.dispose()


def relations(url: str, schema: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return set(inspector.get_table_names(schema=schema)) | set(inspector.get_view_names(schema=schema))
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgres_a_63_character_source_table_writes_its_labels_and_latest_view(prefect_server, mlflow_store,
                                                                                 pg_schema):
    from flows.consensus import consensus_flow

    url, schema = pg_schema
    assert len(LONG_SOURCE) == 63
    write_features(url, schema, LONG_SOURCE)
    table = f"{schema}.{LONG_SOURCE}"
    parameters = {"database_url": url, "table": table, "ensemble_size": 4, "seed": 3,
                  "n_clusters": 3, "feature_columns": FEATURES, "experiment": "long-names",
                  "tracking_uri": mlflow_store}
    summary = consensus_flow(**parameters)

    names = storage_names(default_output_table(parse_table_name(table)))  # the names every run of this source gets
    assert summary["output_table"] == str(names.view) and len(names.view.name) == 56
    assert summary["rows_written"] == 60
    assert {names.view.name, names.runs.name, names.rows.name, names.latest.name} <= relations(url, schema)
    engine = sa.create_engine(url)
    try:
        indexes = {index["name"] for index in sa.inspect(engine).get_indexes(names.runs.name, schema=schema)}
        assert run_key_index_name(names.runs).name in indexes and len(run_key_index_name(names.runs).name) == 63
        latest = sa.table(names.latest.name, sa.column("run_key"), sa.column("id"), schema=schema)
        with engine.connect() as connection:
            shown = connection.execute(sa.select(latest.c.run_key, sa.func.count()).group_by(latest.c.run_key)).all()
    finally:
        engine.dispose()
    assert shown == [(summary["run_key"], 60)]


@pytest.mark.postgres
@pytest.mark.parametrize("command", ["run", "assign"])
def test_postgres_a_too_long_output_table_on_the_command_line_is_refused_before_anything_is_written(
        pg_schema, capsys, command):
    url, schema = pg_schema
    write_features(url, schema, LONG_SOURCE)
    given = "o" * 57  # fits 63 bytes itself, but its _latest view would not
    extra = ["-k", "3"] if command == "run" else ["--model-uri", "runs:/0123/model"]
    code = main([command, "--database-url", url, "--table", f"{schema}.{LONG_SOURCE}", *extra,
                 "--output-table", f"{schema}.{given}"])
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"lwec {command}: error: ") and "--output-table" in last and f"{given}_latest" in last
    assert "at most 56 bytes" in last
    assert relations(url, schema) == {LONG_SOURCE}  # no table or view was made


def test_a_too_long_output_table_is_refused_by_the_preflight_and_the_flow_parameters_by_name(tmp_path):
    url = f"sqlite:///{tmp_path / 'features.db'}"
    with pytest.raises(LwecInputError, match=r"^output_table \(--output-table\)='o{57}' is too long"):
        check_assign_request(url, "features", model_uri="runs:/0123/model", output_table="o" * 57)
    assert not (tmp_path / "features.db").exists()  # refused before connecting
    from lwec_tasks.request import ConsensusRequest

    with pytest.raises(LwecInputError, match=r"^output_table \(--output-table\)='o{80}' is too long.*at most 56"):
        ConsensusRequest(database_url=url, table="features", n_clusters=3, output_table="o" * 80)
    ConsensusRequest(database_url=url, table="features", n_clusters=3, output_table="o" * 56)  # fits: its index
    assert len(run_key_index_name(storage_names(TableName("o" * 56)).runs).name) == 63  # is shortened, not refused
