"""Deployments against a real local Prefect server, triggered the way the UI triggers them.

A server process is started on localhost; deployments are registered by
``deployments/serve.py`` (served) and by ``prefect deploy`` with
``deployments/prefect.yaml`` plus a worker (lwec's warm type and Prefect's process type); a flow run is created from a
deployment through the API call the UI's "Run" button makes, executes, and the
labels table and MLflow run it produced are checked.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from mlflow import MlflowClient

from helpers.pipeline import PROJECT_ROOT, client_for, expected_labels, read_labels, start, stop, wait_for
from helpers.serving import SERVED_DEPLOYMENTS, blobs_workspace, forget_served, start_serving

pytestmark = pytest.mark.slow

FEATURES = ["f0", "f1", "f2", "f3"]
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


@pytest.fixture
def workspace(tmp_path):
    """A features table and an MLflow store in a temp dir."""
    return blobs_workspace(tmp_path)


def trigger_like_the_ui(api_url: str, deployment_name: str, parameters: dict, timeout: float = 240):
    """Create a flow run from the deployment (the UI's Run → Custom run) and wait for its final state."""
    with client_for(api_url) as client:
        deployment = client.read_deployment_by_name(deployment_name)
        flow_run = client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
        final = wait_for(
            lambda: (run := client.read_flow_run(flow_run.id)).state and run.state.type.value in FINAL and run,
            timeout, f"flow run {flow_run.id} of {deployment_name}",
        )
    return deployment, final


def check_outputs(database, frame, tracking_uri, experiment, deployment, flow_run, output_table):
    assert flow_run.state.type.value == "COMPLETED", flow_run.state.message
    stored = read_labels(database, output_table)
    expected = expected_labels(frame, FEATURES, k=3, ensemble_size=6, seed=3)
    np.testing.assert_array_equal(stored["label"], expected.loc[stored["id"]])
    assert set(stored["flow_run_id"]) == {str(flow_run.id)}
    client = MlflowClient(tracking_uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert run.data.tags["prefect.flow_run_id"] == str(flow_run.id)
    assert run.data.tags["prefect.deployment_id"] == str(deployment.id)
    assert run.data.params["n_objects"] == str(len(frame)) and "nmi" in run.data.metrics


def form_parameters(database, experiment, output_table):
    """What an operator enters in the on-demand form; ``database`` None keeps the form's default database."""
    return {**({"database_url": database} if database else {}), "table": "blobs", "n_clusters": 3,
            "label_column": "target", "ensemble_size": 6, "seed": 3, "experiment": experiment,
            "output_table": output_table}


def form_defaults(name: str) -> dict:
    """The parameters ``deployments/prefect.yaml`` gives deployment ``name`` (the UI form's starting values)."""
    import yaml

    config = yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())
    return next(d for d in config["deployments"] if d["name"] == name)["parameters"]


def test_served_deployments_run_from_the_ui(prefect_api, workspace, tmp_path):
    api_url, env = prefect_api.url, prefect_api.env
    database, frame, tracking_uri = workspace
    server, log = start_serving(env, workspace, tmp_path)
    try:
        with client_for(api_url) as client:
            # serve.py registers the deployments one after another: wait for all of them.
            wait_for(lambda: all(client.read_deployment_by_name(name) for name in SERVED_DEPLOYMENTS), 120,
                     "served deployments", server, log)
            nightly = client.read_deployment_by_name("lwec-consensus/nightly")
            on_demand = client.read_deployment_by_name("lwec-consensus/on-demand")
            assign = client.read_deployment_by_name("lwec-assign/assign")
        assert [s.schedule.cron for s in nightly.schedules] == ["0 2 * * *"]
        assert nightly.parameters["database_url"] == database and nightly.parameters["n_clusters"] == 3
        assert on_demand.parameters == form_defaults("on-demand") and assign.parameters == form_defaults("assign")

        with client_for(api_url) as client, pytest.raises(Exception, match="n_clusters"):
            deployment = client.read_deployment_by_name("lwec-consensus/on-demand")
            client.create_flow_run_from_deployment(deployment.id, parameters={**form_parameters(
                database, "x", "x"), "n_clusters": 1})  # the form refuses it, as in the UI

        # The form's default database (env:LWEC_DATABASE_URL) is the one serve.py was given.
        deployment, flow_run = trigger_like_the_ui(
            api_url, "lwec-consensus/on-demand", form_parameters(None, "served", "served_labels"))
        check_outputs(database, frame, tracking_uri, "served", deployment, flow_run, "served_labels")
    finally:
        stop(server)
        forget_served(api_url, "lwec-served")


@pytest.mark.parametrize("pool_type", ["lwec-warm-process", "process"])
def test_prefect_yaml_deployments_run_on_a_worker(prefect_api, workspace, tmp_path, pool_type):
    """The README's work-pool commands, with lwec's warm worker type and with Prefect's process type."""
    api_url, env = prefect_api.url, prefect_api.env
    database, frame, tracking_uri = workspace
    env = {**env, "MLFLOW_TRACKING_URI": tracking_uri, "LWEC_PROJECT_DIR": str(PROJECT_ROOT),
           "LWEC_DATABASE_URL": database}
    prefect = [sys.executable, "-m", "prefect"]
    subprocess.run([*prefect, "work-pool", "create", "lwec-process", "--type", pool_type], env=env, check=True,
                   cwd=tmp_path, capture_output=True, timeout=120)
    # Deploy from a shell without MLFLOW_TRACKING_URI: the runs must still use the worker's value.
    deploy_env = {k: v for k, v in env.items() if k != "MLFLOW_TRACKING_URI"}
    deploy = subprocess.run([*prefect, "--no-prompt", "deploy", "--all", "--prefect-file",
                             str(PROJECT_ROOT / "deployments" / "prefect.yaml")],
                            env=deploy_env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=180)
    assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]
    with client_for(api_url) as client:
        nightly = client.read_deployment_by_name("lwec-consensus/nightly")
        on_demand = client.read_deployment_by_name("lwec-consensus/on-demand")
    assert [s.schedule.cron for s in nightly.schedules] == ["0 2 * * *"]
    assert nightly.parameters["database_url"] == "env:LWEC_DATABASE_URL"
    assert nightly.work_pool_name == "lwec-process"
    assert on_demand.parameters == form_defaults("on-demand")
    for deployment in (nightly, on_demand):
        assert "MLFLOW_TRACKING_URI" not in (deployment.job_variables or {}).get("env", {})

    log = tmp_path / "worker.log"
    worker = start([*prefect, "worker", "start", "--pool", "lwec-process"], env, log, tmp_path)
    try:
        # The form's default database: the worker's LWEC_DATABASE_URL.
        deployment, flow_run = trigger_like_the_ui(
            api_url, "lwec-consensus/on-demand", form_parameters(None, "pool", "pool_labels"))
        if flow_run.state.type.value != "COMPLETED":
            pytest.fail(f"{flow_run.state.message}\n{log.read_text()[-4000:]}")
        check_outputs(database, frame, tracking_uri, "pool", deployment, flow_run, "pool_labels")
    finally:
        stop(worker)
        forget_served(api_url, "lwec-process")  # the yaml's pool name is fixed: the next test makes it again
