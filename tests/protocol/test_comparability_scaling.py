"""Comparability contract 1.3: the scaling axis. Every field keeps, on the four earlier axes, the role contract 1.2
gave it (the size was split out of the system and scenario groups with their roles), so no earlier verdict or key
changes; on the scaling axis the size is the subject and what each device runs is controlled."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.documents import scaling_plan_documents
from protocol import comparability as cmp
from protocol import scaling
from protocol.comparability import roles
from protocol.schema import submission_schema
from tests.protocol.test_comparability import schema_pointers, set_at

EARLIER_AXES = ("system", "software", "precision", "iso-quality")


def _role_under(contract: dict[str, Any], pointer: str, axis: str, primary: str) -> str:
    """The role `contract` (a contract document) gives `pointer` on `axis`: the longest matching pointer's group."""
    path = roles.split_pointer(pointer)
    ignored = {roles.split_pointer(i["pointer"]) for i in contract["ignored"]}
    rules: dict[tuple[str, ...], str] = {p: "ignored" for p in ignored}
    for group in contract["groups"]:
        for p in group["pointers"]:
            rules[roles.split_pointer(p.replace("{primary}", primary))] = group["roles"][axis]
    for end in range(len(path), 0, -1):
        for pattern, role in rules.items():
            if len(pattern) == end and all(a in ("*", b) for a, b in zip(pattern, path[:end], strict=True)):
                return role
    return str(contract["unlisted_role"])


@pytest.mark.parametrize("primary", ["throughput", "time_to_quality"])
def test_every_field_keeps_its_1_2_role_on_the_earlier_axes(primary: str) -> None:
    old = cmp.contract_document("1.2")
    schema = submission_schema()
    pointers = schema_pointers(schema, schema["$defs"])
    changed = []
    for pointer in pointers:
        if pointer.startswith("/provenance/artifacts"):
            continue  # unnamed by 1.2 (its unlisted role, disclosed); 1.3 ignores it: see below
        for axis in EARLIER_AXES:
            doc = set_at({"metrics": {"primary": primary}}, pointer, "x")
            if cmp.field_roles(doc, axis).get(pointer) != _role_under(old, pointer, axis, primary):
                changed.append((axis, pointer))
    assert changed == []
    assert (
        cmp.field_roles(set_at({}, "/provenance/artifacts/0/name", "trace.json"))["/provenance/artifacts/0/name"]
        == "ignored"
    )


@pytest.mark.parametrize(
    ("pointer", "role"),
    [
        ("/system/accelerators/0/count", "subject"),
        ("/system/nodes", "subject"),
        ("/scenario/distributed/world_size", "subject"),
        ("/scenario/distributed/processes_per_node", "subject"),
        ("/scenario/distributed/global_batch", "subject"),
        ("/workload/shape/batch_size", "subject"),
        ("/system/accelerators/0/model", "controlled"),
        ("/scenario/distributed/per_device_batch", "subject"),  # strong scaling splits a fixed global batch
        ("/scenario/distributed/gradient_accumulation", "subject"),
        ("/workload/shape/micro_batch_size", "subject"),
        ("/scenario/distributed/parallelism", "controlled"),
        ("/scenario/distributed/backend/name", "controlled"),
        ("/scenario/distributed/backend/version", "controlled"),
        ("/scenario/distributed/scaling/mode", "controlled"),
        ("/scenario/distributed/scaling/id", "disclosed"),
        ("/software/frameworks/torch", "controlled"),
        ("/software/notes/sw_notes", "disclosed"),
        ("/precision/weights", "controlled"),
        ("/system/name", "disclosed"),
        ("/metrics/throughput/method", "controlled"),
    ],
)
def test_on_the_scaling_axis_the_size_is_the_subject(pointer: str, role: str) -> None:
    doc = set_at({"metrics": {"primary": "throughput"}}, pointer, 1 if pointer.endswith(("count", "size")) else "x")
    assert cmp.field_roles(doc, "scaling")[pointer] == role


def test_a_curve_against_a_base_of_two_devices_is_the_plans_efficiency_rescaled() -> None:
    docs = scaling_plan_documents("rebased", [1, 2, 4, 8])
    (plan,) = scaling.points(docs)
    by_size = {e.devices: e for e in scaling.efficiency(plan)}
    curve = scaling.curve([d for d in docs if d["scenario"]["distributed"]["world_size"] > 1])
    assert curve["base"]["devices"] == 2 and [s["devices"] for s in curve["sizes"]] == [2, 4, 8]
    for row in curve["sizes"][1:]:
        n = row["devices"]
        assert row["efficiency"] == pytest.approx(by_size[n].efficiency / by_size[2].efficiency, rel=1e-5)
        assert row["speedup"] == pytest.approx(by_size[n].speedup / by_size[2].speedup, rel=1e-5)
        assert row["ci_low"] < row["efficiency"] < row["ci_high"]


def test_a_time_to_train_curve_is_t_base_n_base_over_t_n_with_one_result_per_size() -> None:
    def result(devices: int, seconds: float) -> dict[str, Any]:
        return {
            "system": {"accelerators": [{"count": devices}], "nodes": devices // 8},
            "metrics": {"primary": "time_to_quality", "time_to_quality": {"seconds": seconds}},
            "provenance": {"origin": {"kind": "mlperf-training"}},
        }

    curve = scaling.curve([result(64, 100.0), result(8, 600.0), result(512, 20.0)])
    assert [s["devices"] for s in curve["sizes"]] == [8, 64, 512] and curve["base"]["devices"] == 8
    assert curve["sizes"][1]["efficiency"] == pytest.approx(600 * 8 / (100 * 64))
    assert curve["sizes"][2]["efficiency"] == pytest.approx(600 * 8 / (20 * 512))
    assert curve["sizes"][2]["value"] == 20.0 and curve["sizes"][2]["ci_low"] is None
    assert curve["interval"] == scaling.ONE_RESULT_PER_SIZE and curve["label"] == scaling.NOT_MLPERF


def test_runs_without_a_size_or_a_headline_are_said_at_their_pointer() -> None:
    with pytest.raises(scaling.ScalingError, match=r"^/1/system/accelerators: "):
        scaling.curve(
            [
                {"scenario": {"distributed": {"world_size": 2}}, "metrics": {"throughput": {"value": 5.0}}},
                {"system": {"accelerators": []}},
            ]
        )
    with pytest.raises(scaling.ScalingError, match=r"^/0/metrics/time_to_quality/seconds: "):
        scaling.curve([{"system": {"accelerators": [{"count": 8}]}, "metrics": {"primary": "time_to_quality"}}])


def test_the_time_to_trains_method_is_disclosed_on_the_scaling_axis_only_where_it_is_the_headline() -> None:
    """MLPerf writes each result's scaling factor into its method text: shown between sizes, controlled elsewhere;
    a run with another headline keeps ignoring it, as under 1.2."""
    doc = set_at({"metrics": {"primary": "time_to_quality"}}, "/metrics/time_to_quality/method", "olympic mean")
    assert cmp.field_roles(doc, "scaling")["/metrics/time_to_quality/method"] == "disclosed"
    assert cmp.field_roles(doc, "system")["/metrics/time_to_quality/method"] == "controlled"
    other = set_at(doc, "/metrics/primary", "throughput")
    assert {cmp.field_roles(other, axis)["/metrics/time_to_quality/method"] for axis in cmp.contract().axes} == {
        "ignored"
    }
