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
