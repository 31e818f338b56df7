"""Static checks of the work-pool deployments in ``deployments/prefect.yaml`` and the README's commands."""

import re

import yaml

from helpers.pipeline import PROJECT_ROOT


def test_deployments_leave_the_tracking_uri_to_the_workers_environment():
    # A `{{ $VAR }}` in job_variables is filled in at `prefect deploy` time and would
    # override the worker's MLFLOW_TRACKING_URI (with '' if the deploying shell lacks it).
    config = yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())
    for deployment in config["deployments"]:
        env = (deployment.get("work_pool") or {}).get("job_variables", {}).get("env", {})
        assert "MLFLOW_TRACKING_URI" not in env, deployment["name"]
        assert not any("{{" in str(value) for value in env.values()), deployment["name"]


def test_readme_work_pool_commands_export_what_the_worker_needs():
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme.split("## Running on a schedule / from the Prefect UI", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n((?:(?!```).)*prefect\.yaml(?:(?!```).)*)```", section, re.S).group(1)
    for variable in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "LWEC_DATABASE_URL", "LWEC_PROJECT_DIR"):
        assert f"{variable}=" in block, variable


def _serve_module():
    import sys

    sys.path.insert(0, str(PROJECT_ROOT / "deployments"))
    try:
        import serve
    finally:
        sys.path.pop(0)
    return serve


def test_the_assign_deployment_is_defined_and_served():
    config = yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())
    (assign,) = [d for d in config["deployments"] if d["name"] == "assign"]
    assert assign["entrypoint"] == "flows/assign.py:assign_flow"
    assert not assign.get("schedules") and assign["work_pool"]["name"] == "lwec-process"
    module, function = assign["entrypoint"].split(":")
    assert (PROJECT_ROOT / module).exists()

    serve = _serve_module()
    served = {d.name: d for d in serve.build_deployments({"table": "other"}, cron="* * * * *")}
    assert set(served) == {d["name"] for d in config["deployments"]}
    deployment = served["assign"]
    assert deployment.flow_name == "lwec-assign"
    assert deployment.parameters == assign["parameters"] and not deployment.schedules  # overrides: nightly only
    assert deployment.description == assign["description"]
    from prefect.utilities.callables import parameter_schema

    properties = parameter_schema(serve.FLOWS[assign["entrypoint"]].fn).model_dump()["properties"]
    assert set(properties) == {"database_url", "table", "model_uri", "feature_columns", "id_column", "output_table",
                               "dask_address"}
    assert "MLflow model URI" in properties["model_uri"]["description"]
    assert set(serve.deployment_definitions()) == {"nightly", "on-demand"}  # the consensus flow's, as before


def _definitions() -> dict:
    config = yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())
    return {d["name"]: d for d in config["deployments"]}


def test_prefect_yaml_names_a_prefect_version_the_project_accepts():
    import tomllib

    from packaging.requirements import Requirement

    config = yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    (prefect,) = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "prefect"]
    assert prefect.specifier.contains(config["prefect-version"]), (config["prefect-version"], str(prefect))


def test_on_demand_forms_start_from_the_workers_database_and_useful_defaults(monkeypatch):
    """The UI's Run → Custom run form starts from a deployment's parameters: the database is the one in the
    worker's LWEC_DATABASE_URL, k is chosen automatically; only what has no sensible default is left empty."""
    from prefect.utilities.callables import parameter_schema

    from flows.assign import assign_flow
    from flows.consensus import consensus_flow
    from lwec_tasks.io.connection import resolve_database_url
    from lwec_tasks.request import ConsensusRequest

    definitions = _definitions()
    on_demand, assign = definitions["on-demand"]["parameters"], definitions["assign"]["parameters"]
    assert on_demand == {"database_url": "env:LWEC_DATABASE_URL", "n_clusters": "auto", "method": "lwea"}
    assert assign == {"database_url": "env:LWEC_DATABASE_URL"}

    # What the form still asks for: the required parameters without a default.
    for flow, parameters, missing in ((consensus_flow, on_demand, {"table"}),
                                      (assign_flow, assign, {"table", "model_uri"})):
        schema = parameter_schema(flow).model_dump()
        assert set(schema["required"]) - set(parameters) == missing, flow.name
        assert set(parameters) <= set(schema["properties"]), flow.name

    # The defaults are valid flow parameters, and the reference names the worker's database.
    request = ConsensusRequest(**on_demand, table="digits")
    assert request.auto_k and request.method == "lwea"
    monkeypatch.setenv("LWEC_DATABASE_URL", "sqlite:///worker.db")
    assert resolve_database_url(on_demand["database_url"]) == "sqlite:///worker.db"


def test_serve_registers_the_forms_defaults_and_lends_them_its_database(monkeypatch):
    serve = _serve_module()
    definitions = _definitions()
    served = {d.name: d for d in serve.build_deployments({"table": "other"})}
    assert served["on-demand"].parameters == definitions["on-demand"]["parameters"]
    assert served["assign"].parameters == definitions["assign"]["parameters"]
    assert served["nightly"].parameters["table"] == "other"

    # --database-url becomes the serving process's LWEC_DATABASE_URL, which its flow runs inherit ...
    monkeypatch.setenv("LWEC_DATABASE_URL", "sqlite:///before.db")  # restored after the test
    overrides = serve.database_into_environment({"database_url": "sqlite:///served.db", "table": "t"})
    assert overrides == {"database_url": "sqlite:///served.db", "table": "t"}
    assert serve.os.environ["LWEC_DATABASE_URL"] == "sqlite:///served.db"
    # ... and a URL holding a password reaches the nightly deployment by reference only.
    secret = "postgresql+psycopg://lwec:s3cret@db/features"
    assert serve.database_into_environment({"database_url": secret}) == {"database_url": "env:LWEC_DATABASE_URL"}
    assert serve.os.environ["LWEC_DATABASE_URL"] == secret
    assert serve.database_into_environment({"database_url": "env:OTHER"}) == {"database_url": "env:OTHER"}
