"""Protocol minors: 1.0 and 1.1 are frozen byte for byte, each later minor only adds to the one before, every 1.0
document keeps its digest, derived columns and comparability keys, and a document declaring a minor may not use what
a later one added."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import protocol
from protocol import comparability as cmp
from protocol import rules
from protocol.schema import FROZEN_SCHEMA_FILES, known_minors, minor_schema, schema_errors, submission_schema
from tests.conftest import EXAMPLES, SHARED, load_example
from tests.protocol.strategies import mutated_documents

# sha256 of protocol/schemas/submission.v1.0.schema.json: the 1.0 schema as it was when 1.1 was made. Never change it.
FROZEN_1_0_SHA256 = "043ef858f3be4e580520aa4fd41bb016d52ee1b5cf81ff4121f9b84b06b77a9a"
# sha256 of protocol/schemas/submission.v1.1.schema.json: the 1.1 schema as it was when 1.2 was made. Never change it.
FROZEN_1_1_SHA256 = "d30cf03919c2f17b28fb058b6ad40124f45fb127aff7e56eddb6e8a82555a63b"
# sha256 of protocol/schemas/submission.v1.2.schema.json: the 1.2 schema as it was when 1.3 was made. Never change it.
FROZEN_1_2_SHA256 = "f72b8935dc85c06ac2378a6a961398651e2cce77aba90cc4b2dd0ab13a2c7a3d"
PINNED_1_0 = json.loads((Path(__file__).parent / "data" / "protocol_1_0_examples.json").read_text())
SERVER = "inference-server-h100-bf16"
DIGEST = "sha256:" + "ab" * 32

# Every addition of 1.1, as (pointer, value) put into a 1.0 document. Pointers are where the refusal points.
ADDITIONS_1_1: list[tuple[str, Any]] = [
    *[
        ("/precision/weights", f)
        for f in ("fp4", "fp4-e2m1", "fp6", "fp6-e2m3", "fp6-e3m2", "mxfp6-e2m3", "mxfp6-e3m2")
    ],
    ("/precision/kv_cache", "fp4"),
    ("/metrics/energy/window_s", 600.0),
    ("/metrics/energy/method", "SPEC PTDaemon 1.10, Yokogawa WT333E"),
    ("/provenance/origin/mapped_benchmark", "llama2-70b-99"),
    ("/provenance/origin/rules_source", "mlcommons/inference@abc:tools/submission/submission_checker/constants.py"),
    (
        "/provenance/origin/derivation",
        {
            "kind": "mlperf-inferred",
            "rule": "Offline inferred from SingleStream: 1000 ÷ the 90th percentile latency (ms)",
            "from_scenario": "SingleStream",
            "from_location": "closed/Acme/results/box/resnet/singlestream",
            "from_digest": DIGEST,
        },
    ),
]
TRAINING_ADDITIONS_1_1: list[tuple[str, Any]] = [
    ("/metrics/time_to_quality/scaling_factor", 1.1),
    ("/metrics/time_to_quality/unscaled_seconds", 1000.0),
    ("/provenance/origin/runs/0/quality", 0.759),
]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def put(doc: dict[str, Any], pointer: str, value: Any) -> dict[str, Any]:
    """A copy of `doc` with `value` at `pointer` (objects created on the way; list items must exist)."""
    out = copy.deepcopy(doc)
    node: Any = out
    parts = pointer.split("/")[1:]
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[int(part)]
            continue
        if not isinstance(node.get(part), dict | list):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value
    return out


def quantized(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with a quantization block, so quantized weights are described."""
    return put(doc, "/precision/quantization", {"method": "w4a8", "granularity": "per-block"})


def mlperf_origin(doc: dict[str, Any], kind: str = "mlperf-inference") -> dict[str, Any]:
    return put(doc, "/provenance/origin", {"kind": kind, "round": "v5.1", "submitter": "Acme"})


def time_to_quality(doc: dict[str, Any]) -> dict[str, Any]:
    """The training example as an MLPerf time-to-quality run with one scored run."""
    doc = put(
        doc, "/scenario", {"kind": "time-to-quality", "quality_target": {"metric": "eval_accuracy", "value": 0.72}}
    )
    doc = put(doc, "/metrics/time_to_quality", {"seconds": 1100.0, "runs": 1})
    doc["metrics"]["primary"] = "time_to_quality.seconds"
    doc = mlperf_origin(doc, "mlperf-training")
    return put(doc, "/provenance/origin/runs", [{"file": "result_0.txt", "seconds": 1000.0, "used": True}])


def declaring(doc: dict[str, Any], version: str) -> dict[str, Any]:
    return {**doc, "protocol": f"{rules.PROTOCOL_NAME}/{version}"}


# ------------------------------------------------------------------------------------------------ the freeze


def test_the_1_0_schema_is_frozen_byte_for_byte() -> None:
    assert _sha256(FROZEN_SCHEMA_FILES["1.0"]) == FROZEN_1_0_SHA256
    assert minor_schema("1.0")["$id"] == "https://benchreg.dev/protocol/submission/1.0/schema.json"


def test_the_1_1_schema_is_frozen_byte_for_byte() -> None:
    assert _sha256(FROZEN_SCHEMA_FILES["1.1"]) == FROZEN_1_1_SHA256
    assert minor_schema("1.1")["$id"] == "https://benchreg.dev/protocol/submission/1.1/schema.json"


def test_the_1_2_schema_is_frozen_byte_for_byte() -> None:
    assert _sha256(FROZEN_SCHEMA_FILES["1.2"]) == FROZEN_1_2_SHA256
    assert minor_schema("1.2")["$id"] == "https://benchreg.dev/protocol/submission/1.2/schema.json"


def test_the_live_schema_is_the_newest_minor() -> None:
    schema = submission_schema()
    assert rules.PROTOCOL_VERSION_LATEST == "1.3" == known_minors()[-1]
    assert known_minors() == ("1.0", "1.1", "1.2", "1.3")
    assert schema["$id"] == "https://benchreg.dev/protocol/submission/1.3/schema.json"
    assert schema["title"].endswith("protocol 1.3")
    assert rules.PROTOCOL_VERSION == "1.0"  # what the bundled runners write: their documents use nothing of 1.1


def _only_adds(old: Any, new: Any, where: str) -> list[str]:
    """Where `new` narrows, drops or retypes something of `old` (descriptions, $id and title may change)."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key, value in old.items():
            if key in ("description", "$id", "title"):
                continue
            if key not in new:
                found.append(f"{where}/{key} dropped")
            elif key == "enum":
                found += [f"{where}/enum lost {v!r}" for v in value if v not in new[key]]
            elif key == "properties":
                found += [f"{where}/properties/{k} dropped" for k in value if k not in new[key]]
                found += [p for k in value if k in new[key] for p in _only_adds(value[k], new[key][k], f"{where}/{k}")]
            else:
                found += _only_adds(value, new[key], f"{where}/{key}")
        added_required = set(new.get("required", [])) - set(old.get("required", []))
        return found + [f"{where} now requires {name}" for name in sorted(added_required)]
    return [] if old == new else [f"{where}: {old!r} became {new!r}"]


@pytest.mark.parametrize(("old", "new"), [("1.0", "1.1"), ("1.1", "1.2"), ("1.2", "1.3"), ("1.0", "1.3")])
def test_each_minor_only_adds_to_the_one_before(old: str, new: str) -> None:
    assert _only_adds(minor_schema(old), minor_schema(new), "") == []


def test_the_comparison_of_schemas_would_see_a_narrowing() -> None:
    narrowed = copy.deepcopy(submission_schema())
    narrowed["$defs"]["format"]["enum"].remove("bf16")
    narrowed["properties"]["metrics"]["properties"]["energy"]["properties"]["joules"]["minimum"] = 1
    assert len(_only_adds(minor_schema("1.0"), narrowed, "")) == 2


def _pinned_examples() -> list[Path]:
    paths = sorted(EXAMPLES.glob("*.json"))
    shared = SHARED / "protocol" / "examples"
    return paths + (sorted(shared.glob("*.json")) if shared.exists() else [])


@pytest.mark.parametrize("path", _pinned_examples(), ids=lambda p: f"{p.parent.parent.parent.name}/{p.name}")
def test_every_1_0_example_keeps_its_digest_columns_and_keys(path: Path) -> None:
    """Computed by the 1.0 code before 1.1 existed (tests/protocol/data/protocol_1_0_examples.json)."""
    pinned = PINNED_1_0["examples"][path.name]
    document = json.loads(path.read_bytes())
    assert schema_errors(document, "1.0") == []
    checked = protocol.check(path.read_bytes())
    columns = checked.summary.columns()
    columns["started_at"] = columns["started_at"].isoformat() if columns["started_at"] else None
    assert checked.digest == pinned["digest"]
    # every column the 1.0 code derived keeps its value; columns added since (origin kind, figures per accelerator,
    # sweep id: docs/protocol.md §7) are new derived columns, not changes to these
    assert {name: columns[name] for name in pinned["columns"]} == pinned["columns"]
    assert set(pinned["columns"]) <= set(columns)
    # every axis the 1.0 code keyed keeps its key; an axis added since (scaling, contract 1.3) is a new key
    keys = cmp.comparability_keys(checked.document)
    assert {axis: keys[axis] for axis in pinned["comparability_keys"]} == pinned["comparability_keys"]
    assert set(keys) - set(pinned["comparability_keys"]) == {"scaling"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_documents())
def test_whatever_1_0_accepts_1_1_accepts_unchanged(body: bytes) -> None:
    try:
        document = protocol.parse_json(body)
    except protocol.Invalid:
        return
    if schema_errors(document, "1.0"):
        return
    assert schema_errors(document) == []
    assert [e for e in protocol.errors(document) if e.code == "needs-newer-minor"] == []


# ------------------------------------------------------------------------------- what 1.1 adds, and to whom


@pytest.mark.parametrize(("pointer", "value"), ADDITIONS_1_1, ids=lambda x: str(x)[:40])
def test_1_1_accepts_each_addition(pointer: str, value: Any) -> None:
    doc = declaring(put(mlperf_origin(quantized(load_example(SERVER))), pointer, value), "1.1")
    assert protocol.errors(doc) == []


@pytest.mark.parametrize(("pointer", "value"), TRAINING_ADDITIONS_1_1, ids=lambda x: str(x)[:40])
def test_1_1_accepts_each_training_addition(pointer: str, value: Any) -> None:
    doc = time_to_quality(load_example("training-h100-bf16"))
    doc = put(doc, "/metrics/time_to_quality/scaling_factor", 1.1)
    doc = put(doc, "/metrics/time_to_quality/unscaled_seconds", 1000.0)
    assert protocol.errors(declaring(put(doc, pointer, value), "1.1")) == []


@pytest.mark.parametrize(("pointer", "value"), ADDITIONS_1_1 + TRAINING_ADDITIONS_1_1, ids=lambda x: str(x)[:40])
def test_a_1_0_document_using_a_1_1_addition_is_refused_naming_it(pointer: str, value: Any) -> None:
    base = time_to_quality(load_example("training-h100-bf16")) if "time_to" in pointer or "runs" in pointer else None
    doc = put(base or mlperf_origin(quantized(load_example(SERVER))), pointer, value)
    assert doc["protocol"] == "benchreg.submission/1.0"
    found = protocol.errors(doc)
    assert [(e.pointer, e.code) for e in found] == [(pointer, "needs-newer-minor")]
    assert "protocol 1.1" in found[0].message and "declare benchreg.submission/1.1" in found[0].message


def test_the_refusal_names_the_value_or_the_field() -> None:
    doc = put(quantized(load_example(SERVER)), "/precision/weights", "fp4")
    doc = put(doc, "/metrics/energy/window_s", 600)
    words = {e.pointer: e.message for e in protocol.errors(doc)}
    assert words["/precision/weights"].startswith("'fp4' is a value of protocol 1.1 here, not of 1.0")
    assert words["/metrics/energy/window_s"].startswith("'window_s' is a field of protocol 1.1, not 1.0")


def test_a_1_0_document_with_a_1_1_field_and_a_real_error_gets_both() -> None:
    doc = put(load_example(SERVER), "/metrics/energy/window_s", -1)
    doc = put(doc, "/precision/weights", "fp5")
    found = {(e.pointer, e.code) for e in protocol.errors(doc)}
    assert found == {
        ("/metrics/energy/window_s", "needs-newer-minor"),
        ("/metrics/energy/window_s", "out-of-range"),
        ("/precision/weights", "not-allowed-value"),
    }


def test_an_invalid_derivation_in_a_1_0_document_is_refused_for_both_reasons() -> None:
    doc = put(mlperf_origin(load_example(SERVER)), "/provenance/origin/derivation", {"kind": "mlperf-inferred"})
    found = {(e.pointer, e.code) for e in protocol.errors(doc)}
    assert ("/provenance/origin/derivation", "needs-newer-minor") in found
    assert ("/provenance/origin/derivation/from_digest", "required") in found


@pytest.mark.parametrize("version", ["1.1", "1.2", "1.3", "1.10"])
def test_a_document_of_a_later_minor_is_not_held_to_1_0(version: str) -> None:
    doc = put(quantized(load_example(SERVER)), "/precision/weights", "nvfp4")
    doc = put(doc, "/precision/activations", "fp4-e2m1")
    assert protocol.errors(declaring(doc, version)) == []


def test_a_malformed_version_is_the_schemas_error_alone() -> None:
    doc = put(load_example(SERVER), "/metrics/energy/method", "meter")
    found = protocol.errors(declaring(doc, "1.x"))
    assert [(e.pointer, e.code) for e in found] == [("/protocol", "bad-format")]


# ----------------------------------------------------------------------------------- formats and consistency


def test_every_format_is_quantized_or_not_and_none_is_left_to_a_default() -> None:
    formats = set(submission_schema()["$defs"]["format"]["enum"])
    assert not rules.QUANTIZED_FORMATS & rules.UNQUANTIZED_FORMATS
    assert formats == rules.QUANTIZED_FORMATS | rules.UNQUANTIZED_FORMATS | {"unspecified"}
    assert {"fp4", "fp4-e2m1", "nvfp4", "mxfp4"} == rules.FP4_FORMATS
    assert {"fp6", "fp6-e2m3", "fp6-e3m2", "mxfp6-e2m3", "mxfp6-e3m2"} == rules.FP6_FORMATS


@pytest.mark.parametrize("weights", sorted(rules.FP4_FORMATS | rules.FP6_FORMATS))
def test_fp4_and_fp6_weights_must_say_how_they_were_quantized(weights: str) -> None:
    doc = declaring(put(load_example(SERVER), "/precision/weights", weights), "1.1")
    assert [(e.pointer, e.code) for e in protocol.errors(doc)] == [("/precision/quantization", "quantization-missing")]
    assert protocol.errors(quantized(doc)) == []


@pytest.mark.parametrize(
    ("seconds", "ok"),
    [(1100.0, True), (1100.4, True), (1110.0, True), (1000.0, False), (1125.0, False)],
)
def test_the_published_time_is_the_unscaled_time_times_the_factor(seconds: float, ok: bool) -> None:
    doc = time_to_quality(load_example("training-h100-bf16"))
    doc = put(doc, "/metrics/time_to_quality/scaling_factor", 1.1)
    doc = put(doc, "/metrics/time_to_quality/unscaled_seconds", 1000.0)
    doc = declaring(put(doc, "/metrics/time_to_quality/seconds", seconds), "1.1")
    found = [(e.pointer, e.code) for e in protocol.errors(doc)]
    assert found == ([] if ok else [("/metrics/time_to_quality/seconds", "inconsistent-derived-value")])


def test_a_scaling_factor_must_be_positive() -> None:
    doc = time_to_quality(load_example("training-h100-bf16"))
    doc = declaring(put(doc, "/metrics/time_to_quality/scaling_factor", 0), "1.1")
    found = protocol.errors(doc)
    assert [(e.pointer, e.code) for e in found] == [("/metrics/time_to_quality/scaling_factor", "out-of-range")]
    assert "must be above 0" in found[0].message


@pytest.mark.parametrize("version", known_minors())
def test_validating_leaves_each_loaded_schema_as_its_file_says(version: str) -> None:
    """Validating (the fast validator reads a translated copy) leaves the schema served to clients as its file says."""
    protocol.check(load_example(SERVER))
    schema_errors(declaring(load_example(SERVER), version), version)
    path = FROZEN_SCHEMA_FILES.get(version) or Path(protocol.__file__).parent / "schemas" / "submission.v1.schema.json"
    assert minor_schema(version) == json.loads(path.read_text())
