"""The comparability contract: table-driven per axis, properties (symmetry, controlled/disclosed), compare()."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import canonical, rules
from protocol import comparability as cmp
from protocol.comparability import roles
from protocol.schema import submission_schema

EXAMPLES = Path(__file__).resolve().parents[2] / "protocol" / "examples"
SERVER, OFFLINE, TRAINING = "inference-server-h100-bf16", "inference-offline-cpu-int8", "training-h100-bf16"
Doc = dict[str, Any]


def example(name: str) -> Doc:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


def set_at(doc: Doc, pointer: str, value: Any) -> Doc:
    """A copy of doc with `value` at `pointer`, creating objects on the way (None deletes nothing: it nulls)."""
    out = copy.deepcopy(doc)
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    node: Any = out
    for part in parts[:-1]:
        key: Any = int(part) if isinstance(node, list) else part
        if not isinstance(node, list) and not isinstance(node.get(key), dict | list):
            node[key] = {}
        node = node[key]
    node[int(parts[-1]) if isinstance(node, list) else parts[-1]] = value
    return out


def get_at(doc: Doc, pointer: str) -> Any:
    node: Any = doc
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if node is None:
            return None
        node = node[int(part)] if isinstance(node, list) else node.get(part)
    return node


def changed(value: Any, pointer: str = "") -> Any:
    """A value certainly different from `value` in canonical form (and in the compared major, for /protocol)."""
    if pointer == "/protocol":
        return "benchreg.submission/2.0"
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value * 2 + 1
    if isinstance(value, list):
        return [*value, "extra"]
    return f"{value}-changed"


def words(diffs: tuple[cmp.FieldDifference, ...]) -> list[str]:
    return [d.words for d in diffs]


def int8(doc: Doc) -> Doc:
    doc = set_at(doc, "/precision/weights", "int8")
    return set_at(doc, "/precision/quantization", {"method": "dynamic", "granularity": "per-channel"})


# ------------------------------------------------------------------------------------------ the contract


def test_the_contract_is_versioned_data_tied_to_protocol_major_1() -> None:
    data = cmp.contract_document()
    assert data["$id"].startswith("https://") and data["version"] == cmp.contract().version == "1.3"
    assert data["protocol"] == f"{rules.PROTOCOL_NAME}/{rules.PROTOCOL_VERSION.split('.')[0]}"
    assert data["default_axis"] == "system" and set(data["axes"]) == {
        "system",
        "software",
        "precision",
        "iso-quality",
        "scaling",
    }


def test_every_group_has_a_role_and_a_label_on_every_axis() -> None:
    c = cmp.contract()
    for group in c.groups:
        assert group.label and group.pointers
        assert {axis for axis, _ in group.roles} == set(c.axes)
        assert all(role in cmp.ROLES for _, role in group.roles)
    assert all(reason for _, reason in c.ignored)


def test_metric_directions_agree_with_the_protocol_rules() -> None:
    c = cmp.contract()
    for metric, _ in c.directions:
        if metric in (*rules.DISTRIBUTION_METRICS, *rules.RATE_METRICS, "time_to_quality"):
            assert c.lower_is_better(metric) == (metric in rules.LOWER_IS_BETTER), metric


def schema_pointers(node: dict[str, Any], defs: dict[str, Any], path: str = "") -> list[str]:
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[1]]
    for branch in node.get("anyOf", []):
        if "$ref" in branch:
            node = defs[branch["$ref"].rsplit("/", 1)[1]]
    if node.get("type") == "array" or (isinstance(node.get("type"), list) and "array" in node["type"]):
        items = node.get("items", {})
        return schema_pointers(items, defs, path + "/0") if "properties" in items or "$ref" in items else [path]
    props = node.get("properties")
    if not props:
        return [path]
    return [p for name, child in props.items() for p in schema_pointers(child, defs, f"{path}/{name}")]


# Fields of the live protocol that the contract does not name, so they take its unlisted role (disclosed). A changed
# contract is a new contract version with a migration that freezes it (tests/registry/test_migrations.py). Contract 1.3
# named the last ones (provenance.artifacts: ignored, files kept beside a run).
UNNAMED_BY_CONTRACT: set[str] = set()


def test_every_field_of_the_submission_schema_has_a_role_on_every_axis() -> None:
    schema = submission_schema()
    pointers = schema_pointers(schema, schema["$defs"])
    assert len(pointers) > 150
    c = cmp.contract()
    for axis in c.axes:
        for pointer in pointers:
            doc = set_at({"metrics": {"primary": "throughput"}}, pointer, "x")
            role = cmp.field_roles(doc, axis).get(pointer)
            assert role in (*cmp.ROLES, "ignored"), (axis, pointer)
            # Nothing falls through to the catch-all: each field is named by the contract (1.2 names what protocol
            # 1.2 added; 1.1 left the request shape to the unlisted role), but for what a later protocol minor added
            # that the contract cannot name without a version of its own (UNNAMED_BY_CONTRACT).
            governed = roles.governing(roles.split_pointer(pointer), roles.rules_for([doc]))
            assert governed is not None or pointer in UNNAMED_BY_CONTRACT, (axis, pointer)
            if pointer in UNNAMED_BY_CONTRACT:
                assert governed is None and role == c.unlisted_role, (axis, pointer)


def test_the_examples_have_no_subject_or_controlled_field_left_unexplained() -> None:
    for name in (SERVER, OFFLINE, TRAINING):
        roles = cmp.field_roles(example(name))
        assert roles["/precision/weights"] == "controlled" and roles["/system/name"] == "subject"
        assert roles["/software/driver/version" if name != OFFLINE else "/software/os/kernel"] == "disclosed"
        assert roles["/provenance/submitter"] == "ignored" and roles["/metrics/throughput/value"] == "ignored"


# ---------------------------------------------------------------------------------- table-driven per axis

Mutation = Callable[[Doc], Doc]
CASES: list[tuple[str, str, str, Mutation, bool, dict[str, list[str]]]] = [
    # (case, example, axis, mutation of the second run, comparable, {role: expected words})
    (
        "int8 vs bf16 is refused",
        SERVER,
        "system",
        int8,
        False,
        {"refusals": ["precision.weights: bf16 vs int8", "precision.quantization.method: not stated vs dynamic"]},
    ),
    (
        "training vs inference is refused",
        SERVER,
        "system",
        lambda d: example(TRAINING),
        False,
        {"refusals": ["phase: inference vs training", "scenario.kind: server vs fixed-steps"]},
    ),
    (
        "peak vs steady state is refused",
        SERVER,
        "system",
        lambda d: set_at(
            set_at(d, "/conditions/steady_state/reached", False), "/conditions/steady_state/reasons", ["trend"]
        ),
        False,
        {
            "refusals": ["conditions.steady_state.reached: yes vs no"],
            "disclosures": ["conditions.steady_state.reasons: not stated vs trend"],
        },
    ),
    (
        "a driver version is only disclosed on the system axis",
        SERVER,
        "system",
        lambda d: set_at(d, "/software/driver/version", "590.1"),
        True,
        {"disclosures": ["software.driver.version: 580.159.04 vs 590.1"]},
    ),
    (
        "another accelerator is the subject on the system axis",
        SERVER,
        "system",
        lambda d: set_at(set_at(d, "/system/accelerators/0/model", "H200 141GB HBM3e"), "/system/name", "lab-h200"),
        True,
        {
            "subjects": [
                "system.accelerators[0].model: H100 80GB HBM3 vs H200 141GB HBM3e",
                "system.name: lab-h100-01 vs lab-h200",
            ]
        },
    ),
    (
        "a power limit is disclosed, not the subject",
        SERVER,
        "system",
        lambda d: set_at(d, "/system/accelerators/0/power_limit_w", 500),
        True,
        {"disclosures": ["system.accelerators[0].power_limit_w: 700 vs 500"]},
    ),
    (
        "another batch size is refused",
        SERVER,
        "system",
        lambda d: set_at(d, "/workload/shape/batch_size", 16),
        False,
        {"refusals": ["workload.shape.batch_size: 8 vs 16"]},
    ),
    (
        "another offered load is refused",
        SERVER,
        "system",
        lambda d: set_at(d, "/scenario/target_qps", 40.0),
        False,
        {"refusals": ["scenario.target_qps: 20 vs 40"]},
    ),
    (
        "another headline unit is refused",
        TRAINING,
        "system",
        lambda d: set_at(d, "/metrics/throughput/unit", "tokens/s"),
        False,
        {"refusals": ["metrics.throughput.unit: samples/s vs tokens/s"]},
    ),
    (
        "another protocol major is refused",
        SERVER,
        "system",
        lambda d: set_at(d, "/protocol", "benchreg.submission/2.0"),
        False,
        {"refusals": ["protocol: benchreg.submission/1 vs benchreg.submission/2"]},
    ),
    (
        "another protocol minor is comparable",
        SERVER,
        "system",
        lambda d: set_at(d, "/protocol", "benchreg.submission/1.3"),
        True,
        {},
    ),
    (
        "a model checkpoint and a seed are disclosed",
        SERVER,
        "system",
        lambda d: set_at(set_at(d, "/workload/model/digest", None), "/workload/dataset/seed", 7),
        True,
        {
            "disclosures": [
                "workload.dataset.seed: 1234 vs 7",
                "workload.model.digest: sha256:" + "3f" * 32 + " vs not stated",
            ]
        },
    ),
    (
        "bookkeeping and measured values play no part",
        SERVER,
        "system",
        lambda d: set_at(set_at(d, "/provenance/submitter", "lab-9"), "/metrics/throughput/value", 1.0),
        True,
        {},
    ),
    (
        "on the software axis another system is refused",
        SERVER,
        "software",
        lambda d: set_at(d, "/system/accelerators/0/model", "H200 141GB HBM3e"),
        False,
        {"refusals": ["system.accelerators[0].model: H100 80GB HBM3 vs H200 141GB HBM3e"]},
    ),
    (
        "on the software axis the driver is the subject",
        SERVER,
        "software",
        lambda d: set_at(d, "/software/driver/version", "590.1"),
        True,
        {"subjects": ["software.driver.version: 580.159.04 vs 590.1"]},
    ),
    (
        "on the software axis a twin machine is disclosed",
        SERVER,
        "software",
        lambda d: set_at(d, "/system/name", "lab-h100-02"),
        True,
        {"disclosures": ["system.name: lab-h100-01 vs lab-h100-02"]},
    ),
    (
        "on the software axis precision stays controlled",
        SERVER,
        "software",
        int8,
        False,
        {"refusals": ["precision.weights: bf16 vs int8"]},
    ),
    (
        "on the precision axis int8 vs bf16 is the subject",
        SERVER,
        "precision",
        int8,
        True,
        {"subjects": ["precision.weights: bf16 vs int8"]},
    ),
    (
        "on the precision axis quality is required",
        SERVER,
        "precision",
        lambda d: set_at(int8(d), "/metrics/quality", None),
        False,
        {
            "requirements": [
                "metrics.quality.value: 0.997 vs missing (required on the precision axis: a faster "
                "number format is only a gain if quality holds, so every run must report its measured "
                "quality)"
            ]
        },
    ),
    (
        "on the precision axis quality must be measured the same way",
        SERVER,
        "precision",
        lambda d: set_at(int8(d), "/metrics/quality/metric", "rouge-l"),
        False,
        {"refusals": ["metrics.quality.metric: token-agreement-vs-fp32 vs rouge-l"]},
    ),
    (
        "on the precision axis the system stays controlled",
        OFFLINE,
        "precision",
        lambda d: set_at(d, "/system/host/cores", 4),
        False,
        {"refusals": ["system.host.cores: 2 vs 4"]},
    ),
]


@pytest.mark.parametrize(("case", "name", "axis", "mutate", "comparable", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_contract_per_axis(
    case: str, name: str, axis: str, mutate: Mutation, comparable: bool, expected: dict[str, list[str]]
) -> None:
    base = example(name)
    verdict = cmp.check([base, mutate(copy.deepcopy(base))], axis)
    assert verdict.comparable is comparable, words(verdict.offending)
    found = {
        "refusals": words(verdict.refusals),
        "disclosures": words(verdict.disclosures),
        "subjects": words(verdict.subject_differences),
        "requirements": words(verdict.requirement_failures),
    }
    for role, lines in expected.items():
        for line in lines:
            assert line in found[role], (role, found[role])
    if comparable:
        assert not verdict.refusals and not verdict.requirement_failures


def test_identical_runs_are_comparable_with_nothing_to_disclose() -> None:
    for name in (SERVER, OFFLINE, TRAINING):
        verdict = cmp.check([example(name), example(name)])
        assert verdict.comparable and not verdict.disclosures and not verdict.subject_differences


def test_a_refusal_names_pointer_role_label_and_each_runs_value() -> None:
    verdict = cmp.check([example(SERVER), int8(example(SERVER))])
    diff = next(d for d in verdict.refusals if d.pointer == "/precision/weights")
    assert diff.as_dict() == {
        "pointer": "/precision/weights",
        "field": "precision.weights",
        "group": "precision",
        "label": cmp.contract().groups[9].label,
        "role": "controlled",
        "values": ["bf16", "int8"],
        "words": "precision.weights: bf16 vs int8",
    }


def test_three_runs_are_described_by_value_with_their_run_numbers() -> None:
    a = example(SERVER)
    verdict = cmp.check([a, a, int8(a)])
    assert "precision.weights: bf16 (runs 1, 2) vs int8 (run 3)" in words(verdict.refusals)


def test_absent_null_and_empty_are_the_same_not_stated() -> None:
    a = example(SERVER)
    b = copy.deepcopy(a)
    del b["precision"]["quantization"]
    b["software"]["container"] = None
    b["conditions"]["steady_state"]["reasons"] = []
    verdict = cmp.check([a, b])
    assert verdict.comparable and not verdict.disclosures


def test_numbers_compare_by_canonical_value_so_booleans_are_not_numbers() -> None:
    a = example(SERVER)
    assert cmp.check([a, set_at(a, "/scenario/target_qps", 20)]).comparable
    flagged = cmp.check([set_at(a, "/scenario/concurrency", 1), set_at(a, "/scenario/concurrency", True)])
    assert not flagged.comparable


def test_unknown_axis_and_too_few_runs_are_clear_errors() -> None:
    with pytest.raises(cmp.ComparabilityError, match=r"unknown axis 'vendor'.*system, software, precision"):
        cmp.check([example(SERVER), example(SERVER)], "vendor")
    with pytest.raises(cmp.ComparabilityError, match="at least 2 runs, got 1"):
        cmp.check([example(SERVER)])
    with pytest.raises(cmp.ComparabilityError):
        cmp.comparability_key(example(SERVER), "vendor")


def test_the_key_is_a_digest_of_the_controlled_projection_and_contract_version() -> None:
    a = example(SERVER)
    key = cmp.comparability_key(a)
    # "1.1": contract 1.2 changed no field this run states, so its key is the one 1.1 gave it (the keys' version)
    expected = canonical.digest({"contract": "1.1", "axis": "system", "controlled": cmp.controlled_projection(a)})
    assert key == expected and key.startswith("sha256:")
    assert cmp.controlled_projection(a)["/protocol"] == "benchreg.submission/1"
    assert "/system/name" not in cmp.controlled_projection(a)
    assert "/system/name" not in cmp.controlled_projection(a, "software")
    assert "/system/host/cores" in cmp.controlled_projection(a, "software")
    assert cmp.comparability_key(set_at(a, "/software/driver/version", "1")) == key
    assert cmp.comparability_key(int8(a)) != key
    assert cmp.comparability_key(a, "software") != key


# --------------------------------------------------------------------------------------------- properties


def _leaves_with_role(doc: Doc, axis: str, role: str) -> list[str]:
    return [p for p, r in cmp.field_roles(doc, axis).items() if r == role]


examples = st.sampled_from([SERVER, OFFLINE, TRAINING])
axes = st.sampled_from(["system", "software", "precision"])
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutated(draw: st.DrawFn, doc: Doc, axis: str, role: str | None = None) -> Doc:
    """doc with 0-3 of its stated leaves changed or removed (only leaves of `role`, if given)."""
    roles = cmp.field_roles(doc, axis)
    pointers = sorted(p for p, r in roles.items() if role is None or r == role)
    for pointer in draw(st.lists(st.sampled_from(pointers), max_size=3, unique=True)):
        remove = draw(st.booleans())
        doc = set_at(doc, pointer, None if remove else changed(get_at(doc, pointer), pointer))
    return doc


def _shape(verdict: cmp.Verdict, reverse: bool) -> set[tuple[str, str, tuple[str, ...]]]:
    diffs = verdict.refusals + verdict.disclosures + verdict.subject_differences + verdict.requirement_failures
    return {(d.pointer, d.role, d.values[::-1] if reverse else d.values) for d in diffs}


@FAST
@given(data=st.data(), name=examples, axis=axes)
def test_comparability_is_symmetric(data: st.DataObject, name: str, axis: str) -> None:
    a = data.draw(mutated(example(name), axis))
    b = data.draw(mutated(example(name), axis))
    ab, ba = cmp.check([a, b], axis), cmp.check([b, a], axis)
    assert ab.comparable == ba.comparable
    assert _shape(ab, reverse=False) == _shape(ba, reverse=True)


@FAST
@given(data=st.data(), name=examples, axis=axes)
def test_changing_any_controlled_field_refuses(data: st.DataObject, name: str, axis: str) -> None:
    base = example(name)
    stated = _leaves_with_role(base, axis, "controlled")
    # Fields the contract names that this run leaves unstated count too: stating one is a change.
    # (A group for runs with another headline, e.g. the time to train's method, does not govern this run.)
    headline = base["metrics"]["primary"].partition(".")[0]
    named = [
        p
        for g in cmp.contract().groups
        if g.role(axis) == "controlled" and g.primary in (None, headline)
        for p in g.pointers
        if "{" not in p and "*" not in p and get_at(base, p) is None
    ]
    pointer = data.draw(st.sampled_from(sorted(set(stated) | set(named))))
    value = get_at(base, pointer)
    new = data.draw(st.sampled_from([changed(value, pointer), None] if value is not None else ["stated"]))
    verdict = cmp.check([base, set_at(base, pointer, new)], axis)
    assert not verdict.comparable
    assert any(d.pointer == pointer or d.pointer.startswith(pointer + "/") for d in verdict.refusals)


@FAST
@given(data=st.data(), name=examples, axis=axes)
def test_changing_a_disclosed_field_adds_one_disclosure_and_nothing_else(
    data: st.DataObject, name: str, axis: str
) -> None:
    base = example(name)
    if axis == "precision" and name == TRAINING:
        base = set_at(base, "/metrics/quality", {"metric": "loss", "value": 3.27})
    pointer = data.draw(st.sampled_from(_leaves_with_role(base, axis, "disclosed")))
    new = data.draw(st.sampled_from([changed(get_at(base, pointer), pointer), None]))
    before = cmp.check([base, base], axis)
    after = cmp.check([base, set_at(base, pointer, new)], axis)
    assert after.comparable == before.comparable
    assert after.refusals == before.refusals and after.subject_differences == before.subject_differences
    assert after.requirement_failures == before.requirement_failures
    assert [d.pointer for d in after.disclosures] == [pointer]


@FAST
@given(data=st.data(), name=examples)
def test_equal_keys_exactly_when_comparable_on_the_default_axis(data: st.DataObject, name: str) -> None:
    a = data.draw(mutated(example(name), "system"))
    b = data.draw(mutated(example(name), "system"))
    same_key = cmp.comparability_key(a) == cmp.comparability_key(b)
    assert same_key == cmp.check([a, b]).comparable


@FAST
@given(data=st.data(), name=examples)
def test_the_keys_of_every_axis_at_once_are_each_axis_key(data: st.DataObject, name: str) -> None:
    """comparability_keys (the ingest path's, with its per-path memo) equals comparability_key axis by axis, for
    runs with fields changed, removed or added where the contract names none (the unlisted role)."""
    doc = data.draw(mutated(example(name), data.draw(axes)))
    if data.draw(st.booleans()):
        doc = set_at(doc, "/system/notes_unlisted_" + data.draw(st.sampled_from(["a", "b~c", "d/e"])), "x")
    keys = cmp.comparability_keys(doc)
    assert keys == {axis: cmp.comparability_key(doc, axis) for axis in cmp.contract().axes}
    assert cmp.comparability_keys(doc) == keys  # the second time from the memo


@pytest.mark.parametrize(
    ("pointer", "value"),
    [
        ("/system/accelerators/0/memory_gb", 80.0),  # an integral float: printed as 80
        ("/system/accelerators/0/memory_gb", 1e-05),  # a float printed in full only by the reference
        ("/system/notes_unlisted_é", "x"),  # a pointer beyond ASCII: ordered by UTF-16 units
        ("/system/notes_unlisted", "\ud800"),  # a lone surrogate: the reference decides
        ("/system/notes_unlisted", [1.5, 2.0, "b"]),
    ],
)
def test_the_keys_of_every_axis_at_once_take_the_reference_where_values_need_it(pointer: str, value: Any) -> None:
    """comparability_keys makes each leaf canonical as it reads it; where a value or pointer is outside that fast
    subset it must still give each axis's key as comparability_key (the canonical form's own path) does."""
    doc = set_at(example("inference-server-h100-bf16"), pointer, value)
    expected = {}
    for axis in cmp.contract().axes:
        try:
            expected[axis] = cmp.comparability_key(doc, axis)
        except Exception as exc:  # a value the canonical form refuses: refused the same way at once
            with pytest.raises(type(exc)):
                cmp.comparability_keys(doc)
            return
    assert cmp.comparability_keys(doc) == expected


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=examples, axis=axes)
def test_the_verdict_does_not_depend_on_run_order(data: st.DataObject, name: str, axis: str) -> None:
    runs = [data.draw(mutated(example(name), axis)) for _ in range(3)]
    order = data.draw(st.permutations(range(3)))
    one, two = cmp.check(runs, axis), cmp.check([runs[i] for i in order], axis)
    assert one.comparable == two.comparable
    sets = [{(d.pointer, d.role, frozenset(d.values)) for d in v.refusals + v.disclosures} for v in (one, two)]
    assert sets[0] == sets[1]


# ----------------------------------------------------------------------------------------------- compare()


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def test_compare_returns_a_stored_result_that_names_its_methods() -> None:
    a = example(SERVER)
    b = set_at(
        set_at(set_at(a, "/system/name", "lab-h100-02"), "/software/driver/version", "590.1"),
        "/system/accelerators/0/model",
        "H100 NVL",
    )
    result = cmp.compare(
        [a, b],
        "system",
        prices={"lab-h100-01": 4.0, "lab-h100-02": 3.0},
        sizing={
            "target_load": 100,
            "load_unit": "requests/s",
            "latency_objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 500}],
        },
    )
    json.dumps(result, allow_nan=False)
    assert _finite(result)
    assert result["comparable"] and result["contract"]["version"] == "1.3" and result["axis"] == "system"
    assert {"estimate", "tail_percentile", "calibration", "ratio", "distinguishable", "time_to_quality"} <= set(
        result["methods"]
    )
    assert [d["words"] for d in result["disclosures"]] == ["software.driver.version: 580.159.04 vs 590.1"]
    assert len(result["arms"]) == 2 and len(result["pairwise"]) == 1
    pair = result["pairwise"][0]
    assert pair["ratio"] == 1.0 and pair["distinguishable"] is None and pair["outcome"] == "unknown"
    assert pair["verdict"] == "not-enough-evidence" and pair["statement"].startswith("Not enough evidence: ")
    assert "H100 NVL delivers 1.00× H100 80GB HBM3's throughput (no interval)" in pair["statement"]
    assert result["conclusion"]["outcome"] == "not-enough-evidence" and result["conclusion"]["focus"] == [0, 1]
    energy, cost = result["arms"][1]["derived"]
    assert energy["derived"] and energy["unit"] == "J/token" and cost["unit"] == "USD per million tokens"
    assert result["arms"][0]["sizing"]["replicas"] == 6
    assert any(c["code"] == "offered-load-throughput" for c in result["caveats"])
    assert result["assumptions"][0]["per_system_hour"] == {"lab-h100-01": 4.0, "lab-h100-02": 3.0}
    assert canonical.digest(result) == canonical.digest(
        cmp.compare(
            [a, b],
            "system",
            prices={"lab-h100-01": 4.0, "lab-h100-02": 3.0},
            sizing={
                "target_load": 100,
                "load_unit": "requests/s",
                "latency_objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 500}],
            },
        )
    )


def test_compare_of_incomparable_runs_lists_why_and_computes_nothing() -> None:
    result = cmp.compare([example(SERVER), int8(example(SERVER))])
    assert not result["comparable"] and result["arms"] == [] and result["pairwise"] == []
    assert "precision.weights: bf16 vs int8" in [d["words"] for d in result["verdict"]["refusals"]]
    json.dumps(result, allow_nan=False)


def test_repetitions_of_one_configuration_form_one_arm() -> None:
    a = example(TRAINING)
    b = set_at(set_at(a, "/metrics/throughput/value", 2500.0), "/provenance/started_at", "2026-11-21T12:00:00Z")
    result = cmp.compare([a, b])
    assert [arm["runs"] for arm in result["arms"]] == [[0, 1]] and result["pairwise"] == []
    assert result["arms"][0]["estimate"]["value"] == pytest.approx(math.sqrt(2560.0 * 2500.0), rel=1e-5)
    assert "headline values of 2 runs" in result["arms"][0]["estimate"]["method"]
    assert result["arms"][0]["estimate"]["evidence"].startswith("2 independent values (runs)")
    assert result["conclusion"]["outcome"] == "single-configuration"
    assert any(c["code"] == "single-configuration" for c in result["caveats"])


def test_compare_on_the_precision_axis_shows_quality_beside_speed() -> None:
    a = example(SERVER)
    b = set_at(set_at(int8(a), "/metrics/quality/value", 0.981), "/metrics/throughput/value", 1900.0)
    result = cmp.compare([a, b], "precision")
    assert result["comparable"] and [r["quality"]["value"] for r in result["runs"]] == [0.997, 0.981]
    # each field in words, never its path: "per-channel granularity", "int8 weights"
    assert result["arms"][1]["label"] == "per-channel granularity, dynamic quantization, int8 weights"


def test_arms_read_alike_only_when_they_are_alike_labels_name_what_differs() -> None:
    a = example(SERVER)
    b = set_at(a, "/system/host/cpu_model", "Intel Xeon 8480+")  # same accelerator, another host CPU
    c = set_at(set_at(a, "/system/accelerators/0/count", 8), "/system/name", "lab-big")
    result = cmp.compare([a, b, c])
    labels = [arm["label"] for arm in result["arms"]]
    assert labels == [
        "1× H100 80GB HBM3, CPU AMD EPYC 9454 48-Core Processor",  # counts differ: each is shown
        "1× H100 80GB HBM3, CPU Intel Xeon 8480+",
        "8× H100 80GB HBM3",
    ]
    assert result["arms"][2]["configuration"]["system.accelerators[0].count"] == 8


def test_runs_on_one_system_whose_settings_differ_are_two_arms_on_every_axis_that_allows_them() -> None:
    """The demo's 1 and 2 BLAS threads on one machine were pooled on the system axis as "one configuration, 112
    samples/s", a value neither setting reached: settings are disclosed there, yet each setting is its own arm."""
    one = set_at(example(OFFLINE), "/software/settings", {"numpy.blas_threads": 1})
    one = set_at(one, "/metrics/throughput/value", 292.0)
    two = set_at(set_at(one, "/software/settings/numpy.blas_threads", 2), "/metrics/throughput/value", 43.0)
    for axis in ("system", "software", "iso-quality"):
        result = cmp.compare([one, two], axis, names=["run 5", "run 8"])
        assert [arm["runs"] for arm in result["arms"]] == [[0], [1]], axis
        assert [arm["estimate"]["value"] for arm in result["arms"]] == [292.0, 43.0], axis
        assert result["conclusion"]["outcome"] != "single-configuration", axis
    labels = [arm["label"] for arm in cmp.compare([one, two], "system")["arms"]]
    assert labels == [
        "CPU Intel(R) Xeon(R) Platinum 8480+, BLAS threads 1",
        "CPU Intel(R) Xeon(R) Platinum 8480+, BLAS threads 2",
    ]
    assert not any("(" in label.replace("(R)", "") for label in labels)  # never nested in a sentence's brackets


def test_repetitions_differing_only_in_notes_name_and_readings_are_one_arm() -> None:
    """What each run writes for itself (machine name, load average, power readings) is no configuration."""
    a = set_at(example(OFFLINE), "/system/notes", {"load_average_at_start": "0.10 0.20 0.30"})
    b = set_at(set_at(a, "/system/notes/load_average_at_start", "10.97 9.0 8.0"), "/system/name", "lab-cpu-04")
    b = set_at(set_at(b, "/software/notes", {"run": "second"}), "/conditions/power/limit_w", 200)
    assert cmp.configuration(a, "system") == cmp.configuration(b, "system")
    assert [arm["runs"] for arm in cmp.compare([a, b])["arms"]] == [[0, 1]]


def test_one_configuration_under_other_controlled_conditions_is_labelled_by_what_differs() -> None:
    """A decision groups runs across comparability keys: the same setup that never reached steady state is its
    own candidate, and its label names the controlled field (it read "H100 80GB HBM3, bf16 ()" and "() #2")."""
    steady = example(SERVER)
    unsteady = set_at(
        set_at(steady, "/conditions/steady_state/reached", False), "/conditions/steady_state/reasons", ["still warming"]
    )
    configs = [cmp.configuration(d, "iso-quality") for d in (steady, unsteady)]
    assert configs[0] == configs[1]
    assert cmp.arm_labels([steady, unsteady], "iso-quality", configs) == [
        "H100 80GB HBM3, bf16, steady state reached",
        "H100 80GB HBM3, bf16, steady state not reached",
    ]


def test_arms_alike_after_their_settings_are_told_apart_by_their_controlled_conditions() -> None:
    """Three candidates with one base label: the batch size tells one apart, but two share it and differ only in
    steady state. Those two read "(batch_size=8)" and "(batch_size=8) #2" in the demo's decision before."""
    steady = set_at(example(SERVER), "/workload/shape/batch_size", 8)
    unsteady = set_at(
        set_at(steady, "/conditions/steady_state/reached", False), "/conditions/steady_state/reasons", ["still warming"]
    )
    bigger = set_at(steady, "/workload/shape/batch_size", 16)
    docs = [steady, unsteady, bigger]
    labels = cmp.arm_labels(docs, "iso-quality", [cmp.configuration(d, "iso-quality") for d in docs])
    assert labels == [
        "H100 80GB HBM3, bf16, batch 8, steady state reached",
        "H100 80GB HBM3, bf16, batch 8, steady state not reached",
        "H100 80GB HBM3, bf16, batch 16",
    ]


def test_a_cpu_system_is_labelled_by_its_cpu_model() -> None:
    a = example(OFFLINE)
    b = set_at(a, "/system/host/cpu_model", "AMD EPYC 9654")
    labels = [arm["label"] for arm in cmp.compare([a, b])["arms"]]
    assert labels == ["CPU Intel(R) Xeon(R) Platinum 8480+", "CPU AMD EPYC 9654"]


def test_an_overloaded_or_invalid_run_makes_every_verdict_about_its_arm_inconclusive() -> None:
    a = example(SERVER)
    a["conditions"]["validity"] = {"valid": False, "checks": {"kept_up_with_arrivals": False}}
    b = set_at(a, "/system/accelerators/0/model", "H200")
    b["conditions"]["validity"] = {"valid": False, "checks": {"min_duration": False}}
    result = cmp.compare([a, b], names=["run 7", "run 9"])
    codes = [(r["code"], r["run"]) for r in result["conclusion"]["reasons"]]
    assert codes == [("overloaded", 0), ("invalid", 1)]
    assert result["conclusion"]["statement"].startswith("Inconclusive: run 7 was overloaded; run 9 failed its validity")
    messages = [r["message"] for r in result["conclusion"]["reasons"]]
    assert "run 9 (H200) failed its validity checks (min_duration)" in messages


def test_a_baseline_that_is_not_a_run_is_refused() -> None:
    with pytest.raises(cmp.ComparabilityError, match="baseline"):
        cmp.compare([example(SERVER), example(SERVER)], baseline=2)


def test_fourteen_runs_of_three_accelerator_models_are_three_arms_not_one_per_machine_name() -> None:
    runs = []
    for i, model in enumerate(["H200"] * 6 + ["H100 80GB HBM3"] * 5 + ["MI300X"] * 3):
        doc = set_at(set_at(example(SERVER), "/system/name", f"lab-{i:02d}"), "/system/accelerators/0/model", model)
        runs.append(set_at(doc, "/metrics/throughput/value", {"H200": 1500.0, "MI300X": 1400.0}.get(model, 1240.0) + i))
    result = cmp.compare(runs, baseline=6)  # the requester's baseline: an H100 run
    assert [(a["label"], len(a["runs"])) for a in result["arms"]] == [("H200", 6), ("H100 80GB HBM3", 5), ("MI300X", 3)]
    assert [(p["subject"], p["baseline"]) for p in result["pairwise"]] == [(0, 1), (2, 1)]
    conclusion = result["conclusion"]
    assert conclusion["baseline"] == 1 and conclusion["focus"] == [1, 0]
    assert conclusion["statement"].startswith("H200 delivers 1.20× H100 80GB HBM3's throughput (simultaneous 95% CI")
    assert result["pairwise"][0]["simultaneous"] == {"comparisons": 2, "confidence": 0.95}
    assert result["pairwise"][0]["confidence"] == 0.975


# ------------------------------------------------------------------------------ the order a refusal is said in


def _noted(doc: Doc, weights: str, note: str) -> Doc:
    """`doc` in another number format, with the submitter's free-text note on how it was quantized."""
    doc = set_at(doc, "/precision/weights", weights)
    return set_at(doc, "/precision/quantization", {"method": "static", "notes": note})


def test_a_refusal_names_the_precision_before_a_free_text_note() -> None:
    base = _noted(example(SERVER), "int8", "calibrated on 512 samples")
    other = _noted(example(SERVER), "fp8", "calibrated on 128 samples of the validation set")
    verdict = cmp.check([base, other], "system")
    said = [d.field for d in verdict.offending]
    # the note sorts before weights by path ('quantization' < 'weights'): the reason must not open with it
    assert said == ["precision.weights", "precision.quantization.notes"]
    assert [d.field for d in verdict.refusals] == said


def test_a_note_is_named_after_every_measurement_changing_difference_whatever_the_axis() -> None:
    base = example(SERVER)
    other = set_at(_noted(example(SERVER), "fp8", "kv cache kept in bf16"), "/workload/name", "another-model")
    for axis in ("system", "software"):
        fields = [d.field for d in cmp.check([base, other], axis).offending]
        assert fields[0] == "workload.name", fields
        assert fields[-1] == "precision.quantization.notes", fields
        assert fields.index("precision.weights") < fields.index("precision.quantization.notes")


def test_the_order_of_a_refusal_does_not_depend_on_the_order_of_the_runs() -> None:
    a = _noted(example(SERVER), "int8", "one note")
    b = _noted(example(SERVER), "fp8", "another note")
    forward = [d.field for d in cmp.check([a, b], "system").offending]
    backward = [d.field for d in cmp.check([b, a], "system").offending]
    assert forward == backward == ["precision.weights", "precision.quantization.notes"]
