"""The MLflow run's ``prefect.deployment_id`` tag, read from the flow run's context without asking the API."""

from __future__ import annotations

from prefect import flow

from lwec_tasks.tasks.track import deployment_id


def test_a_run_without_deployment_has_no_deployment_id_and_asks_no_api(prefect_server, monkeypatch):
    import prefect.runtime.deployment

    def asked(*args, **kwargs):
        raise AssertionError("the API was asked for the flow run")

    monkeypatch.setattr(prefect.runtime.deployment, "_get_flow_run", asked)

    @flow
    def probe():
        return deployment_id()

    assert probe() is None
    assert deployment_id() is None  # outside a flow run
