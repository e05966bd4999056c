"""Comparability of imported MLPerf results, on the rounds kept in ../shared/data/mlperf/: what the
contract (protocol/schemas/comparability.v1.json) says holds for real published runs."""

from __future__ import annotations

import copy
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from protocol import comparability
from registry.importers import mlperf

SHARED = Path(
    os.environ.get("BENCHREG_MLPERF_ROUNDS")
    or Path(__file__).resolve().parents[4].parent / "shared" / "data" / "mlperf"
)
ROUNDS = (
    sorted(p for p in SHARED.iterdir() if p.is_dir() and not any(p.glob("**/result_*.txt"))) if SHARED.is_dir() else []
)

pytestmark = pytest.mark.skipif(not ROUNDS, reason=f"no MLPerf Inference rounds in {SHARED}")


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    return [item.document for root in ROUNDS for item in mlperf.parse_tree(root).items if item.document]


def _origin(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["provenance"]["origin"]  # type: ignore[no-any-return]


def test_the_same_benchmark_and_scenario_compare_across_submitters_unless_precision_differs(documents):
    groups: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for doc in documents:
        key = (_origin(doc)["round"], doc["workload"]["name"], doc["scenario"]["kind"], _origin(doc)["division"])
        groups[key].setdefault(_origin(doc)["submitter"], doc)
    for key, by_submitter in groups.items():
        runs = list(by_submitter.values())
        for other in runs[1:]:
            verdict = comparability.check([runs[0], other], "system")
            # the system axis holds precision controlled: submitters' own quantization is the only refusal
            assert verdict.comparable or all(r.pointer.startswith("/precision") for r in verdict.refusals), key


def test_different_scenarios_of_one_system_are_refused_on_the_scenario(documents):
    by_result: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for doc in documents:
        by_result[(_origin(doc)["submitter"], _origin(doc)["system_id"], doc["workload"]["name"])].append(doc)
    pairs = [
        (docs[0], d)
        for docs in by_result.values()
        for d in docs[1:]
        if d["scenario"]["kind"] != docs[0]["scenario"]["kind"]
    ]
    assert pairs, "the shared rounds hold no system with two scenarios of one benchmark"
    for first, other in pairs:
        verdict = comparability.check([first, other], "system")
        assert not verdict.comparable
        assert any(r.pointer.startswith("/scenario") for r in verdict.refusals)


def test_a_different_round_is_refused_on_the_workload_version(documents):
    doc = documents[0]
    later = copy.deepcopy(doc)
    later["workload"]["version"] = doc["workload"]["version"] + "-next"
    verdict = comparability.check([doc, later], "system")
    assert not verdict.comparable and any(r.pointer == "/workload/version" for r in verdict.refusals)


@pytest.mark.parametrize(("facet", "value"), [("availability", "preview"), ("division", "open"), ("category", "edge")])
def test_division_category_and_availability_differences_are_disclosed_beside_the_result(documents, facet, value):
    doc = documents[0]
    other = copy.deepcopy(doc)
    _origin(other)["submitter"] = "Another submitter"
    _origin(other)[facet] = value if _origin(doc)[facet] != value else value + "-x"
    verdict = comparability.check([doc, other], "system")
    assert verdict.comparable
    assert any(d.pointer == f"/provenance/origin/{facet}" for d in verdict.disclosures)
