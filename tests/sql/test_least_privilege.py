"""A role that only reads the source schema and writes the labels schema runs the flow; one that cannot write
the labels schema is refused in one line before anything is computed (the grants of docs/pipeline.md)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from flows.consensus import consensus_flow
from helpers.pipeline import blobs_frame, postgres_url_or_skip, unique
from lwec_tasks.io import DatabaseRefusedError
from lwec_tasks.preflight import check_consensus_request
from lwec_tasks.request import ConsensusRequest

pytestmark = pytest.mark.postgres


@pytest.fixture
def schemas():
    """``(engine, source, labels)``: the test server's engine (its URL's user) and two fresh schemas, dropped with
    everything in them afterwards; skips when that user cannot create roles."""
    url = postgres_url_or_skip()
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        can = connection.execute(sa.text("SELECT rolcreaterole OR rolsuper FROM pg_roles "
                                         "WHERE rolname = current_user")).scalar()
    if not can:
        engine.dispose()
        pytest.skip(f"role {engine.url.username!r} of the test server cannot create roles "
                    "(ALTER ROLE ... CREATEROLE)")
    source, labels = unique("lwec_source"), unique("lwec_labels")
    with engine.begin() as connection:
        for schema in (source, labels):
            connection.execute(sa.schema.CreateSchema(schema))
    roles: list[str] = []
    try:
        yield engine, source, labels, roles
    finally:
        with engine.begin() as connection:
            for schema in (source, labels):
                connection.execute(sa.schema.DropSchema(schema, cascade=True))
            for role in roles:
                connection.execute(sa.text(f"DROP ROLE {role}"))
        engine.dispose()


def runner(engine: sa.Engine, roles: list, source: str, labels: str | None) -> str:
    """A new login role with the grants of docs/pipeline.md: read ``source.blobs``; with ``labels``, write that
    schema. Returns its database URL."""
    role = unique("lwec_runner")
    grants = [f"CREATE ROLE {role} LOGIN PASSWORD 'runner'", f"GRANT USAGE ON SCHEMA {source} TO {role}",
              f"GRANT SELECT ON {source}.blobs TO {role}"]
    if labels is not None:
        grants.append(f"GRANT USAGE, CREATE ON SCHEMA {labels} TO {role}")
    with engine.begin() as connection:
        for grant in grants:
            connection.execute(sa.text(grant))
    roles.append(role)
    return engine.url.set(username=role, password="runner").render_as_string(hide_password=False)


def test_postgres_a_least_privilege_role_runs_and_one_without_write_rights_is_refused_at_once(
        prefect_server, mlflow_store, schemas):
    engine, source, labels, roles = schemas
    blobs_frame(n=60).to_sql("blobs", engine, schema=source, index=False)
    parameters = {"table": f"{source}.blobs", "n_clusters": 3, "ensemble_size": 3, "seed": 1,
                  "label_column": "target", "output_table": f"{labels}.blobs_labels", "tracking_uri": mlflow_store,
                  "experiment": unique("least")}

    writer = runner(engine, roles, source, labels)
    summary = consensus_flow(database_url=writer, **parameters)
    assert summary["rows_written"] == 60
    as_writer = sa.create_engine(writer)
    with as_writer.connect() as connection:  # its labels tables are its own
        assert connection.execute(sa.text(f"SELECT count(*) FROM {labels}.blobs_labels_latest")).scalar() == 60
    as_writer.dispose()
    with engine.connect() as connection:  # the source schema is as it was
        assert sa.inspect(connection).get_table_names(schema=source) == ["blobs"]

    reader = runner(engine, roles, source, None)
    with pytest.raises(DatabaseRefusedError) as refused:  # the command line's check: no Prefect, nothing read
        check_consensus_request(ConsensusRequest(database_url=reader, **parameters))
    message = str(refused.value)
    assert message == (f"output_table '{labels}.blobs_labels': role '{roles[-1]}' lacks USAGE and CREATE on schema "
                       f"'{labels}', which writing the labels needs (each run creates its tables there); grant it: "
                       f"GRANT USAGE, CREATE ON SCHEMA {labels} TO {roles[-1]}")
    state = consensus_flow(database_url=reader, **parameters, run_name="refused", return_state=True)
    assert state.is_failed() and str(state.result(raise_on_failure=False)) == message
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        this_run = FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        ran = [task.name.rsplit("-", 1)[0] for task in client.read_task_runs(flow_run_filter=this_run)]
    assert ran == ["load-features"]  # refused by the load's checks: nothing generated, nothing computed
