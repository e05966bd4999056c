"""What protocol 1.1 means to comparisons, decisions and derived figures: the new precision formats are compared like
any other, derived (inferred) results are never independent evidence, and measured energy names its window."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import protocol
from protocol import comparability as cmp
from protocol import decisions as dec
from protocol import sizing
from protocol import statistics as st
from tests.conftest import load_example

SERVER = "inference-server-h100-bf16"
SOURCE_DIGEST = "sha256:" + "5e" * 32
RULE = "MultiStream inferred from SingleStream: 8 × the SingleStream 99th percentile latency"


def edge_run(system: str, value: float, vendor: str = "NVIDIA", model: str = "H100 80GB HBM3") -> dict[str, Any]:
    """The server example on another system, headline `value`, declaring the newest minor."""
    doc = copy.deepcopy(load_example(SERVER))
    doc["protocol"] = f"{protocol.PROTOCOL_NAME}/{protocol.PROTOCOL_VERSION_LATEST}"
    doc["system"]["name"] = system
    doc["system"]["accelerators"][0].update(vendor=vendor, model=model)
    doc["metrics"]["throughput"]["value"] = value
    return doc


def fp4(doc: dict[str, Any], weights: str = "fp4", method: str = "post-training quantization") -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["precision"].update(weights=weights, kv_cache="fp8", quantization={"method": method, "granularity": "block"})
    return out


def derived(doc: dict[str, Any], source: str = SOURCE_DIGEST) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["provenance"]["source"] = "import"
    out["provenance"]["origin"] = {
        "kind": "mlperf-inference",
        "derivation": {
            "kind": "mlperf-inferred",
            "rule": RULE,
            "from_scenario": "SingleStream",
            "from_location": "closed/Acme/results/edge-box/resnet/singlestream",
            "from_digest": source,
        },
    }
    return out


# ----------------------------------------------------------------------------------------- derivation_of


def test_a_measured_run_has_no_derivation() -> None:
    doc = load_example(SERVER)
    assert protocol.derivation_of(doc) is None and not protocol.is_derived(doc)


def test_a_derived_run_names_its_rule_and_source() -> None:
    doc = derived(edge_run("edge", 100.0))
    assert protocol.check(doc)  # a valid 1.1 document
    found = protocol.derivation_of(doc)
    assert protocol.is_derived(doc) and found is not None
    assert (found.kind, found.from_scenario, found.from_digest) == ("mlperf-inferred", "SingleStream", SOURCE_DIGEST)
    assert found.words() == (
        f"inferred by MLPerf's rule from the SingleStream run {SOURCE_DIGEST} at "
        f"closed/Acme/results/edge-box/resnet/singlestream: {RULE}"
    )


@pytest.mark.parametrize("provenance", [None, "text", {"origin": None}, {"origin": {"derivation": None}}, []])
def test_derivation_reads_any_shape_without_failing(provenance: Any) -> None:
    assert protocol.derivation_of({"provenance": provenance}) is None


# ------------------------------------------------------------------------------------- precision formats


def test_fp4_runs_of_two_vendors_compare_on_the_system_axis_when_both_say_the_same_format() -> None:
    nvidia = fp4(edge_run("b200-box", 3000.0, "NVIDIA", "B200"))
    amd = fp4(edge_run("mi355x-box", 2800.0, "AMD", "MI355X"))
    verdict = cmp.check([nvidia, amd], "system")
    assert verdict.comparable
    assert not [d for d in verdict.disclosures if d.pointer.startswith("/precision")]
    assert cmp.comparability_key(nvidia, "system") == cmp.comparability_key(amd, "system")


def test_the_contract_holds_the_quantization_words_controlled_on_the_system_axis() -> None:
    """How each vendor says it quantized is part of /precision, controlled on the system axis (contract 1.1): two fp4
    runs whose quantization methods read differently are refused there, and compare on the iso-quality axis."""
    nvidia = fp4(edge_run("b200-box", 3000.0, "NVIDIA", "B200"), method="TensorRT Model Optimizer")
    amd = fp4(edge_run("mi355x-box", 2800.0, "AMD", "MI355X"), method="AMD Quark")
    refused = cmp.check([nvidia, amd], "system")
    assert [r.pointer for r in refused.refusals] == ["/precision/quantization/method"]
    assert cmp.check([nvidia, amd], "iso-quality").comparable


@pytest.mark.parametrize(("other", "pointer"), [("bf16", "/precision/weights"), ("fp8", "/precision/weights")])
def test_fp4_is_controlled_against_other_precisions_on_the_system_axis(other: str, pointer: str) -> None:
    run = fp4(edge_run("b200-box", 3000.0))
    other_run = fp4(edge_run("h100-box", 1500.0), weights=other)
    verdict = cmp.check([run, other_run], "system")
    assert not verdict.comparable and pointer in [r.pointer for r in verdict.refusals]
    assert f"precision.weights: fp4 vs {other}" in [r.words for r in verdict.refusals]


@pytest.mark.parametrize(("a", "b"), [("fp4", "nvfp4"), ("nvfp4", "mxfp4"), ("fp4-e2m1", "fp4"), ("fp6", "mxfp6-e3m2")])
def test_formats_of_one_family_are_still_different_precisions(a: str, b: str) -> None:
    """'fp4' says the variant is not stated; it is not taken to equal a stated one."""
    verdict = cmp.check([fp4(edge_run("x", 1.0), weights=a), fp4(edge_run("y", 1.0), weights=b)], "system")
    assert [r.pointer for r in verdict.refusals] == ["/precision/weights"]


def test_on_the_precision_axis_fp4_against_fp8_is_the_subject() -> None:
    base = fp4(edge_run("b200-box", 2000.0), weights="fp8")
    faster = fp4(edge_run("b200-box", 3400.0))
    result = cmp.compare([base, faster], "precision")
    assert result["comparable"] and len(result["arms"]) == 2
    assert "fp4 weights" in result["arms"][1]["label"]


def test_a_1_0_run_and_the_same_run_declared_1_1_have_the_same_keys() -> None:
    old = load_example(SERVER)
    assert cmp.comparability_keys(old) == cmp.comparability_keys({**old, "protocol": "benchreg.submission/1.1"})


# ----------------------------------------------------------------------------- derived results in comparisons


def _arm(system: str, values: list[float], *, make_derived: bool = False) -> list[dict[str, Any]]:
    """Repetitions of one configuration: `system` names the machine and its accelerator model."""
    runs = [edge_run(system, v, model=f"accelerator {system}") for v in values]
    for i, run in enumerate(runs):
        run["provenance"]["started_at"] = f"2026-11-2{i}T10:00:00Z"
        run["provenance"]["finished_at"] = f"2026-11-2{i}T10:02:10Z"
    return [derived(r) for r in runs] if make_derived else runs


def test_measured_arms_reach_a_verdict() -> None:
    result = cmp.compare([*_arm("a", [1000.0, 1010.0, 990.0]), *_arm("b", [2000.0, 2030.0, 1980.0])])
    assert result["pairwise"][0]["verdict"] == "distinguishable"


def test_an_arm_of_derived_results_forms_no_verdict_however_many() -> None:
    runs = [*_arm("a", [1000.0, 1010.0, 990.0]), *_arm("b", [2000.0, 2030.0, 1980.0], make_derived=True)]
    result = cmp.compare(runs, names=[f"run {i + 1}" for i in range(6)])
    arm = result["arms"][1]["estimate"]
    assert arm["independent_values"] == 0 and not arm["enough_evidence"]
    assert arm["value"] == pytest.approx((2000.0 * 2030.0 * 1980.0) ** (1 / 3), rel=1e-5)
    assert "derived from other runs, none measured" in arm["evidence"]
    pair = result["pairwise"][0]
    assert pair["verdict"] == "not-enough-evidence" and pair["ratio"] == pytest.approx(2.0, rel=0.01)
    caveat = next(c for c in result["caveats"] if c["code"] == "derived-results")
    assert caveat["runs"] == [3, 4, 5] and caveat["message"].startswith("run 4, run 5, run 6 are results derived")
    per_run = [c for c in result["caveats"] if c["code"] == "derived-result"]
    assert [c["run"] for c in per_run] == [3, 4, 5] and RULE in per_run[0]["message"]


def test_a_derived_run_among_measured_repetitions_is_not_counted() -> None:
    measured = _arm("a", [1000.0, 1010.0, 990.0])
    inferred = derived(_arm("a", [5000.0])[0])
    inferred["provenance"]["started_at"] = "2026-11-25T10:00:00Z"
    inferred["provenance"]["finished_at"] = "2026-11-25T10:02:10Z"
    alone = st.aggregate(measured)
    together = st.aggregate([*measured, inferred])
    assert together.independent_values == 3 and together.value == pytest.approx(alone.value)
    assert (together.ci_low, together.ci_high) == pytest.approx((alone.ci_low, alone.ci_high))
    assert together.method.endswith("; 1 derived result not counted (not independent evidence)")


def test_a_single_derived_run_keeps_its_value_without_evidence() -> None:
    estimate = st.headline_estimate(derived(edge_run("edge", 123.0)))
    assert estimate.value == 123.0 and estimate.independent_values == 0
    assert estimate.evidence is not None and "not a measurement but inferred by MLPerf's rule" in estimate.evidence


def test_measured_runs_keep_the_estimates_they_had() -> None:
    runs = _arm("a", [1000.0, 1010.0, 990.0])
    est = st.aggregate(runs)
    assert (
        est.independent_values == 3
        and est.method == "geometric mean of the headline values of 3 runs (one value per run)"
    )


def test_the_methods_say_how_derived_results_count() -> None:
    assert "derived_results" in st.METHODS and "never forms a verdict" in st.METHODS["derived_results"]


# ----------------------------------------------------------------------------------------------- decisions


def test_a_decision_leaves_derived_runs_out_with_the_reason() -> None:
    question = dec.Question.from_dict(
        {
            "workload": "decoder-small",
            "scenario": "server",
            "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
            "demand": {"value": 20000, "unit": "tokens/s"},
        }
    )
    runs = [edge_run("measured", 1200.0), derived(edge_run("inferred", 5000.0))]
    evidence = [
        dec.Evidence(d, {"id": i + 1, "digest": f"sha256:{i}", "url": f"/runs/{i + 1}"}) for i, d in enumerate(runs)
    ]
    answer = dec.answer(question, evidence)
    assert [x["reason"] for x in answer["left_out"]] == [
        f"not a measurement but {protocol.derivation_of(runs[1]).words()}"  # type: ignore[union-attr]
    ]
    assert len(answer["candidates"]) == 1


# ------------------------------------------------------------------------------------------ measured energy


def power_run(energy: dict[str, Any]) -> dict[str, Any]:
    doc = edge_run("ptd-box", 1000.0)
    doc["metrics"]["energy"] = energy
    return doc


def test_energy_per_output_names_the_meters_window_and_method() -> None:
    method = "SPEC PTDaemon 1.11.1, Yokogawa WT333E"
    found = sizing.energy_per_output(
        power_run(
            {"source": "spec-ptd", "scope": "system", "average_power_w": 2000.0, "window_s": 600.0, "method": method}
        )
    )
    assert found.value == pytest.approx(2.0)
    assert found.inputs["window_s"] == 600.0 and found.inputs["method"] == method
    assert found.inputs["source"] == "spec-ptd" and found.inputs["scope"] == "system"


def test_joules_are_divided_over_the_meters_own_window() -> None:
    found = sizing.energy_per_output(power_run({"source": "spec-ptd", "joules": 1.2e6, "window_s": 600.0}))
    assert found.value == pytest.approx(1.2e6 / (1000.0 * 600.0))
    assert found.assumption is None and "meter's window" in found.formula


def test_a_run_that_states_no_window_keeps_the_inputs_it_had() -> None:
    found = sizing.energy_per_output(load_example(SERVER))
    assert set(found.inputs) == {"source", "scope", "throughput", "unit", "average_power_w"}
