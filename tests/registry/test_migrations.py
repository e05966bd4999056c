"""Migrations stand alone: what 0007 and 0011 compute is frozen inside them, and agrees with protocol/.

0007 froze contract 1.0; 0011 froze contract 1.1 (the iso-quality axis) and re-keyed every stored run. If the
contract file changes without a new version, the live keys stop matching the frozen copy of the current version
and this test fails: a changed contract is a new contract version (and a migration of its own for stored keys).
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from protocol.comparability import comparability_key, contract, contract_document
from protocol.summary import software_summary
from tests.conftest import EXAMPLES, SHARED

m0007: Any = importlib.import_module("registry.migrations.0007_catalogue_cells")
m0011: Any = importlib.import_module("registry.migrations.0011_decisions")
FROZEN = {m.FROZEN_CONTRACT["version"]: m for m in (m0007, m0011)}


def _documents() -> list[dict[str, Any]]:
    paths = sorted(EXAMPLES.glob("*.json")) + sorted((SHARED / "protocol" / "examples").glob("*.json"))
    return [json.loads(p.read_text()) for p in paths]


@pytest.mark.parametrize(
    "module", [m0007, m0011, importlib.import_module("registry.migrations.0021_measurement_identity")]
)
def test_the_migration_imports_no_protocol_code(module: Any) -> None:
    source = module.__loader__.get_source(module.__name__)
    assert "import protocol" not in source and "from protocol" not in source


@pytest.mark.parametrize("axis", ["software", "precision", "system", "iso-quality"])
def test_the_frozen_keys_of_the_current_contract_equal_protocol_keys(axis: str) -> None:
    documents = _documents()
    assert documents
    if contract().version not in FROZEN:
        pytest.fail(f"contract {contract().version} has no migration that freezes it and re-keys the runs")
    frozen = FROZEN[contract().version]
    assert contract_document() == frozen.FROZEN_CONTRACT
    for doc in documents:
        assert frozen.comparability_key(doc, axis) == comparability_key(doc, axis)


def test_0007_still_computes_the_1_0_keys_it_wrote() -> None:
    doc = _documents()[0]
    assert m0007.FROZEN_CONTRACT["version"] == "1.0"
    assert m0007.comparability_key(doc, "system") != m0011.comparability_key(doc, "system")


def test_the_frozen_software_summary_equals_protocols() -> None:
    for doc in _documents():
        frameworks = doc["software"]["frameworks"]
        assert m0007.software_summary(frameworks) == software_summary(frameworks)
    long = {f"package-{i}": "1.0" for i in range(100)}
    assert m0007.software_summary(long) == software_summary(long)


def test_0016s_cell_shape_is_the_cell_key_but_withdrawn() -> None:
    """A new cell column must reach the shape (a new migration); otherwise a search joins runs to the wrong cells."""
    from registry.models.catalogue import CELL_KEY

    m0016: Any = importlib.import_module("registry.migrations.0016_search_shape_columns")
    assert sorted(m0016.CELL_SHAPE_COLUMNS) == sorted(c for c in CELL_KEY if c != "withdrawn")


def test_0021s_frozen_measurement_identity_equals_protocols() -> None:
    """0021 backfilled every run with a frozen copy of protocol.measurement_identity: they must agree."""
    import copy

    from protocol import digest, is_derived, measurement_identity

    m0021: Any = importlib.import_module("registry.migrations.0021_measurement_identity")
    documents = _documents()
    imported = copy.deepcopy(documents[0])
    imported["provenance"]["origin"] = {
        "kind": "mlperf-inference",
        "round": "v5.1",
        "benchmark": "llama2-70b-99",
        "mapped_benchmark": None,
        "scenario": "Server",
        "files": {"b/x": "sha256:" + "22" * 32, "a/y": "sha256:" + "11" * 32},
    }
    inferred = copy.deepcopy(imported)
    inferred["provenance"]["origin"]["derivation"] = {"kind": "mlperf-inferred", "rule": "r"}
    for doc in [*documents, imported, inferred]:
        assert m0021.measurement_identity(doc, digest(doc)) == measurement_identity(doc)
        assert (m0021.derivation_kind(doc) is not None) == is_derived(doc)
