"""`registry -> runners -> protocol`, never back, and the standalone `verifier` on protocol alone: enforced on the
source, not just hoped for."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "protocol": {"django", "rest_framework", "registry", "runners", "celery"},
    "runners": {"django", "rest_framework", "registry"},
    # Third parties run it with the report and the registry's published keys only, in under a second.
    "verifier": {
        "django",
        "rest_framework",
        "registry",
        "runners",
        "celery",
        "matplotlib",
        "weasyprint",
        "numpy",
        "jsonschema",
    },
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_never_import_higher_ones(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


# --- install what the role needs (issue 17) --------------------------------------------------------------------

SERVER_STACK = {
    "django",
    "rest_framework",
    "drf_spectacular",
    "weasyprint",
    "pyhanko",
    "matplotlib",
    "psycopg",
    "gunicorn",
}
AGENT_SIDE = [
    "registry.cli",
    "runners.cli",
    "runners.client",
    "runners.inference",
    "runners.training",
    "runners.agent.cli",
    "runners.agent.worker",
    "runners.agent.remote",
    "protocol",
]


def test_the_agent_and_runner_code_works_without_the_server_stack_installed() -> None:
    """What `benchreg agent|run|submit` import, in a fresh interpreter where the server stack cannot be imported
    (as on an `[agent]` install; kombu, for one, imports Django only if it is there)."""
    import os
    import subprocess
    import sys

    probe = f"""
import importlib, importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {sorted(SERVER_STACK)!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed with benchreg[agent])")
        return None
sys.meta_path.insert(0, Absent())
for module in {AGENT_SIDE!r}:
    importlib.import_module(module)
from registry.cli import main
sys.exit(main(["agent", "--help"]))
"""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"the agent side needs the server stack:\n{done.stderr[-3000:]}"


def test_the_agent_install_declares_no_server_dependency() -> None:
    """`pip install benchreg[agent]` = the base dependencies + the agent extra: none of them is server stack."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {
        re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower().replace("-", "_")
        for spec in [*project["dependencies"], *project["optional-dependencies"]["agent"]]
    }
    assert not names & (SERVER_STACK | {"djangorestframework", "psycopg_binary"}), names
    assert "benchreg[registry]" in project["optional-dependencies"]["test"]  # CI still installs everything
