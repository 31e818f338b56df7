"""A held run seen from a real Prefect server: ``lwec run`` exits non-zero with the gate's message last, and
automations on ``lwec.consensus.completed`` and ``lwec.consensus.held`` call a webhook on loopback."""

import json
import subprocess
import sys
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from helpers.blobs import write_blobs_table
from helpers.pipeline import read_labels, unique


class Received:
    """A loopback HTTP server recording each POST body by path; ``wait(path)`` blocks until one arrived."""

    def __init__(self):
        self.bodies: dict[str, bytes] = {}
        self.arrived = threading.Condition()
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with received.arrived:
                    received.bodies[self.path] = body
                    received.arrived.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, path: str, timeout: float) -> dict:
        with self.arrived:
            if not self.arrived.wait_for(lambda: path in self.bodies, timeout):
                pytest.fail(f"no webhook call to {path} within {timeout} s; got {sorted(self.bodies)}")
            return json.loads(self.bodies[path])


@pytest.fixture
def webhook():
    received = Received()
    yield received
    received.server.shutdown()


def automation_calling(webhook_url: str, event: str, run_key: str, payload: str, **trigger):
    """An automation on ``event`` of run ``run_key`` that POSTs ``payload`` (a template) to ``webhook_url``."""
    from prefect.automations import Automation, CallWebhook, EventTrigger, Posture
    from prefect.blocks.webhook import Webhook

    block = Webhook(url=webhook_url)
    block.save(unique("held-hook").replace("_", "-"))
    return Automation(
        name=unique(event), trigger=EventTrigger(expect={event}, match={"prefect.resource.name": run_key},
                                                 posture=Posture.Reactive, threshold=1, within=timedelta(0), **trigger),
        actions=[CallWebhook(block_document_id=block._block_document_id, payload=payload)],
    ).create()


def test_a_held_run_fails_the_command_and_fires_automations(prefect_api, sqlite_url, tmp_path, webhook):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    write_blobs_table(sqlite_url, n=120)
    run_key = unique("nightly")
    with temporary_settings(updates={PREFECT_API_URL: prefect_api.url}):
        automation_calling(f"{webhook.url}/held", "lwec.consensus.held", run_key,
                           '{"run_key": "{{ event.resource.name }}", "failed": {{ event.payload.failed | tojson }}}')
        automation_calling(f"{webhook.url}/completed", "lwec.consensus.completed", run_key,
                           '{"source": "{{ event.resource_in_role[\'source-table\'].id }}", '
                           '"confidence_mean": {{ event.payload.metrics.confidence_mean }}}',
                           match_related={"prefect.resource.role": "source-table",
                                          "prefect.resource.id": "lwec.table.blobs"})

    argv = ["run", "--database-url", sqlite_url, "--table", "blobs", "-k", "3", "-M", "4", "--seed", "3",
            "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--run-name", run_key,
            "--promote-if", "confidence_mean>=1.5"]
    done = subprocess.run([sys.executable, "-m", "lwec_tasks", *argv], cwd=tmp_path, env=prefect_api.env,
                          capture_output=True, text=True, timeout=300)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1, done.stdout + done.stderr
    assert last.startswith(f"lwec run: error: run key {run_key!r} held by promote_if 'confidence_mean>=1.5': "
                           "confidence_mean=0."), last
    assert last.endswith("view 'blobs_lwec_labels_latest' not moved"), last
    assert len(read_labels(sqlite_url, "blobs_lwec_labels", run_key)) == 120

    held = webhook.wait("/held", timeout=60)
    assert held["run_key"] == run_key
    assert [failure["condition"] for failure in held["failed"]] == ["confidence_mean>=1.5"]
    completed = webhook.wait("/completed", timeout=60)
    assert completed["source"] == "lwec.table.blobs" and 0 < completed["confidence_mean"] < 1.5


@pytest.mark.slow
def test_served_runs_through_the_gate_and_assign_by_the_champion(prefect_api, tmp_path):
    """The on-demand deployment served by deployments/serve.py: a promoted run moves the champion, a held one ends
    Failed naming its failed condition; the assign deployment labels rows with models:/NAME@champion."""
    from mlflow import MlflowClient

    from helpers.pipeline import client_for, stop, wait_for
    from helpers.serving import SERVED_DEPLOYMENTS, blobs_workspace, forget_served, start_serving

    workspace = blobs_workspace(tmp_path)
    model = unique("served_champion")
    form = {"table": "blobs", "n_clusters": 3, "ensemble_size": 4, "seed": 3, "output_table": "served_gate",
            "register_model": model, "experiment": unique("served_gate")}
    server, log = start_serving(prefect_api.env, workspace, tmp_path)

    def run(deployment_name: str, parameters: dict):
        with client_for(prefect_api.url) as client:
            deployment = client.read_deployment_by_name(deployment_name)
            flow_run = client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
            return wait_for(lambda: (found := client.read_flow_run(flow_run.id)).state and found.state.is_final()
                            and found, 240, f"flow run {flow_run.id} of {deployment_name}", server, log)

    try:
        with client_for(prefect_api.url) as client:
            wait_for(lambda: all(client.read_deployment_by_name(name) for name in SERVED_DEPLOYMENTS), 120,
                     "served deployments", server, log)
        promoted = run("lwec-consensus/on-demand", {**form, "run_name": "night1", "promote_if": "confidence_mean>=0.5"})
        assert promoted.state.is_completed(), promoted.state.message
        assert promoted.name == "blobs-k3-lwea"
        held = run("lwec-consensus/on-demand", {**form, "run_name": "night2", "promote_if": "confidence_mean>=1.5"})
        assert held.state.is_failed()
        assert "run key 'night2' held by promote_if 'confidence_mean>=1.5': confidence_mean=0." in held.state.message
        assert set(read_labels(workspace.database, "served_gate_latest")["run_key"]) == {"night1"}
        assert len(read_labels(workspace.database, "served_gate", "night2")) == len(workspace.frame)
        champion = MlflowClient(workspace.tracking_uri).get_model_version_by_alias(model, "champion")
        assert str(champion.version) == "1"  # night2 registered version 2, which the alias did not follow

        assigned = run("lwec-assign/assign", {"table": "blobs", "model_uri": f"models:/{model}@champion",
                                              "output_table": "served_assigned"})
        assert assigned.state.is_completed(), assigned.state.message
        night1 = read_labels(workspace.database, "served_gate", "night1").set_index("id")["label"]
        by_champion = read_labels(workspace.database, "served_assigned").set_index("id")["label"]
        assert by_champion.loc[night1.index].tolist() == night1.tolist()
    finally:
        stop(server)
        forget_served(prefect_api.url, "lwec-served")
