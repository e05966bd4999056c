"""Migrations stand alone: what 0007 computes is frozen inside it, and agrees with protocol/ at contract 1.0.

If the contract file changes without a new version, the live keys stop matching the frozen 1.0 copy and this
test fails: a changed contract is a new contract version (and a migration of its own for stored keys).
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from protocol.comparability import comparability_key, contract
from protocol.summary import software_summary
from tests.conftest import EXAMPLES, SHARED

m0007: Any = importlib.import_module("registry.migrations.0007_catalogue_cells")


def _documents() -> list[dict[str, Any]]:
    paths = sorted(EXAMPLES.glob("*.json")) + sorted((SHARED / "protocol" / "examples").glob("*.json"))
    return [json.loads(p.read_text()) for p in paths]


def test_the_migration_imports_no_protocol_code() -> None:
    source = m0007.__loader__.get_source(m0007.__name__)
    assert "import protocol" not in source and "from protocol" not in source


@pytest.mark.parametrize("axis", ["software", "precision", "system"])
def test_the_frozen_keys_equal_protocol_keys_while_the_contract_is_1_0(axis: str) -> None:
    documents = _documents()
    assert documents
    if contract().version != m0007.FROZEN_CONTRACT["version"]:
        pytest.fail(f"contract {contract().version}: 0007 stays at 1.0; update this test to say so")
    for doc in documents:
        assert m0007.comparability_key(doc, axis) == comparability_key(doc, axis)


def test_the_frozen_software_summary_equals_protocols() -> None:
    for doc in _documents():
        frameworks = doc["software"]["frameworks"]
        assert m0007.software_summary(frameworks) == software_summary(frameworks)
    long = {f"package-{i}": "1.0" for i in range(100)}
    assert m0007.software_summary(long) == software_summary(long)
