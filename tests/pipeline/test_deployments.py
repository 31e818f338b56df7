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
    assert deployment.parameters == {} and not deployment.schedules  # overrides go to the nightly consensus only
    assert deployment.description == assign["description"]
    from prefect.utilities.callables import parameter_schema

    properties = parameter_schema(serve.FLOWS[assign["entrypoint"]].fn).model_dump()["properties"]
    assert set(properties) == {"database_url", "table", "model_uri", "feature_columns", "id_column", "output_table"}
    assert "MLflow model URI" in properties["model_uri"]["description"]
    assert set(serve.deployment_definitions()) == {"nightly", "on-demand"}  # the consensus flow's, as before
