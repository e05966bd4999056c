"""Comparability contract 1.2 on served-model levels (protocol 1.2): the request shape, the served model, the arrival
process and the sweep mode are controlled; which sweep a level belongs to is only disclosed, so the levels of two
sweeps at one load form one comparison; the engine is software stack; the load generator is not part of the
configuration. Contract 1.1 is frozen byte for byte, and documents without served-model fields classify and key
exactly as they did under it."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from protocol import canonical, serving
from protocol import comparability as cmp
from protocol.comparability.definition import FROZEN_CONTRACT_FILES
from protocol.schema import minor_schema
from tests.protocol.test_comparability import schema_pointers, set_at
from tests.protocol.test_protocol_1_2 import level

# sha256 of protocol/schemas/comparability.v1.1.json: contract 1.1 as it was when 1.2 was made. Never change it.
FROZEN_CONTRACT_1_1_SHA256 = "4c18d779f754a20d2e394e5ab52a2d72cff5e8ba18630353e4b43c5ed948e82b"
# sha256 of protocol/schemas/comparability.v1.2.json: contract 1.2 as it was when 1.3 was made. Never change it.
FROZEN_CONTRACT_1_2_SHA256 = "6e519526e88879a9b12c1745c2fc33ecffb08cb03d2351044293578d1234691f"
FIXED = {
    "kind": "fixed",
    "input_tokens": {"mean": 1000, "distribution": "constant"},
    "output_tokens": {"mean": 200, "distribution": "constant"},
    "turns": "single",
}
AGENTIC = {"kind": "agentic-multi-turn", "turns": "multi", "input_tokens": None, "output_tokens": None}


def served(sweep: str = "sweep-a", concurrency: int = 16, **changes: Any) -> dict[str, Any]:
    """One level (concurrency 16 of a concurrency sweep) with `changes` as {pointer with '__' for '/': value}."""
    doc = level(concurrency=concurrency)
    doc["scenario"]["sweep"] = {"id": sweep, "index": 3, "levels": 6, "mode": "concurrency", "stop_reason": None}
    for dotted, value in changes.items():
        doc = set_at(doc, "/" + dotted.replace("__", "/"), copy.deepcopy(value))
    return doc


def key(version: str, fields: dict[str, Any]) -> str:
    """A system-axis key as the contract defines it: the digest of {version, axis, controlled projection}."""
    return canonical.digest({"contract": version, "axis": "system", "controlled": fields})


def refused_fields(verdict: cmp.Verdict) -> list[str]:
    return [d.field for d in verdict.refusals]


def test_the_levels_of_two_sweeps_at_one_load_form_one_comparison_and_the_sweeps_are_shown() -> None:
    a = served("sweep-a")
    b = served("sweep-b", scenario__sweep__index=1, scenario__sweep__levels=4, scenario__sweep__stop_reason="ttft")
    verdict = cmp.check([a, b], "system")
    assert verdict.comparable, [d.words for d in verdict.refusals]
    assert [d.words for d in verdict.disclosures if d.group == "sweep_identity"] == [
        "scenario.sweep.id: sweep-a vs sweep-b",
        "scenario.sweep.index: 3 vs 1",
        "scenario.sweep.levels: 6 vs 4",
        "scenario.sweep.stop_reason: not stated vs ttft",
    ]
    assert cmp.comparability_key(a) == cmp.comparability_key(b)


@pytest.mark.parametrize("axis", ["system", "software", "precision", "iso-quality"])
def test_a_different_request_shape_is_refused_on_every_axis(axis: str) -> None:
    verdict = cmp.check([served(workload__request_shape=FIXED), served(workload__request_shape=AGENTIC)], axis)
    assert not verdict.comparable
    assert "workload.request_shape.kind" in refused_fields(verdict)
    assert {d.group for d in verdict.refusals} >= {"request_shape"}
    assert "workload.request_shape.kind: fixed vs agentic-multi-turn" in [d.words for d in verdict.refusals]


def test_other_lengths_of_one_fixed_shape_are_refused_but_its_notes_only_shown() -> None:
    longer = copy.deepcopy(FIXED)
    longer["input_tokens"]["mean"] = 2000
    verdict = cmp.check([served(workload__request_shape=FIXED), served(workload__request_shape=longer)])
    assert refused_fields(verdict) == ["workload.request_shape.input_tokens.mean"]
    noted = cmp.check([served(), served(workload__request_shape__notes="from the InferenceX harness")])
    assert noted.comparable and [d.field for d in noted.disclosures] == ["workload.request_shape.notes"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"scenario__arrival": "gamma", "scenario__burstiness": 0.5}, "scenario.arrival"),
        ({"scenario__burstiness": 0.5}, "scenario.burstiness"),
        ({"scenario__sweep__mode": "automatic"}, "scenario.sweep.mode"),
        ({"scenario__concurrency": 32}, "scenario.concurrency"),
        ({"software__serving__model": "zai-org/GLM-5.1-MXFP4"}, "software.serving.model"),
    ],
)
def test_what_defines_the_load_and_the_served_model_is_controlled(changes: dict[str, Any], field: str) -> None:
    verdict = cmp.check([served(), served("sweep-b", **changes)], "system")
    assert not verdict.comparable and field in refused_fields(verdict)


def test_a_gamma_arrival_at_two_burstinesses_is_two_loads() -> None:
    bursty = served(scenario__arrival="gamma", scenario__burstiness=0.25)
    poisson_like = served(scenario__arrival="gamma", scenario__burstiness=1.0)
    assert refused_fields(cmp.check([bursty, poisson_like])) == ["scenario.burstiness"]
    assert cmp.comparability_key(bursty) != cmp.comparability_key(poisson_like)


def test_the_engine_is_software_stack_and_the_load_generator_is_not_configuration() -> None:
    vllm, sglang = served(), served(software__serving__engine="sglang", software__serving__version="0.5.12")
    on_system = cmp.check([vllm, sglang], "system")
    assert on_system.comparable and {d.group for d in on_system.disclosures} == {"software_stack"}
    assert cmp.configuration(vllm, "system") != cmp.configuration(sglang, "system")  # two arms, never repetitions
    assert {d.field for d in cmp.check([vllm, sglang], "software").subject_differences} == {
        "software.serving.engine",
        "software.serving.version",
    }
    guidellm = served(software__serving__tool={"name": "guidellm", "version": "0.6.0"})
    elsewhere = served(software__serving__endpoint="http://10.0.0.7:8000")
    for other in (guidellm, elsewhere):
        verdict = cmp.check([vllm, other], "system")
        assert verdict.comparable and {d.group for d in verdict.disclosures} == {"measuring_client"}
        assert cmp.configuration(vllm, "system") == cmp.configuration(other, "system")  # one arm


def test_a_served_level_is_keyed_under_1_2_and_a_run_without_served_fields_under_1_1() -> None:
    doc = served()
    fields = cmp.controlled_projection(doc)
    assert cmp.comparability_key(doc) == key("1.2", fields)
    assert "/scenario/sweep/id" not in fields and fields["/scenario/sweep/mode"] == "concurrency"
    plain = level()
    for pointer in ("/scenario/sweep", "/workload/request_shape", "/software/serving"):
        plain = set_at(plain, pointer, None)
    assert cmp.comparability_key(plain) == key("1.1", cmp.controlled_projection(plain))
    assert cmp.comparability_keys(doc) == {axis: cmp.comparability_key(doc, axis) for axis in cmp.contract().axes}


# ------------------------------------------------------------------------------------ contract 1.1, frozen


def test_contract_1_1_is_frozen_byte_for_byte_and_readable_by_version() -> None:
    path = FROZEN_CONTRACT_FILES["1.1"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == FROZEN_CONTRACT_1_1_SHA256
    assert cmp.contract_document("1.1")["version"] == "1.1"
    assert cmp.contract_document("1.3") == cmp.contract_document()
    assert cmp.known_versions() == ("1.1", "1.2", "1.3")
    with pytest.raises(
        cmp.ComparabilityError, match=r"no comparability contract 0\.9: this code knows 1\.1, 1\.2, 1\.3"
    ):
        cmp.contract_document("0.9")


def test_contract_1_2_is_frozen_byte_for_byte_and_readable_by_version() -> None:
    path = FROZEN_CONTRACT_FILES["1.2"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == FROZEN_CONTRACT_1_2_SHA256
    assert cmp.contract_document("1.2")["version"] == "1.2" and "scaling" not in cmp.contract_document("1.2")["axes"]


def test_1_2_changes_only_fields_protocol_1_2_added() -> None:
    """So every document of protocol 1.0 or 1.1 classifies exactly as under 1.1: each group of 1.1 is in 1.2 with
    its pointers and roles, and every pointer 1.2 adds lies under a field that protocol 1.1 does not have."""
    old, new = cmp.contract_document("1.1"), cmp.contract_document("1.2")
    groups = {g["id"]: g for g in new["groups"]}
    for g in old["groups"]:
        assert (groups[g["id"]]["pointers"], groups[g["id"]]["roles"]) == (g["pointers"], g["roles"]), g["id"]
        assert "since" not in groups[g["id"]]
    added = [g for g in new["groups"] if g["id"] not in {o["id"] for o in old["groups"]}]
    assert all(g["since"] == "1.2" for g in added)
    schema_1_1 = minor_schema("1.1")
    known = schema_pointers(schema_1_1, schema_1_1["$defs"])
    for pointer in (p for g in added for p in g["pointers"]):
        assert not any(k == pointer or k.startswith(pointer + "/") for k in known), pointer
    same = ("ignored", "unlisted_role", "metric_directions", "axes", "default_axis", "protocol")
    assert {k: old[k] for k in same} == {k: new[k] for k in same}


# ------------------------------------------------------------------------- two sweeps, in words (protocol.serving)


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        (FIXED, "1000/200 fixed"),
        ({**AGENTIC, "dataset": "cc-traces"}, "agentic multi-turn (cc-traces)"),
        (
            {
                "kind": "distribution",
                "input_tokens": {"mean": 32768, "distribution": "lognormal"},
                "output_tokens": {"mean": 512.5, "distribution": "normal"},
            },
            "32768/512.5 mean, lognormal, normal",
        ),
        ({"kind": "dataset", "dataset": "sharegpt", "turns": "multi"}, "dataset sharegpt, multi-turn"),
        (
            {**FIXED, "shared_prefix": {"ratio": 0.25, "groups": 4}, "turns": "multi", "max_turns": 3},
            "1000/200 fixed, multi-turn (up to 3 turns), shared prefix 25% in 4 groups",
        ),
        ({**FIXED, "shared_prefix": {"ratio": 0.5, "groups": 1}}, "1000/200 fixed, shared prefix 50%"),
        (None, "not stated"),
    ],
)
def test_a_request_shape_is_said_as_a_reader_says_it(shape: Any, words: str) -> None:
    assert serving.shape_words(shape) == words


def test_two_sweeps_that_measured_the_same_thing_have_no_refusal_whatever_their_loads() -> None:
    assert serving.not_like_for_like([served("a", 4), served("b", 48)], ["A", "B"]) is None


def test_two_sweeps_of_other_shapes_and_models_are_refused_what_was_measured_first() -> None:
    fixed = served("a", workload__request_shape=FIXED, precision__weights="fp8")
    agentic = served("b", workload__request_shape=AGENTIC, software__serving__model="zai-org/GLM-5.1")
    assert serving.not_like_for_like([fixed, agentic], ["8×B200 (a)", "2×MI355X (b)"]) == (
        "Not like for like on the system under test axis: served model differs: nvidia/Kimi-K2.5-NVFP4 (8×B200 (a)) "
        "vs zai-org/GLM-5.1 (2×MI355X (b)); request shape differs: 1000/200 fixed (8×B200 (a)) vs agentic "
        "multi-turn (2×MI355X (b)); precision.weights: fp8 (8×B200 (a)) vs bf16 (2×MI355X (b)). No ratio is given: "
        "each sweep's frontier is shown as measured, not set against the other."
    )
