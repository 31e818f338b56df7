"""What an operator sees: UI form descriptions, warnings, one-line errors, links."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from mlflow import MlflowClient

from flows.consensus import consensus_flow
from helpers.pipeline import PROJECT_ROOT, blobs_frame, unique, write_frame
from lwec_tasks.cli import main as lwec_main
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.io.columns import looks_like_label, plan_columns
from lwec_tasks.io.connection import open_engine
from lwec_tasks.io.label_storage import storage_names
from lwec_tasks.io.names import parse_table_name
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.summary import summary_markdown
from lwec_tasks.tracking import run_page_url


def test_every_flow_parameter_has_a_description_in_the_prefect_form():
    import inspect

    from prefect.utilities.callables import parameter_schema

    properties = parameter_schema(consensus_flow).model_dump_for_openapi()["properties"]
    assert list(properties) == list(inspect.signature(consensus_flow.fn).parameters)
    undescribed = [name for name, spec in properties.items() if not spec.get("description")]
    assert undescribed == []
    assert "ground" in properties["label_column"]["description"].lower()
    # constraints survive next to descriptions
    assert properties["ensemble_size"]["minimum"] == 1
    assert properties["n_clusters"]["minimum"] == 2


def test_the_form_offers_int_first_with_its_bound_and_readable_descriptions():
    from prefect.utilities.callables import parameter_schema
    from prefect.utilities.schema_tools.validation import build_error_obj, validate

    schema = parameter_schema(consensus_flow).model_dump_for_openapi()
    properties = schema["properties"]
    # Each alternative is a titled tab; int comes first, "auto" is a choice (not a greyed-out const).
    assert properties["n_clusters"]["anyOf"] == [{"type": "integer", "title": "int"},
                                                 {"type": "string", "enum": ["auto"], "title": "auto"}]
    for name, minimum in (("seed", 0), ("keep_runs", 1)):
        assert properties[name]["anyOf"] == [{"type": "integer", "title": "int"}, {"type": "null", "title": "None"}]
        assert properties[name]["minimum"] == minimum
    # A number below the bound gets the bound's message, as the server and the form validate it.
    required = {"database_url": "sqlite://", "table": "t"}
    for name, value, message in (("n_clusters", 1, "1 is less than the minimum of 2"),
                                 ("seed", -1, "-1 is less than the minimum of 0")):
        errors = build_error_obj(validate({"n_clusters": 3, **required, name: value}, schema))["errors"]
        assert errors == [{"property": name, "errors": [message]}]
    for value in (2, "auto"):
        assert validate({**required, "n_clusters": value, "seed": None, "keep_runs": None}, schema) == []

    described = {name: spec["description"] for name, spec in properties.items()}
    assert "…" not in described["n_clusters"] and "min(" not in described["n_clusters"]
    assert "k-means" not in described["ensemble_size"]
    assert described["run_name"].startswith("Labels run key") and "not the name of the Prefect flow run" in \
        described["run_name"]
    assert "empty" not in described["seed"] and "None" in described["seed"]
    assert "empty" not in described["keep_runs"]


@pytest.mark.parametrize("name", [
    "label", "Target", "class", "y", "ground_truth", "class_label", "GT", "species_class"])
def test_label_like_names_are_recognised(name):
    assert looks_like_label(name)


@pytest.mark.parametrize("name", ["f0", "pixel_0_1", "yield", "targeting_score", "labelled_at", "x"])
def test_feature_like_names_are_not_flagged(name):
    assert not looks_like_label(name)


def test_plan_reports_label_like_default_features_only_when_no_label_column_claims_them():
    columns = ["id", "f0", "f1", "target"]
    plan = plan_columns(columns, columns, ["id"])
    assert plan.label_like_features == ["target"]
    assert plan_columns(columns, columns, ["id"], label_column="target").label_like_features == []


def test_flow_warns_when_a_label_like_column_is_clustered_on(prefect_server, mlflow_store, sqlite_url, caplog):
    write_frame(sqlite_url, "blobs", blobs_frame())
    with caplog.at_level(logging.WARNING):
        consensus_flow(database_url=sqlite_url, table="blobs", n_clusters=3, ensemble_size=3,
                       experiment=unique("warn"), tracking_uri=mlflow_store)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("['target']" in m and "label_column='target'" in m for m in warnings), warnings

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        consensus_flow(database_url=sqlite_url, table="blobs", n_clusters=3, ensemble_size=3,
                       label_column="target", experiment=unique("warn"), tracking_uri=mlflow_store)
    assert not any("named like a ground truth" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("url, package", [
    ("mysql+pymysql://u:secret@db/x", "PyMySQL"),
    ("postgresql+pg8000://u@db/x", "pg8000"),
])
def test_a_missing_driver_names_the_package_to_install(url, package):
    with pytest.raises(LwecInputError) as raised:
        open_engine(url).dispose()
    message = str(raised.value)
    assert f"pip install '{package}'" in message and "secret" not in message


def test_lwec_run_refuses_a_missing_driver_before_starting_prefect(capsys):
    code = lwec_main(["run", "--database-url", "mysql+pymysql://u@db/x", "--table", "t", "-k", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'PyMySQL'" in err


@pytest.mark.slow
@pytest.mark.parametrize("verbose", [False, True])
def test_lwec_run_prints_a_traceback_only_when_verbose(sqlite_url, tmp_path, verbose):
    write_frame(sqlite_url, "blobs", blobs_frame())
    argv = ["run", "--database-url", sqlite_url, "--table", "blobs", "-k", "3", "--features", "f0,nope",
            "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", *(["--verbose"] if verbose else [])]
    done = subprocess.run([sys.executable, "-m", "lwec_tasks", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 2
    assert "lwec run: error: feature_columns: column(s) ['nope'] not found in table 'blobs'" in done.stderr
    assert ("Traceback (most recent call last)" in output) == verbose


def test_run_page_links_point_at_the_mlflow_ui_without_credentials(monkeypatch):
    assert run_page_url("https://u:pw@mlflow.example/", "abc", "7") == "https://mlflow.example/#/experiments/7/runs/abc"
    monkeypatch.delenv("LWEC_MLFLOW_UI_URL", raising=False)
    assert run_page_url("sqlite:///m.db", "abc", "7") == "http://127.0.0.1:5000/#/experiments/7/runs/abc"
    monkeypatch.setenv("LWEC_MLFLOW_UI_URL", "https://ml.internal/")
    assert run_page_url("postgresql://u:pw@h/m", "abc", "7") == "https://ml.internal/#/experiments/7/runs/abc"


def test_flow_summary_links_the_mlflow_run(prefect_server, mlflow_store, sqlite_url, monkeypatch):
    monkeypatch.delenv("LWEC_MLFLOW_UI_URL", raising=False)
    write_frame(sqlite_url, "blobs", blobs_frame())
    experiment = unique("link")
    summary = consensus_flow(database_url=sqlite_url, table="blobs", n_clusters=3, ensemble_size=3,
                             label_column="target", experiment=experiment, tracking_uri=mlflow_store)
    run_id = summary["mlflow_run_id"]
    experiment_id = MlflowClient(mlflow_store).get_run(run_id).info.experiment_id
    assert summary["mlflow_run_url"] == f"http://127.0.0.1:5000/#/experiments/{experiment_id}/runs/{run_id}"
    request = ConsensusRequest(database_url=sqlite_url, table="blobs", n_clusters=3, experiment=experiment)
    assert f"[{run_id}]({summary['mlflow_run_url']})" in summary_markdown(request, summary)


def test_readme_on_demand_command_names_the_label_column():
    readme = (PROJECT_ROOT / "README.md").read_text()
    command = readme.split("prefect deployment run lwec-consensus/on-demand", 1)[1].split("```", 1)[0]
    assert "-p label_column=target" in command


def test_a_failed_run_logs_its_error_once_offering_no_lwec_storage(prefect_server, sqlite_url, caplog):
    import sqlalchemy as sa

    from lwec_tasks.io import ensure_latest_view
    from lwec_tasks.io.storage_setup import prepare_storage

    write_frame(sqlite_url, "blobs", blobs_frame(n=30))
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as connection:  # a labels table's storage: blobs_lwec_labels(_runs, _rows, _latest)
        prepare_storage(connection, storage_names(parse_table_name("blobs_lwec_labels")), sa.BigInteger())
    ensure_latest_view(engine, parse_table_name("blobs_lwec_labels"))
    engine.dispose()

    for _ in range(2):  # the same error in a second run is that run's error: logged again, once
        caplog.clear()
        with caplog.at_level(logging.INFO):
            state = consensus_flow(database_url=sqlite_url, table="blob", n_clusters=3, return_state=True)
        assert state.is_failed()
        error = str(state.result(raise_on_failure=False))
        assert error.startswith("table 'blob' not found") and "'blobs'" in error and "'blobs_lwec_labels'" in error
        assert not any(storage in error for storage in ("_runs", "_rows", "_latest")), error
        mentions = [record for record in caplog.records if error in record.getMessage()]
        assert [record.getMessage() for record in mentions] == [error]  # once, as its one line
        assert not any(record.exc_info for record in caplog.records), "a traceback was logged"
        finished = [record.getMessage() for record in caplog.records if record.getMessage().startswith("Finished")]
        # The flow's final state, and the task's where the Prefect release logs it: neither repeats the error.
        assert finished and set(finished) == {"Finished in state Failed (its error is logged once, on its own line)"}
