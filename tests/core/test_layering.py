"""The numeric core imports no pipeline machinery: Prefect, MLflow, SQLAlchemy or matplotlib."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import lwec_tasks.core

BLOCKED = ("prefect", "mlflow", "sqlalchemy", "matplotlib", "pydantic")


def core_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(lwec_tasks.core.__path__, "lwec_tasks.core."))


def test_every_core_module_imports_with_the_pipeline_libraries_blocked():
    # A fresh interpreter: a meta-path finder refuses the blocked packages, then every core module is imported.
    script = f"""
import importlib, sys
BLOCKED = {BLOCKED!r}
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"the numeric core imported {{name}}")
sys.meta_path.insert(0, Refuse())
for name in {core_modules()!r}:
    importlib.import_module(name)
leaked = sorted({{m.split(".")[0] for m in sys.modules}} & set(BLOCKED))
assert not leaked, leaked
print("imported", len({core_modules()!r}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["imported", str(len(core_modules()))]


def test_the_blocker_would_catch_a_pipeline_import():
    script = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "sqlalchemy":
            raise ImportError("blocked " + name)
sys.meta_path.insert(0, Refuse())
import lwec_tasks.io.staging
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "blocked sqlalchemy" in done.stderr


def test_the_public_names_stay_at_the_top_level():
    import lwec_tasks

    for name in ("Ensemble", "eci", "cluster_uncertainty", "lwca", "lwea", "lwgp", "generate_base_clusterings",
                 "nmi", "ari", "LWEA", "LWGP", "score_cuts", "LwecInputError", "LwecMemoryError"):
        assert getattr(lwec_tasks, name).__module__.startswith("lwec_tasks.core"), name
