"""The consensus flow end to end: database in, labels table and MLflow run out."""

import io
import json
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from mlflow import MlflowClient
from prefect.exceptions import ParameterTypeError

from flows.consensus import consensus_flow
from helpers.blobs import blobs_run_parameters, write_blobs_table
from helpers.pipeline import (
    blobs_frame,
    expected_labels,
    free_port,
    mlflow_runs,
    read_labels,
    table_exists,
    unique,
    write_frame,
)
from helpers.throwaway_tables import throwaway_features_table
from lwec_tasks.cli import main as lwec_main
from lwec_tasks.cli import run as run_cli
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.mixes import RUN_DEFAULT_MIX
from lwec_tasks.io import DatabaseUnreachableError
from lwec_tasks.tracking import TrackingError

FEATURES = ["f0", "f1", "f2", "f3"]


@pytest.fixture
def blobs(sqlite_url):
    return sqlite_url, write_blobs_table(sqlite_url)


def run(url, store, **overrides):
    parameters = blobs_run_parameters(url, store, "e2e", **overrides)
    return consensus_flow(**parameters), parameters


def assert_complete_run(url, store, summary, parameters, frame, method="lwea"):
    """Labels table equals the library's answer; the MLflow run has params, metrics, artifacts, tags."""
    stored = read_labels(url, summary["output_table"], summary["run_key"])
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3, method=method)
    assert stored["id"].tolist() == sorted(frame["id"])
    np.testing.assert_array_equal(stored["label"].to_numpy(), expected.loc[stored["id"]].to_numpy())
    assert set(stored["method"]) == {method} and set(stored["k"]) == {3} and set(stored["seed"]) == {3}

    client = MlflowClient(store)
    run = client.get_run(summary["mlflow_run_id"])
    assert client.get_experiment(run.info.experiment_id).name == parameters["experiment"]
    params = run.data.params
    assert {k: params[k] for k in ("method", "theta", "ensemble_size", "n_clusters", "seed", "table",
                                   "feature_count", "n_objects")} == {
        "method": method, "theta": "0.4", "ensemble_size": "6", "n_clusters": "3", "seed": "3",
        "table": "blobs", "feature_count": "4", "n_objects": str(len(frame))}
    assert params["generators"] == RUN_DEFAULT_MIX  # given none: the default for a small table, recorded
    from lwec_tasks import ari, nmi

    truth = frame.set_index("id").loc[stored["id"], "target"].to_numpy()
    metrics = run.data.metrics
    assert metrics["nmi"] == pytest.approx(nmi(truth, stored["label"], normalization="max"))
    assert metrics["ari"] == pytest.approx(ari(truth, stored["label"]))
    assert summary["nmi"] == pytest.approx(metrics["nmi"])
    for name in ("time_load_s", "time_generate_s", "time_eci_s", "time_consensus_s", "time_write_s",
                 "eci_mean", "eci_min", "eci_max", "n_microclusters", "n_base_clusters"):
        assert name in metrics, name
    assert 0 < metrics["eci_min"] <= metrics["eci_mean"] <= metrics["eci_max"] <= 1
    assert run.data.tags["lwec.run_key"] == summary["run_key"]
    assert run.data.tags["prefect.flow_run_id"] == stored["flow_run_id"].iloc[0]
    paths = {a.path for a in client.list_artifacts(run.info.run_id)}
    paths |= {a.path for a in client.list_artifacts(run.info.run_id, "figures")}
    assert {"labels_location.json", "eci_per_cluster.csv", "figures/eci_distribution.png",
            "figures/cluster_sizes.png"} <= paths
    return stored


def assert_rerun_reports_the_stored_labels(flow_run_id, summary, rows):
    """The summary artifact of a rerun that wrote nothing names its flow run and says the ``rows`` labels were
    already there (not "0 rows")."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    assert summary["rows_written"] == 0 and summary["labels_stored"] == rows
    with get_client(sync_client=True) as prefect:
        (artifact,) = prefect.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            key=ArtifactFilterKey(any_=["lwec-consensus-summary"])))
        name = prefect.read_flow_run(flow_run_id).name
    assert f"{rows} rows, already there from an earlier run" in artifact.data and " 0 rows" not in artifact.data
    assert artifact.description.startswith(f"Consensus run {name}: LWEA of table 'blobs'") and name == "blobs-k3-lwea"
    assert "None" not in artifact.description


def test_sqlite_end_to_end_then_rerun_is_idempotent(prefect_server, mlflow_store, blobs, tmp_path):
    url, frame = blobs
    summary, parameters = run(url, mlflow_store)
    stored = assert_complete_run(url, mlflow_store, summary, parameters, frame)
    assert summary["rows_written"] == len(frame) and summary["output_table"] == "blobs_lwec_labels"

    location = MlflowClient(mlflow_store).download_artifacts(summary["mlflow_run_id"], "labels_location.json",
                                                             str(tmp_path))
    assert json.loads(Path(location).read_text()) == {
        "output_table": "blobs_lwec_labels", "run_key": summary["run_key"], "rows": len(frame), "database": url}

    state = consensus_flow(**{**parameters, "experiment": parameters["experiment"]}, return_state=True)
    again = state.result()
    assert again["run_key"] == summary["run_key"]
    assert_rerun_reports_the_stored_labels(state.state_details.flow_run_id, again, len(frame))
    rerun = read_labels(url, "blobs_lwec_labels")
    assert len(rerun) == len(frame)  # not duplicated
    assert rerun["label"].tolist() == stored["label"].tolist()
    # Identical labels under the same run key are left as they are (the first run's rows stay).
    assert again["rows_written"] == 0 and again["mlflow_run_id"] != summary["mlflow_run_id"]
    assert rerun["flow_run_id"].iloc[0] == stored["flow_run_id"].iloc[0]

    other, _ = run(url, mlflow_store, experiment=parameters["experiment"], n_clusters=4)
    assert other["run_key"] != summary["run_key"]
    assert len(read_labels(url, "blobs_lwec_labels")) == 2 * len(frame)
    assert len(mlflow_runs(mlflow_store, parameters["experiment"])) == 3


def test_lwgp_without_standardising_explicit_columns_and_run_name(prefect_server, mlflow_store, blobs):
    url, frame = blobs
    summary, _ = run(url, mlflow_store, method="lwgp", feature_columns=["f2", "f0"], standardize=False,
                     label_column=None, run_name="nightly", output_table="lwgp_out")
    assert summary["run_key"] == "nightly" and summary["nmi"] is None
    stored = read_labels(url, "lwgp_out")
    from lwec_tasks import Ensemble, generate_base_clusterings, lwgp

    ordered = frame.sort_values("id")
    ensemble = Ensemble(generate_base_clusterings(ordered[["f2", "f0"]].to_numpy(), n_clusterings=6, random_state=3,
                                                  generators=RUN_DEFAULT_MIX))
    np.testing.assert_array_equal(stored["label"], lwgp(ensemble, 3, theta=0.4, random_state=3))
    run_data = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"]).data
    assert "nmi" not in run_data.metrics and run_data.params["feature_columns"] == "f2,f0"
    # no label column: no cluster × label table, the profiles and each cluster's cohesion all the same
    assert "cluster_profiles.png" in summary["figures"] and "cluster_labels.png" not in summary["figures"]
    artifacts = {a.path for a in MlflowClient(mlflow_store).list_artifacts(summary["mlflow_run_id"])}
    assert "cluster_profiles.csv" in artifacts and "cluster_labels.csv" not in artifacts
    assert all("majority_share" not in c and 0 < c["cohesion"] <= 1 for c in summary["clusters"])
    assert "clusters_majority_below_0_7" not in run_data.metrics and "clusters_flagged_mixed" in run_data.metrics


def test_a_run_given_no_mix_takes_and_records_the_default_for_its_tables_size(prefect_server, mlflow_store, blobs,
                                                                             monkeypatch):
    """Without ``generators`` a run takes the default mix for its row count: below the threshold the small
    tables' mix (as every other run here), above it the large tables' (the threshold lowered below this table's
    rows); the run key and the MLflow params record the mix used."""
    from lwec_tasks.core import mixes
    from lwec_tasks.request import ConsensusRequest

    url, frame = blobs
    monkeypatch.setattr(mixes, "RUN_LARGE_TABLE_ROWS", len(frame) - 1)
    summary, parameters = run(url, mlflow_store, output_table="large_default")
    assert "generators" not in parameters
    large, small = (ConsensusRequest(**parameters, generators=mix).run_key
                    for mix in (mixes.RUN_DEFAULT_MIX_LARGE, mixes.RUN_DEFAULT_MIX))
    assert summary["run_key"] == large != small
    stored = read_labels(url, "large_default", summary["run_key"])
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3, generators=mixes.RUN_DEFAULT_MIX_LARGE)
    np.testing.assert_array_equal(stored["label"].to_numpy(), expected.loc[stored["id"]].to_numpy())
    params = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"]).data.params
    assert params["generators"] == mixes.RUN_DEFAULT_MIX_LARGE


@pytest.mark.postgres
def test_postgres_end_to_end_then_rerun_is_idempotent(prefect_server, mlflow_store, postgres_url):
    frame = blobs_frame()
    with throwaway_features_table(postgres_url, "blobs", frame) as table:
        summary, parameters = run(postgres_url, mlflow_store, table=table)
        assert summary["output_table"] == f"{table}_lwec_labels"
        params = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"]).data.params
        assert params["database"].startswith("postgresql+psycopg://lwec:***@")
        assert params["table"] == table
        stored = read_labels(postgres_url, summary["output_table"])
        assert len(stored) == len(frame)
        expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
        np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])
        run(postgres_url, mlflow_store, table=table, experiment=parameters["experiment"])
        assert len(read_labels(postgres_url, summary["output_table"])) == len(frame)


# ---- bad input: a clear error, and nothing written (no labels table, no MLflow run) ----

def bad_tables(url):
    frame = blobs_frame(n=60)
    write_frame(url, "blobs", frame)
    with_nan = frame.copy()
    with_nan.loc[[0, 5, 9], "f1"] = np.nan
    with_nan.loc[3, "f2"] = np.inf
    write_frame(url, "with_nan", with_nan)
    duplicated = frame.copy()
    duplicated.loc[1, "id"] = duplicated.loc[2, "id"]
    write_frame(url, "duplicated", duplicated, primary_key=None)
    write_frame(url, "tiny", frame.head(5))


BAD_INPUTS = [
    pytest.param(dict(table="missing"), LwecInputError, r"table 'missing' not found.*existing tables: \[.*'blobs'",
                 id="unknown-table"),
    pytest.param(dict(feature_columns=["f0", "nope"]), LwecInputError, r"\['nope'\] not found .*'f0'",
                 id="unknown-column"),
    pytest.param(dict(label_column="truth"), LwecInputError, r"label_column: column\(s\) \['truth'\] not found",
                 id="unknown-label-column"),
    # (a text feature column is one-hot, and NaN/inf values are imputed: tests/pipeline/test_mixed_tables.py)
    pytest.param(dict(table="tiny"), LwecInputError, r"5 usable rows, but n_clusters=3 needs at least 2·k = 6",
                 id="too-few-rows"),
    pytest.param(dict(table="duplicated"), LwecInputError, r"id column 'id' has 2 rows sharing 1 duplicate",
                 id="duplicate-ids"),
    # Checked by the flow's typed parameters, as the Prefect UI form checks them.
    pytest.param(dict(n_clusters=1), ParameterTypeError,
                 r"n_clusters.constrained-int: Input should be greater than or equal to 2", id="k-below-2"),
    pytest.param(dict(n_clusters="some"), ParameterTypeError, r"n_clusters.literal\['auto'\]: Input should be 'auto'",
                 id="k-neither-int-nor-auto"),
    pytest.param(dict(theta=0.0), ParameterTypeError, r"theta: Input should be greater than 0", id="theta-zero"),
    pytest.param(dict(theta=-1.0), ParameterTypeError, r"theta: Input should be greater than 0",
                 id="theta-negative"),
    pytest.param(dict(method="kmeans"), ParameterTypeError, r"method: Input should be 'lwea' or 'lwgp'",
                 id="unknown-method"),
    pytest.param(dict(table='blobs"; DROP TABLE blobs; --'), LwecInputError, r"not found", id="table-injection"),
    pytest.param(dict(feature_columns=['f0"; DROP TABLE blobs; --']), LwecInputError, r"not found",
                 id="column-injection"),
    pytest.param(dict(output_table='out"; DROP TABLE blobs; --'), LwecInputError, r"output_table=.*not allowed",
                 id="output-injection"),
    pytest.param(dict(output_table="blobs"), LwecInputError, r"is the source table", id="output-is-source"),
]


@pytest.mark.parametrize("overrides, error, message", BAD_INPUTS)
def test_bad_input_fails_clearly_and_writes_nothing(prefect_server, mlflow_store, sqlite_url,
                                                    overrides, error, message):
    bad_tables(sqlite_url)
    overrides = {"output_table": "out", **overrides}
    experiment = unique("bad")
    with pytest.raises(error, match=message):
        run(sqlite_url, mlflow_store, experiment=experiment, **overrides)
    assert not table_exists(sqlite_url, "out")
    assert table_exists(sqlite_url, "blobs")
    assert mlflow_runs(mlflow_store, experiment) == []


@pytest.mark.parametrize("ids", [list(range(100, 160)), [f"row-{i}" for i in range(60)]], ids=["int", "text"])
def test_sqlite_id_column_without_a_declared_type(prefect_server, mlflow_store, sqlite_url, ids):
    frame = blobs_frame(n=60)
    frame["id"] = ids
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE untyped (id, f0, f1, f2, f3, target)"))
        connection.execute(sa.text("INSERT INTO untyped VALUES (:id, :f0, :f1, :f2, :f3, :target)"),
                           frame[["id", *FEATURES, "target"]].to_dict("records"))
    engine.dispose()
    summary, _ = run(sqlite_url, mlflow_store, table="untyped", feature_columns=FEATURES, output_table="untyped_out")
    assert summary["rows_written"] == 60
    stored = read_labels(sqlite_url, "untyped_out")
    assert sorted(stored["id"].tolist()) == sorted(ids)


def test_without_an_id_column_row_positions_do_not_depend_on_storage_order(prefect_server, mlflow_store,
                                                                          sqlite_url):
    frame = blobs_frame(n=60).drop(columns=["id"])
    write_frame(sqlite_url, "stored_forward", frame, primary_key=None)
    write_frame(sqlite_url, "stored_shuffled", frame.sample(frac=1, random_state=1).reset_index(drop=True),
                primary_key=None)
    labels = {}
    for table in ("stored_forward", "stored_shuffled"):
        run(sqlite_url, mlflow_store, table=table, feature_columns=FEATURES, output_table=f"{table}_out")
        labels[table] = read_labels(sqlite_url, f"{table}_out").sort_values("id")["label"].to_numpy()
    np.testing.assert_array_equal(labels["stored_forward"], labels["stored_shuffled"])


def test_nonfinite_rows_can_be_dropped_explicitly(prefect_server, mlflow_store, sqlite_url):
    bad_tables(sqlite_url)
    summary, _ = run(sqlite_url, mlflow_store, table="with_nan", drop_nonfinite=True)
    assert summary["rows_written"] == 56
    metrics = MlflowClient(mlflow_store).get_run(summary["mlflow_run_id"]).data.metrics
    assert metrics["n_rows_dropped"] == 4 and metrics["n_rows_read"] == 60


def test_unreachable_database_is_retried_then_fails_clearly(prefect_server, mlflow_store):
    from prefect.states import State

    url = f"postgresql+psycopg://lwec:s3cret@127.0.0.1:{free_port()}/lwec"
    experiment = unique("down")
    state = consensus_flow(database_url=url, table="blobs", n_clusters=3, experiment=experiment,
                           tracking_uri=mlflow_store, return_state=True)
    assert isinstance(state, State) and state.is_failed()
    with pytest.raises(DatabaseUnreachableError, match=r"cannot reach database postgresql\+psycopg://lwec:\*\*\*@"):
        state.result()
    assert "s3cret" not in state.message
    assert mlflow_runs(mlflow_store, experiment) == []

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        this_run = FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        task_runs = client.read_task_runs(flow_run_filter=this_run)
    load = [t for t in task_runs if t.name.startswith("load-features")]
    assert len(load) == 1 and load[0].run_count == 3  # first attempt + 2 retries


def test_unreachable_mlflow_fails_the_run_but_keeps_the_labels(prefect_server, blobs, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    url, frame = blobs
    with pytest.raises(TrackingError, match=r"labels were written to table 'blobs_lwec_labels' .*"
                                            r"logging to MLflow at http://127.0.0.1:\d+ failed"):
        run(url, f"http://127.0.0.1:{free_port()}")
    stored = read_labels(url, "blobs_lwec_labels")
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
    np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])


# ---- the CLI ----

def test_lwec_run_prints_where_results_went(prefect_server, mlflow_store, blobs):
    url, frame = blobs
    experiment = unique("cli")
    command = ["run", "--database-url", url, "--table", "blobs", "-k", "3", "--features", "f0,f1,f2,f3",
               "--label-column", "target", "-M", "6", "--seed", "3", "--experiment", experiment,
               "--tracking-uri", mlflow_store, "--output-table", "cli_out", "--run-name", unique("key")]
    out = io.StringIO()
    with redirect_stdout(out):
        code = lwec_main(command)
    printed = out.getvalue()
    assert code == 0
    (run_info,) = mlflow_runs(mlflow_store, experiment)
    assert f"run {run_info.info.run_id} in experiment '{experiment}'" in printed
    assert "table 'cli_out'" in printed and f"({len(frame)} rows)" in printed
    assert f"mlflow ui --backend-store-uri {mlflow_store}" in printed
    stored = read_labels(url, "cli_out")
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
    np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])

    # The same command again: its run key's labels are already these, so none are written, and it says so.
    out = io.StringIO()
    with redirect_stdout(out):
        assert lwec_main(command) == 0
    assert f"({len(frame)} rows, already there from an earlier run)" in out.getvalue()
    np.testing.assert_array_equal(read_labels(url, "cli_out")["label"], stored["label"])


def test_lwec_run_keeps_passwords_out_of_the_flow_parameters(monkeypatch, capsys, sqlite_url):
    import flows.consensus

    seen = {}

    def fake_flow(**parameters):
        seen.update(parameters)
        return {"output_table": "t_lwec_labels", "n_objects": 3, "n_clusters_found": 2, "run_key": "r",
                "rows_written": 3, "mlflow_run_id": "abc", "mlflow_experiment": "lwec",
                "mlflow_tracking_uri": "masked"}

    monkeypatch.setattr(flows.consensus, "consensus_flow", fake_flow)
    # The host "db" does not exist: this test is about the parameters the flow receives, not the preflight.
    monkeypatch.setattr(run_cli, "check_before_prefect", lambda request: None)
    monkeypatch.delenv("LWEC_RUN_DATABASE_URL", raising=False)
    monkeypatch.delenv("LWEC_RUN_TRACKING_URI", raising=False)
    database = "postgresql+psycopg://lwec:s3cret@db/x"
    tracking = "postgresql://mlflow@db/mlflow?password=t0ken"
    code = lwec_main(["run", "--database-url", database, "--table", "t", "-k", "2", "--tracking-uri", tracking])
    assert code == 0
    assert seen["database_url"] == "env:LWEC_RUN_DATABASE_URL" and seen["tracking_uri"] == "env:LWEC_RUN_TRACKING_URI"
    assert os.environ["LWEC_RUN_DATABASE_URL"] == database and os.environ["LWEC_RUN_TRACKING_URI"] == tracking
    printed = capsys.readouterr().out
    assert "s3cret" not in printed and "t0ken" not in printed
    assert "browse:" not in printed  # no link (and no MLflow call) for a database-backed store

    # A URL without a password is passed as it is.
    seen.clear()

    monkeypatch.setattr(run_cli, "_run_page", lambda uri, run_id: "https://mlflow:5000/#/run")  # no server here
    Path(sqlite_url.removeprefix("sqlite:///")).touch()  # the CLI checks the database file exists
    assert lwec_main(["run", "--database-url", sqlite_url, "--table", "t", "-k", "2",
                      "--tracking-uri", "https://u:p@mlflow:5000"]) == 0
    assert seen["database_url"] == sqlite_url and seen["tracking_uri"] == "env:LWEC_RUN_TRACKING_URI"
    printed = capsys.readouterr().out
    assert "u:***@mlflow:5000" in printed and "u:p@" not in printed


def test_printed_sql_hint_quotes_identifiers_for_the_dialect():
    from lwec_tasks.cli.run import label_query

    assert label_query("sqlite:///x.db", "My Labels", "it's") == (
        'SELECT "My Labels".id, "My Labels".label FROM "My Labels" WHERE "My Labels".run_key = \'it\'\'s\'')
    assert "FROM `select`" in label_query("mysql+pymysql://u@h/db", "select", "r")
    assert label_query("postgresql+psycopg://u@h/db", "plain", "r").endswith("FROM plain WHERE plain.run_key = 'r'")


def test_lwec_run_help_mentions_how_passwords_are_kept_out_of_prefect(capsys):
    with pytest.raises(SystemExit):
        lwec_main(["run", "--help"])
    assert "env:VAR" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("argv, message", [
    (["-k", "1"], "n_clusters must be >= 2, got 1"),
    (["-k", "3", "--theta", "0"], "theta must be finite and > 0, got 0.0"),
    (["-k", "3", "--output-table", "x;y"], "output_table='x;y' is not allowed"),
])
def test_lwec_run_rejects_bad_parameters_before_running(sqlite_url, capsys, argv, message):
    code = lwec_main(["run", "--database-url", sqlite_url, "--table", "blobs", *argv])
    assert code == 2
    assert message in capsys.readouterr().err


def test_lwec_run_sets_prefect_defaults_before_prefect_reads_its_settings(tmp_path):
    # Prefect fixes its settings when first imported; the CLI's defaults must be in
    # the environment by then, or the temporary server keeps the 20 s start-up limit.
    import os
    import subprocess

    script = (
        "import sys\n"
        "from lwec_tasks.cli import main\n"
        "assert 'prefect' not in sys.modules\n"
        "code = main(['run', '--database-url', sys.argv[1], '--table', 't', '-k', '1'])\n"
        "import prefect.settings\n"
        "settings = prefect.settings.get_current_settings()\n"
        "print(code, settings.server.ephemeral.startup_timeout_seconds)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_SERVER_EPHEMERAL")}
    done = subprocess.run([sys.executable, "-c", script, f"sqlite:///{tmp_path / 'x.db'}"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["2", "120"]
