"""The checks made before anything runs (lwec_tasks.preflight): fast, light, and the same ones the load makes."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.pipeline import PROJECT_ROOT, blobs_frame, drop_labels_table, free_port, unique, write_frame
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io import DatabaseUnreachableError, LabelRows, ensure_latest_view, open_engine, write_labels
from lwec_tasks.io.catalog import describe_source, values_seen_early
from lwec_tasks.io.names import TableName, parse_table_name
from lwec_tasks.preflight import (
    check_assign_request,
    check_consensus_request,
    plan_assign_read,
    plan_consensus_read,
)
from lwec_tasks.request import ConsensusRequest


@pytest.fixture
def tables(db_url):
    """Write frames as fresh tables (names returned), dropped afterwards with their default labels tables."""
    made: list[str] = []

    def make(frame: pd.DataFrame, prefix: str = "pre", primary_key: str | None = "id") -> str:
        name = unique(prefix)
        write_frame(db_url, name, frame, primary_key=primary_key)
        made.append(name)
        return name

    yield make
    engine = sa.create_engine(db_url)
    with engine.begin() as connection:
        for name in made:
            drop_labels_table(connection, f"{name}_lwec_labels")
            drop_labels_table(connection, name)
    engine.dispose()


def request(db_url, table, **overrides) -> ConsensusRequest:
    return ConsensusRequest(**{"database_url": db_url, "table": table, "n_clusters": 3, **overrides})


def test_a_good_table_passes_and_plans_the_read(db_url, tables):
    table = tables(blobs_frame(n=40))
    check_consensus_request(request(db_url, table, label_column="target"))
    engine = open_engine(db_url)
    planned = plan_consensus_read(engine, request(db_url, table, label_column="target"))
    engine.dispose()
    assert planned.n_rows == 40 and planned.output_table == TableName(f"{table}_lwec_labels")
    assert planned.columns.feature_columns == ("f0", "f1", "f2", "f3")
    assert dict(planned.columns.left_out) == {"id": "id column", "target": "label column",
                                              "note": "high-cardinality text (40 distinct values)"}


def test_without_an_id_column_the_plan_names_the_columns_that_could_be_it(db_url, tables):
    n = 40
    frame = blobs_frame(n=n).drop(columns=["id", "note"]).assign(
        customer_id=[f"c-{i:04d}" for i in range(n)],              # a key: named like one, one value per row
        order_key=[f"o-{i // 2:04d}" for i in range(n)],           # named like a key, but shared by two rows
        ref_id=[None] + [f"r-{i:04d}" for i in range(1, n)],       # named like a key, one row without a value
        comment=[f"free text {i}" for i in range(n)])              # one value per row, not named like a key
    table = tables(frame, primary_key=None)
    keyed = tables(frame.assign(id=np.arange(n)), prefix="prekeyed", primary_key=None)
    engine = open_engine(db_url)
    planned = plan_consensus_read(engine, request(db_url, table))
    with_id = plan_consensus_read(engine, request(db_url, keyed))
    engine.dispose()
    assert planned.columns.id_column is None and planned.key_candidates == ("customer_id",)
    assert with_id.columns.id_column == "id" and with_id.key_candidates == ()


def test_text_columns_holding_numbers_are_named_as_such_among_the_left_out(db_url, tables):
    n = 60
    frame = blobs_frame(n=n).drop(columns=["note"]).assign(
        amount=[f"{v:.3f}" for v in np.linspace(-5, 5, n)],                 # a CSV's numbers, stored as text
        weight=[None, ""] + [f"{v:.6e}" for v in np.linspace(1, 2, n - 2)],  # NULL and empty values do not count
        code=[f"A{i:03d}" for i in range(n)],                                # text
        price=["n/a"] + [str(i) for i in range(1, n)])                       # one value is no number
    table = tables(frame)
    engine = open_engine(db_url)
    planned = plan_consensus_read(engine, request(db_url, table, label_column="target"))
    engine.dispose()
    reasons = dict(planned.columns.left_out)
    for name in ("amount", "weight"):
        assert reasons[name].startswith("text holding numbers (") and "feature_columns" in reasons[name]
    for name in ("code", "price"):
        assert reasons[name].startswith("high-cardinality text (")


def test_the_plan_holds_the_id_range_for_partitioning(db_url, tables):
    frame = blobs_frame(n=40)
    table = tables(frame)
    text_ids = tables(frame.assign(id=[f"k{i:03d}" for i in frame["id"]]), prefix="pretext")
    engine = open_engine(db_url)
    planned = plan_consensus_read(engine, request(db_url, table))
    by_text = plan_consensus_read(engine, request(db_url, text_ids))
    engine.dispose()
    assert (planned.id_low, planned.id_high) == (int(frame["id"].min()), int(frame["id"].max()))
    # Only integer ids split by range; other ids are split by their order (no min/max needed).
    assert (by_text.id_low, by_text.id_high) == (None, None)


@pytest.mark.parametrize("overrides, message", [
    (dict(table="missing_3f9c1d"), r"table 'missing_3f9c1d' not found .*existing tables"),
    (dict(feature_columns=["f0", "nope"]), r"feature_columns: column\(s\) \['nope'\] not found"),
    (dict(id_column="nope"), r"id_column: column\(s\) \['nope'\] not found"),
    (dict(label_column="id"), r"label_column and id_column are both 'id'"),
    (dict(n_clusters=30), r"table '.*' has only 40 usable rows, but n_clusters=30 needs at least 2·k = 60 rows"),
])
def test_bad_requests_are_refused(db_url, tables, overrides, message):
    table = tables(blobs_frame(n=40))
    with pytest.raises(LwecInputError, match=message):
        overrides = dict(overrides)  # shared by the parametrized cases
        check_consensus_request(request(db_url, overrides.pop("table", table), **overrides))


def test_empty_and_nearly_empty_tables_say_so(db_url, tables):
    frame = blobs_frame(n=10)
    empty = tables(frame.head(1))
    engine = sa.create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(sa.delete(sa.table(empty)))
    engine.dispose()
    with pytest.raises(LwecInputError, match=rf"^table '{empty}' is empty$"):
        check_consensus_request(request(db_url, empty))
    with pytest.raises(LwecInputError, match=rf"^table '{empty}' is empty \(no rows to label\)$"):
        check_assign_request(db_url, empty, "runs:/x/model")
    few = frame.copy()
    few.loc[2:, "f1"] = np.nan  # 8 of 10 rows without f1
    sparse = tables(few)
    with pytest.raises(LwecInputError, match=rf"^table '{sparse}' has only 2 usable rows \(8 of its 10 rows have NULL "
                                             r"features\), but n_clusters=3 needs at least 2·k = 6 rows$"):
        check_consensus_request(request(db_url, sparse, drop_nonfinite=True))
    # the command lets them through (a model with typed columns fills them in); a model that cannot is refused by
    # the flow's read, which has loaded it
    check_assign_request(db_url, sparse, "runs:/x/model", feature_columns=["f0", "f1"])
    engine = open_engine(db_url)
    try:
        with pytest.raises(LwecInputError, match=r"8 row\(s\) of table .* have missing or non-finite values"):
            plan_assign_read(engine, TableName(sparse), ["f0", "f1"], None, TableName(f"{sparse}_lwec_labels"))
    finally:
        engine.dispose()


def test_an_all_null_column_is_left_out_by_default_and_refused_by_name(db_url, tables):
    frame = blobs_frame(n=30)
    frame["empty"] = np.nan
    table = tables(frame)
    engine = open_engine(db_url)
    planned = plan_consensus_read(engine, request(db_url, table))
    engine.dispose()
    assert "empty" not in planned.columns.feature_columns and ("empty", "all NULL") in planned.columns.left_out
    with pytest.raises(LwecInputError, match=rf"^feature column 'empty' is NULL in every row of table '{table}'; "
                                             r"leave it out: feature_columns=\['f0', 'f1'\]$"):
        check_consensus_request(request(db_url, table, feature_columns=["f0", "empty", "f1"], drop_nonfinite=True))


def test_the_output_table_is_checked(db_url, tables):
    table = tables(blobs_frame(n=40))
    engine = open_engine(db_url)
    labels = f"{table}_lwec_labels"
    write_labels(engine, parse_table_name(labels), LabelRows(run_key="a", ids=np.array(["x", "y"], dtype=object),
                                           labels=np.array([0, 1]), k=2, method="lwea", theta=0.4,
                                           ensemble_size=4, seed=0, source_table="words"))
    view = ensure_latest_view(engine, parse_table_name(labels))
    engine.dispose()
    with pytest.raises(LwecInputError, match=rf"output_table='{view}' is a view, not a table"):
        check_consensus_request(request(db_url, table, output_table=view))
    with pytest.raises(LwecInputError, match=rf"output_table '{labels}' holds text ids .* but the ids of table "
                                             rf"'{table}' are integer"):
        check_consensus_request(request(db_url, table))
    with pytest.raises(LwecInputError, match="is the source table"):
        check_consensus_request(request(db_url, table, output_table=table))
    with pytest.raises(LwecInputError, match=rf"output_table='{view}' is a view"):
        check_assign_request(db_url, table, "runs:/x/model", output_table=view)
    check_assign_request(db_url, table, "runs:/x/model", output_table="assigned_elsewhere")


def _nulls_frame(data, n_rows: int) -> pd.DataFrame:
    """``n_rows`` rows: text ids (some may be NULL) and three features with NULLs drawn per cell."""
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(n_rows)]}, dtype=object)
    frame.loc[sorted(data.draw(st.sets(st.integers(0, n_rows - 1), max_size=2))), "id"] = None
    for name in ("f0", "f1", "f2"):
        pattern = data.draw(st.sampled_from(["full", "none", "random"]))
        null = {"full": np.zeros(n_rows, bool), "none": np.ones(n_rows, bool),
                "random": np.array(data.draw(st.lists(st.booleans(), min_size=n_rows, max_size=n_rows)))}[pattern]
        frame[name] = np.where(null, np.nan, np.arange(n_rows, dtype=float))
    return frame


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_looking_at_the_first_rows_shows_only_what_the_counts_confirm(db_url, tables, data):
    """values_seen_early against the values themselves, and the quick check against the full one: a request
    passes the command line's check exactly when the load's counting check passes it, with the same error."""
    n_rows = data.draw(st.integers(1, 12))
    frame = _nulls_frame(data, n_rows)
    nullable_ids = data.draw(st.booleans())
    if not nullable_ids:
        frame["id"] = [f"r{i}" for i in range(n_rows)]
    table = tables(frame, primary_key=None if nullable_ids else "id")
    features = data.draw(st.sampled_from([["f0", "f1", "f2"], ["f0"], ["f2", "f1"], None]))
    needed = data.draw(st.integers(1, 8))

    engine = open_engine(db_url)
    source = describe_source(engine, parse_table_name(table))
    named = features or ["f0", "f1", "f2"]
    seen = values_seen_early(engine, source, named, "id", needed_rows=needed)
    engine.dispose()
    values = frame[named]
    expected = (int(values.notna().all(axis=1).sum()) >= needed and bool(values.notna().any().all())
                and (not source.table.c["id"].nullable or bool(frame["id"].notna().all())))
    assert seen == expected

    asked = request(db_url, table, feature_columns=features, id_column="id", n_clusters=data.draw(st.integers(2, 4)),
                    drop_nonfinite=True)
    engine = open_engine(db_url)
    try:
        plan_consensus_read(engine, asked)
        counted = None
    except LwecInputError as error:
        counted = str(error)
    finally:
        engine.dispose()
    try:
        check_consensus_request(asked)
        quick = None
    except LwecInputError as error:
        quick = str(error)
    assert quick == counted


def test_the_check_of_a_good_table_reads_no_more_rows_than_it_needs(db_url, tables):
    """Every query of the command line's check that reads the table stops early (LIMIT): no pass over it."""
    table = tables(blobs_frame(n=200))
    statements: list[str] = []

    def record(connection, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
    try:
        check_consensus_request(request(db_url, table, n_clusters=5))
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)
    reading = [text for text in statements if re.search(rf'\bFROM\s+"?{table}"?(\s|$)', text)]
    assert reading, statements
    for text in reading:
        assert "LIMIT" in text.upper(), text
    # The load task counts (its plan needs the row count and the id range): a full aggregate there.
    engine = open_engine(db_url)
    planned = plan_consensus_read(engine, request(db_url, table, n_clusters=5))
    engine.dispose()
    assert planned.n_rows == 200


def test_an_unreachable_database_is_reported_at_once():
    url = f"postgresql+psycopg://lwec:s3cret@127.0.0.1:{free_port()}/lwec"
    with pytest.raises(DatabaseUnreachableError, match=r"^cannot reach database postgresql\+psycopg://lwec:\*\*\*@"):
        check_consensus_request(ConsensusRequest(database_url=url, table="t", n_clusters=3))
    with pytest.raises(DatabaseUnreachableError):
        check_assign_request(url, "t", "runs:/x/model")


_TIMED = """
# CPU seconds of this process: what the check costs, whatever else the machine is doing
import json, resource, sys, time
started = time.process_time()
import lwec_tasks
package = time.process_time()
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.preflight import check_consensus_request
check_consensus_request(ConsensusRequest(database_url=sys.argv[1], table=sys.argv[2], n_clusters=3))
done = time.process_time()
# Without Prefect a block reference cannot be resolved: it is left for the run to check.
check_consensus_request(ConsensusRequest(database_url="block:no-such-block", table="t", n_clusters=3))
print(json.dumps({"package": package - started, "preflight": done - package,
                  "loaded": sorted({m.split(".")[0] for m in sys.modules} & {"prefect", "mlflow", "dask"})}))
"""


def test_the_check_is_fast_and_loads_neither_prefect_nor_mlflow(tmp_path):
    """In a fresh process, as the command line runs it (block references, which need Prefect, are skipped)."""
    url = f"sqlite:///{tmp_path / 'small.db'}"
    write_frame(url, "small", blobs_frame(n=200))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", _TIMED, url, "small"], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    timing = json.loads(done.stdout)
    assert timing["loaded"] == []
    assert timing["preflight"] < 1.0, timing  # beyond the package itself, which the command line loads anyway
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 3.0, (cpu, timing)  # the whole process, interpreter and imports included (CPU time: load-proof)
