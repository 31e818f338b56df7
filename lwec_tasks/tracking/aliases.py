"""Moving a registered model's alias (``champion`` by default) to the version a promoted run registered."""

from __future__ import annotations

from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.tracking.store import tracking_client


def registered_version(client, name: str, run_id: str) -> str:
    """The version of registered model ``name`` created from MLflow run ``run_id`` (the newest if several);
    :class:`LwecInputError` naming both when there is none."""
    versions = client.search_model_versions(f"name = '{name}' and run_id = '{run_id}'")
    if not versions:
        raise LwecInputError(f"registered model {name!r} has no version from MLflow run {run_id!r}")
    return str(max(int(version.version) for version in versions))


def move_alias(tracking_uri: str, name: str, run_id: str, alias: str) -> str:
    """Point ``alias`` of registered model ``name`` at the version registered from run ``run_id``; returns the
    model URI ``models:/<name>@<alias>`` (what ``lwec assign --model-uri`` takes)."""
    client = tracking_client(tracking_uri)
    client.set_registered_model_alias(name, alias, registered_version(client, name, run_id))
    return f"models:/{name}@{alias}"
