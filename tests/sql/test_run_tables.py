"""On PostgreSQL the rows table is partitioned by run, each run a table of its own: written unindexed, attached
when published, dropped when the run goes; storage of the release before is partitioned by the next write, every
row kept, and a failed write leaves no table behind."""

from __future__ import annotations

import datetime as dt
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

import lwec_tasks.io.staging as staging
import lwec_tasks.io.storage_setup as storage_setup
from helpers.label_rows import rows_for
from helpers.unpartitioned_labels import write_unpartitioned
from helpers.wide_labels import label_table_schema, replace_run_key
from lwec_tasks.io import ensure_latest_view, write_labels
from lwec_tasks.io.catalog import pg_relkind
from lwec_tasks.io.history import prune_runs
from lwec_tasks.io.identifiers import MAX_IDENTIFIER_BYTES
from lwec_tasks.io.label_storage import VIEW_COLUMNS, storage_names
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.io.run_tables import run_rows_name
from lwec_tasks.io.staging import append_to, begin_run
from lwec_tasks.stages.planning import earlier_run

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def pg(pg_schema):
    """``(engine, out)``: an engine of the test server and a labels table name in a fresh schema."""
    url, schema = pg_schema
    engine = sa.create_engine(url)
    yield engine, f"{schema}.labels"
    engine.dispose()


def layout(engine, out) -> tuple[str, dict[str, str], list[str]]:
    """The rows table's relkind, its partitions (name → bound) and every table named like a run's table."""
    rows = storage_names(parse_table_name(out)).rows
    inherits = sa.table("pg_inherits", sa.column("inhrelid"), sa.column("inhparent"), schema="pg_catalog")
    classes = sa.table("pg_class", sa.column("oid"), sa.column("relname"), sa.column("relpartbound"),
                       schema="pg_catalog")
    with engine.connect() as connection:
        kind = pg_relkind(connection, rows)
        parent = connection.dialect.identifier_preparer.format_table(sa.table(rows.name, schema=rows.schema))
        partitions = dict(connection.execute(
            sa.select(classes.c.relname, sa.func.pg_get_expr(classes.c.relpartbound, classes.c.oid))
            .select_from(classes.join(inherits, inherits.c.inhrelid == classes.c.oid))
            .where(inherits.c.inhparent == sa.func.to_regclass(parent))).all())
        tables = sa.inspect(connection).get_table_names(schema=rows.schema)
    return kind, partitions, sorted(name for name in tables if name.startswith(f"{rows.name}$"))


def storage_options(engine, name) -> list[str] | None:
    """The ``reloptions`` of table ``name`` (a TableName)."""
    quoted = engine.dialect.identifier_preparer.format_table(sa.table(name.name, schema=name.schema))
    with engine.connect() as connection:
        return connection.execute(sa.text("SELECT reloptions FROM pg_class WHERE oid = to_regclass(:name)"),
                                  {"name": quoted}).scalar_one()


def published(engine, out) -> dict[str, int]:
    """Run key → run number of the published runs."""
    runs = storage_names(parse_table_name(out)).runs
    table = sa.table(runs.name, sa.column("run"), sa.column("run_key"), sa.column("published"), schema=runs.schema)
    with engine.connect() as connection:
        return dict(connection.execute(sa.select(table.c.run_key, table.c.run).where(table.c.published)).all())


def one_partition_per_run(engine, out, key=("id",)) -> None:
    """The rows table is partitioned, each published run is a partition of its own keyed by ``key``, no run
    table is left over."""
    kind, partitions, tables = layout(engine, out)
    names = storage_names(parse_table_name(out))
    expected = {run_rows_name(names, run).name: f"FOR VALUES IN ('{run}')" for run in published(engine, out).values()}
    assert (kind, partitions, tables) == ("p", expected, sorted(expected))
    schema = storage_names(parse_table_name(out)).rows.schema
    with engine.connect() as connection:
        inspector = sa.inspect(connection)
        assert {name: tuple(inspector.get_pk_constraint(name, schema=schema)["constrained_columns"])
                for name in partitions} == dict.fromkeys(partitions, tuple(key))


def answers(engine, out, keys) -> tuple:
    """What users query: every row of the view and of the latest view, and ``id, label`` of each run key."""
    view, latest = (parse_table_name(name) for name in (out, f"{out}_latest"))
    with engine.connect() as connection:
        def every(name):
            relation = sa.table(name.name, *(sa.column(c) for c in VIEW_COLUMNS), schema=name.schema)
            return connection.execute(sa.select(relation).order_by(relation.c.run_key, relation.c.id)).all()

        relation = sa.table(view.name, sa.column("run_key"), sa.column("id"), sa.column("label"), schema=view.schema)
        by_key = {key: connection.execute(sa.select(relation.c.id, relation.c.label).where(relation.c.run_key == key)
                                          .order_by(relation.c.id)).all() for key in keys}
        return every(view), every(latest), by_key


def test_each_run_is_a_partition_of_its_own_and_deleted_runs_drop_theirs(pg):
    engine, out = pg
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 3], [0, 1, 1]))
    ensure_latest_view(engine, parse_table_name(out))  # as the write stage does
    write_labels(engine, parse_table_name(out), rows_for("b", [1, 2], [1, 0]))
    one_partition_per_run(engine, out)
    first_a = published(engine, out)["a"]
    write_labels(engine, parse_table_name(out), rows_for("a", [4], [2]))  # replaces run a: its table goes
    one_partition_per_run(engine, out)
    assert published(engine, out)["a"] != first_a
    assert answers(engine, out, ["a", "b"])[2] == {"a": [(4, 2)], "b": [(1, 1), (2, 0)]}
    write_labels(engine, parse_table_name(out), rows_for("c", [9], [0]), keep_runs=2)  # prunes b
    one_partition_per_run(engine, out)
    assert sorted(published(engine, out)) == ["a", "c"]
    assert prune_runs(engine, parse_table_name(out), "features", keep=1) == ["a"]
    one_partition_per_run(engine, out)
    assert answers(engine, out, ["a", "c"])[2] == {"a": [], "c": [(9, 0)]}


def test_a_run_is_written_to_an_unindexed_table_that_publishing_keys_and_attaches(pg):
    engine, out = pg
    write_labels(engine, parse_table_name(out), rows_for("a", [1], [0]))
    rows = rows_for("b", np.arange(100), np.arange(100) % 3)
    pending = begin_run(engine, parse_table_name(out), sa.BigInteger(), rows)
    assert pending.target == pending.rows == run_rows_name(parse_table_name(out), pending.run)
    assert pending.append_run is None  # the table's run column defaults to the run: (id, label) are ingested
    append_to(engine, pending.target, rows.ids, rows.labels, pending.append_run)
    name = run_rows_name(parse_table_name(out), pending.run)
    with engine.connect() as connection:
        inspector = sa.inspect(connection)
        assert inspector.get_indexes(name.name, schema=name.schema) == []
        assert inspector.get_pk_constraint(name.name, schema=name.schema)["constrained_columns"] == []
    attached = run_rows_name(parse_table_name(out), 1).name  # run a's
    assert layout(engine, out)[1:] == ({attached: "FOR VALUES IN ('1')"}, sorted([attached, name.name]))
    # Autovacuum leaves the table alone while it is written (its analysis would hold a lock attaching waits for).
    assert storage_options(engine, name) == ["autovacuum_enabled=false"]
    assert storage_options(engine, run_rows_name(parse_table_name(out), 1)) is None
    notices = []
    chatty = sa.create_engine(engine.url, connect_args={"options": "-c client_min_messages=debug1"})
    sa.event.listen(chatty, "connect", lambda connection, _: connection.add_notice_handler(
        lambda notice: notices.append(notice.message_primary)))
    staging.finish_run(chatty, pending, rows, 100, 100)
    chatty.dispose()
    # The table's own CHECK proves the partition bound: attaching it scans nothing ("verifying table" otherwise).
    assert f'partition constraint for table "{name.name}" is implied by existing constraints' in notices
    assert not [notice for notice in notices if notice.startswith("verifying table")]
    one_partition_per_run(engine, out)  # keyed by id: its share of (run, id)
    assert storage_options(engine, name) is None  # published: autovacuum's again
    with engine.connect() as connection:
        assert sa.inspect(connection).get_pk_constraint(name.name, schema=name.schema)["constrained_columns"] == ["id"]
        rows = storage_names(parse_table_name(out)).rows
        assert sa.inspect(connection).get_pk_constraint(rows.name, schema=rows.schema)["constrained_columns"] == []


def test_a_partitioned_rows_table_keyed_by_run_and_id_keeps_that_key_for_every_run(pg, monkeypatch):
    """The release before keyed the partitioned rows table itself by (run, id); PostgreSQL then wants every
    partition keyed the same, so new runs are."""
    engine, out = pg
    made = storage_setup.rows_table
    monkeypatch.setattr(storage_setup, "rows_table",
                        lambda *args, keyed=True, by_run=False: made(*args, keyed=True, by_run=by_run))
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2, 3], [0, 1, 2]))
    ensure_latest_view(engine, parse_table_name(out))
    monkeypatch.undo()
    rows = storage_names(parse_table_name(out)).rows
    with engine.connect() as connection:
        assert sa.inspect(connection).get_pk_constraint(rows.name, schema=rows.schema)["constrained_columns"] == \
            ["run", "id"]
    write_labels(engine, parse_table_name(out), rows_for("b", [2, 3, 4], [1, 1, 0]))
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2], [2, 2]))  # replaces a
    one_partition_per_run(engine, out, key=("run", "id"))
    assert answers(engine, out, ["a", "b"])[2] == {"a": [(1, 2), (2, 2)], "b": [(2, 1), (3, 1), (4, 0)]}
    with pytest.raises(Exception, match="duplicate"):
        write_labels(engine, parse_table_name(out), rows_for("c", [5, 5], [0, 1]))
    assert "c" not in published(engine, out)


@pytest.mark.parametrize("failure", ["after the ingest", "duplicate ids"])
def test_a_failed_write_leaves_no_table_and_no_visible_run(pg, monkeypatch, failure):
    engine, out = pg
    write_labels(engine, parse_table_name(out), rows_for("a", [1, 2], [0, 1]))
    ensure_latest_view(engine, parse_table_name(out))
    ids = [5, 6, 7]
    if failure == "after the ingest":
        def fail(*args, **kwargs):
            raise RuntimeError("injected failure after the ingest")

        monkeypatch.setattr(staging, "attach_run_rows", fail)
    else:
        ids = [5, 6, 6]
    before, runs = answers(engine, out, ["a", "b"]), published(engine, out)
    with pytest.raises(Exception, match="injected|duplicate"):
        write_labels(engine, parse_table_name(out), rows_for("b", ids, [2, 2, 2]))
    assert answers(engine, out, ["a", "b"]) == before and published(engine, out) == runs
    one_partition_per_run(engine, out)
    monkeypatch.undo()
    write_labels(engine, parse_table_name(out), rows_for("b", [5, 6, 7], [2, 2, 2]))
    one_partition_per_run(engine, out)


def test_a_run_abandoned_before_publishing_drops_its_table_when_its_key_is_written_again(pg):
    engine, out = pg
    rows = rows_for("b", [5, 6, 7], [2, 2, 2])
    abandoned = begin_run(engine, parse_table_name(out), sa.BigInteger(), rows)  # never finished nor discarded
    append_to(engine, abandoned.target, rows.ids, rows.labels, abandoned.append_run)
    write_labels(engine, parse_table_name(out), rows_for("a", [1], [0]))
    assert parse_table_name(abandoned.rows).name in layout(engine, out)[2]  # its writer lives: kept
    abandoned.lock.release()  # as the server does when the writer's process dies
    write_labels(engine, parse_table_name(out), rows_for("b", [5], [1]))
    one_partition_per_run(engine, out)


@pytest.mark.parametrize("kind", ["int", "uuid"])
def test_the_rows_table_of_the_release_before_is_partitioned_by_the_next_write(pg, kind):
    engine, out = pg
    n = 500
    ids = np.arange(n) * 3 + 2**40 if kind == "int" else np.array([uuid.UUID(int=i * 2**70 + 1) for i in range(n)])
    id_type = sa.BigInteger() if kind == "int" else sa.Uuid()
    old_runs = [(rows_for("a", ids, np.arange(n) % 3), T0, True),
                (rows_for("b", ids[::2], np.arange(0, n, 2) % 4, source="other"), T0 + dt.timedelta(minutes=1), True),
                (rows_for("a", ids[:7], np.zeros(7, dtype=int)), T0, False),  # a rewrite of a that never finished
                (rows_for("empty", ids[:0], ids[:0]), T0 - dt.timedelta(days=1), True)]
    write_unpartitioned(engine, out, old_runs, id_type)
    keys = ["a", "b", "empty"]
    with engine.connect() as connection:
        assert pg_relkind(connection, storage_names(parse_table_name(out)).rows) == "r"
        rows = storage_names(parse_table_name(out)).rows
        stored = sa.table(rows.name, sa.column("run"), sa.column("id"), sa.column("label"), schema=rows.schema)
        every_row = sorted(connection.execute(sa.select(stored)).all())
    assert len(every_row) == n + n // 2 + 7
    before = answers(engine, out, keys)
    earlier = earlier_run(engine, storage_names(parse_table_name(out)), "features", exclude_run_key="new")
    assert (earlier.run_key, earlier.run) == ("a", published(engine, out)["a"])

    write_labels(engine, parse_table_name(out), rows_for("new", ids[:3], [2, 1, 0], source="third"), id_type=id_type)
    kind_after, partitions, tables = layout(engine, out)
    assert kind_after == "p"
    with engine.connect() as connection:
        numbers = connection.execute(sa.text(f"select run from {out}_runs")).scalars().all()
        new = published(engine, out)["new"]
        unfinished = sorted(set(run for run, *_ in every_row) - set(published(engine, out).values()))
        assert sorted(row for row in connection.execute(sa.select(stored)).all() if row.run != new) == \
            [row for row in every_row if row.run not in unfinished]  # every published row kept
    assert len(unfinished) == 1 and len(numbers) == 4  # the run that never finished, no writer alive, removed
    assert partitions == {run_rows_name(parse_table_name(out), run).name: f"FOR VALUES IN ('{run}')" for run in numbers}
    assert tables == sorted(partitions)  # nothing left aside
    after = answers(engine, out, keys)
    assert after[0] == before[0] + [row for row in after[0] if row[0] == "new"]
    assert [row for row in after[1] if row[0] != "new"] == before[1] and after[2] == before[2]
    again = earlier_run(engine, storage_names(parse_table_name(out)), "features", exclude_run_key="new")
    assert (again.run_key, again.run) == ("a", published(engine, out)["a"])

    write_labels(engine, parse_table_name(out), rows_for("a", ids[:2], [1, 1]),
                 id_type=id_type)  # replaces a and the unfinished a
    one_partition_per_run(engine, out)
    assert answers(engine, out, ["a"])[2] == {"a": sorted(zip(ids[:2].tolist(), [1, 1]))}


def test_a_failed_partitioning_changes_nothing(pg, monkeypatch):
    engine, out = pg
    write_unpartitioned(engine, out, [(rows_for("a", [1, 2, 3], [0, 1, 2]), T0, True)])
    before = answers(engine, out, ["a"])

    def fail(*args, **kwargs):
        raise RuntimeError("injected failure at the end of the partitioning")

    monkeypatch.setattr(storage_setup, "latest_labels_query", fail)
    with pytest.raises(RuntimeError, match="injected"):
        write_labels(engine, parse_table_name(out), rows_for("b", [1], [0]))
    assert layout(engine, out) == ("r", {}, [])
    assert answers(engine, out, ["a", "b"]) == (*before[:2], {**before[2], "b": []})
    monkeypatch.undo()
    write_labels(engine, parse_table_name(out), rows_for("b", [1], [0]))
    one_partition_per_run(engine, out)
    assert answers(engine, out, ["a"])[2] == before[2]


def test_a_wide_table_of_an_earlier_release_is_converted_to_one_partition_per_run(pg):
    engine, out = pg
    wide = label_table_schema(out, sa.BigInteger())
    for key, ids in (("a", [1, 2, 3]), ("b", [2, 3])):
        constants = {**rows_for(key, ids, ids).column_values(), "written_at": T0}

        def insert(connection, ids=ids, constants=constants):
            connection.execute(sa.insert(wide), [{**constants, "id": i, "label": i % 2} for i in ids])

        replace_run_key(engine, wide, key, "features", None, insert)
    write_labels(engine, parse_table_name(out), rows_for("c", [7], [0]))
    one_partition_per_run(engine, out)
    assert answers(engine, out, ["a", "b", "c"])[2] == {"a": [(1, 1), (2, 0), (3, 1)], "b": [(2, 0), (3, 1)],
                                                        "c": [(7, 0)]}


def test_run_table_names_fit_postgres_identifiers_and_keep_apart():
    assert run_rows_name(parse_table_name("analytics.labels"), 12) == parse_table_name("analytics.labels_rows$12")
    longest = "l" * (MAX_IDENTIFIER_BYTES - len("_runs"))
    names = {run_rows_name(parse_table_name(base), 2**31 - 1) for base in (longest, longest[:-1] + "m", "é" * 29)}
    assert len(names) == 3
    for name in names:
        assert len(name.name.encode("utf-8")) <= MAX_IDENTIFIER_BYTES and name.name.endswith(f"${2**31 - 1}")
    assert run_rows_name(parse_table_name(longest), 5).name.startswith(longest[:40])


def test_pruning_a_rows_table_of_the_release_before_deletes_its_rows_and_the_next_write_partitions_it(pg):
    engine, out = pg
    old_runs = [(rows_for("a", [1, 2, 3], [0, 1, 2]), T0, True),
                (rows_for("b", [1, 2], [1, 1]), T0 + dt.timedelta(minutes=1), True),
                (rows_for("c", [4], [0]), T0 + dt.timedelta(minutes=2), True)]
    write_unpartitioned(engine, out, old_runs)
    # on the plain rows table, before any write
    assert prune_runs(engine, parse_table_name(out), "features", 1) == ["b", "a"]
    rows = storage_names(parse_table_name(out)).rows
    with engine.connect() as connection:
        assert pg_relkind(connection, rows) == "r"
        left = connection.execute(sa.text(f"select count(*) from {rows}")).scalar_one()
    assert left == 1  # the pruned runs' rows went with them: no row of no run is left
    write_labels(engine, parse_table_name(out), rows_for("d", [5, 6], [1, 0]))
    one_partition_per_run(engine, out)
    assert sorted(published(engine, out)) == ["c", "d"]
