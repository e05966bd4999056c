"""`registry -> runners -> protocol`, never back, and the standalone `verifier` on protocol alone: enforced on the
source, not just hoped for."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"protocol": {"django", "rest_framework", "registry", "runners", "celery"},
             "runners": {"django", "rest_framework", "registry"},
             # Third parties run it with the report and the registry's published keys only, in under a second.
             "verifier": {"django", "rest_framework", "registry", "runners", "celery", "matplotlib", "weasyprint",
                          "numpy", "jsonschema"}}


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
    offenders = {str(path.relative_to(ROOT)): sorted(_imports(path) & FORBIDDEN[package])
                 for path in (ROOT / package).rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}
