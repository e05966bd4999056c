"""`registry -> runners -> protocol`, never back, and the standalone `verifier` on protocol alone; inside, the layer
contracts of pyproject.toml's [tool.importlinter], no import cycle, no private name used from another module, and
imports inside functions only with a reason (docs/contributing.md, "Layers"): enforced on the source, not hoped for."""

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


# --- install what the role needs --------------------------------------------------------------------

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


# --- inside the code: layers, cycles, private names, imports inside functions --------------------------------------

PACKAGES = ["registry", "protocol", "runners", "verifier", "bench", "tests", "devtools"]
# Imports inside a function are for heavy or optional libraries only; an import of the project's own code inside a
# function is listed here with its reason (and is still counted by the cycle test below).
_SUBCOMMAND = "`benchreg` loads one subcommand's code only; on an [agent] install the server stack is absent"
LOCAL_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("protocol", "protocol.validate"): "jsonschema is loaded on the first validation, not on `import protocol`",
    ("registry", "registry.celery"): "Celery (most of a second) only for processes that use it; the CLI does not",
    (
        "registry.celery",
        "registry.worker.beat",
    ): "celery.beat only in the beat process (registry.celery:HeartbeatScheduler)",
    ("registry.apps", "registry"): "the Celery app, once the apps are loaded (its tasks import models)",
    ("registry.cli", "registry.admin_cli"): _SUBCOMMAND,
    ("registry.cli", "runners.agent.cli"): _SUBCOMMAND,
    ("registry.cli", "runners.cli"): _SUBCOMMAND,
    ("registry.cli", "runners.serving"): _SUBCOMMAND,
    ("registry.cli", "runners.client"): _SUBCOMMAND,
    ("registry.cli", "verifier.cli"): _SUBCOMMAND,
    ("registry.cli", "verifier.witness"): _SUBCOMMAND,
    ("registry.cli", "registry.migration_state"): "its migration check (Django) only after a Django command "
    "failed: the client commands never start Django",
    (
        "registry.management.commands.import_results",
        "registry.management.mlperf_import",
    ): "MLPerf's importers, rich and tenacity (~0.1 s) only for an MLPerf import, not a serving one (issue 41)",
    ("registry.management.commands.serve", "registry.wsgi"): "importing it warms up and freezes the process's heap",
    ("registry.web.reports", "registry.services.reports"): "the PDF stack (WeasyPrint, pyHanko), on first use",
    ("registry.services.webhooks", "registry.services.webhook_transport"): "httpx and httpcore on the first delivery",
    ("registry.services.jobs", "runners.api"): "every runner's job spec (~0.1 s) only when a job's run is checked",
    ("registry.services.reports", "verifier.report"): "pyHanko's validation stack (~0.7 s) only to verify a report",
    ("runners.backends", "runners.backends.numpy_backend"): "a backend's library is loaded only when it is chosen",
    ("runners.backends", "runners.backends.torch_backend"): "PyTorch, loaded only when the torch backend is chosen",
    ("runners.cli", "runners.client"): "httpx only when a run is submitted",
    ("runners.serving.export", "runners.client"): "httpx only when a run is read from a registry (--run)",
    ("runners.distributed.cli", "runners.distributed.document"): "PyTorch only when a distributed run starts",
    ("runners.distributed.cli", "runners.distributed.launch"): "PyTorch only when a distributed run starts",
    ("verifier.cli", "verifier.report"): "pyHanko and cryptography only once the arguments are good",
    ("verifier.cli", "protocol.signed_note"): "cryptography only when a --log-key is given, to check it parses",
    ("devtools.contract", "devtools.documents"): "seed() runs in a process that sets Django up first",
    ("devtools.contract", "registry.models"): "seed() runs in a process that sets Django up first",
    ("devtools.contract", "registry.services.agents"): "seed() runs in a process that sets Django up first",
    ("devtools.contract", "registry.services.comparisons"): "seed() runs in a process that sets Django up first",
    ("devtools.contract", "registry.services.submissions"): "seed() runs in a process that sets Django up first",
    ("devtools.contract", "registry.services.tokens"): "seed() runs in a process that sets Django up first",
}


def _project_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts or ".venv" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _project_modules()


def _target(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (relative imports resolved against `module`)."""
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def test_the_layer_contracts_hold() -> None:
    """pyproject.toml's [tool.importlinter] contracts, checked by import-linter on the real import graph."""
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_no_import_cycle_anywhere() -> None:
    """Every import counts, module level or inside a function (only TYPE_CHECKING imports are left out)."""
    import grimp

    graph = grimp.build_graph(*[p for p in PACKAGES if (ROOT / p).exists()], exclude_type_checking_imports=True)
    in_cycles = sorted(
        f"{importer} -> {imported}"
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if graph.chain_exists(imported=importer, importer=imported)
    )
    assert not in_cycles, "imports that close a cycle:\n" + "\n".join(in_cycles)


def test_nothing_imports_a_private_name_from_another_module() -> None:
    offenders = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _target(module, node).split(".")[0] in PACKAGES:
                target = _target(module, node)
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__") and target != module:
                        offenders.append(f"{module}: from {target} import {alias.name}")
                    if f"{target}.{alias.name}" in MODULES:
                        aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in MODULES:
                        aliases[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                offenders.append(f"{module}: {aliases[node.value.id]}.{node.attr}")
    offenders = sorted(set(offenders))
    assert not offenders, "private names used from another module:\n" + "\n".join(offenders)


def test_imports_inside_functions_are_for_heavy_libraries_only() -> None:
    """A function-level import of the project's own code hides a dependency (often a cycle): each needs a reason."""
    found = {}
    for module, path in MODULES.items():
        if module.startswith(("tests", "bench")):
            continue  # tests and benchmarks import what they exercise where they exercise it
        tree = ast.parse(path.read_text(), filename=str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    target = _target(module, node)
                elif isinstance(node, ast.Import):
                    target = node.names[0].name
                else:
                    continue
                if target.split(".")[0] in PACKAGES:
                    found[(module, target)] = f"{path.relative_to(ROOT)}:{node.lineno}"
    unexplained = {key: where for key, where in found.items() if key not in LOCAL_IMPORTS_ALLOWED}
    assert not unexplained, "imports inside functions without a reason:\n" + "\n".join(
        f"{where}: {target}" for (_, target), where in sorted(unexplained.items())
    )
    assert sorted(set(LOCAL_IMPORTS_ALLOWED) - set(found)) == []  # the list holds no stale entry
