"""protocol.decisions against hand-computed cases: capacity, cost and energy per output with their intervals,
objective verdicts, the Pareto frontier, and the question's validation."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest

from devtools.documents import variant
from protocol import decisions as dec
from tests.conftest import load_example

T_975_2DF = 4.302652729911275  # Student t quantile 0.975 with 2 degrees of freedom (tables)


def run(
    system: str,
    tput: float,
    ttft_p99: float = 177.0,
    watts: float | None = 486.0,
    model: str = "H100",
    weights: str = "bf16",
    **edits: Any,
) -> dict[str, Any]:
    doc = variant(load_example("inference-server-h100-bf16"), system, tput, **edits)
    doc["metrics"]["ttft_ms"]["p99"] = ttft_p99
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    doc["system"]["accelerators"][0]["model"] = model
    doc["precision"]["weights"] = weights
    if watts is None:
        doc["metrics"].pop("energy")
    else:
        doc["metrics"]["energy"]["average_power_w"] = watts
    return doc


def question(**over: Any) -> dec.Question:
    body: dict[str, Any] = {
        "workload": "decoder-small",
        "scenario": "server",
        "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
        "quality": {"target_ratio": 0.99},
        "demand": {"value": 20000, "unit": "tokens/s"},
        "prices": {"currency": "USD", "system_hour": {"H100": 98.0, "MI300X": 80.0}, "energy_per_kwh": 0.10},
    }
    body.update(over)
    return dec.Question.from_dict(body)


def evidence(docs: list[dict[str, Any]]) -> list[dec.Evidence]:
    return [
        dec.Evidence(d, {"id": i + 1, "digest": f"sha256:{i}", "url": f"/runs/{i + 1}"}) for i, d in enumerate(docs)
    ]


def only(answer: dict[str, Any], model: str) -> dict[str, Any]:
    return next(c for c in answer["candidates"] if c["accelerator_model"] == model)


def test_identical_repetitions_give_exact_systems_cost_and_energy() -> None:
    answer = dec.answer(question(), evidence([run(f"h{i}", 1000.0) for i in range(3)]))
    c = only(answer, "H100")
    assert c["meets"] == "meets" and len(c["runs"]) == 3
    assert c["systems_needed"]["value"] == 20  # 20000 / 1000
    assert c["cost_per_million"]["value"] == pytest.approx(98.0 / (1000 * 3600) * 1e6, rel=1e-5)  # 27.2222 USD
    assert c["energy_per_output"]["value"] == pytest.approx(0.486)  # 486 W / 1000 tokens/s
    assert c["energy_cost_per_million"]["value"] == pytest.approx(0.486 * 1e6 / 3.6e6 * 0.10, rel=1e-5)  # 0.0135 USD
    assert c["fleet_cost_per_hour"] == pytest.approx(20 * 98.0)
    assert c["gaps"] == []


def test_the_interval_on_systems_follows_the_rate_interval() -> None:
    rates = [900.0, 1000.0, 1100.0]
    answer = dec.answer(question(), evidence([run(f"h{i}", r) for i, r in enumerate(rates)]))
    c = only(answer, "H100")
    logs = [math.log(r) for r in rates]
    centre, half = statistics.fmean(logs), T_975_2DF * statistics.stdev(logs) / math.sqrt(3)
    low, mid, high = math.exp(centre - half), math.exp(centre), math.exp(centre + half)
    assert mid == pytest.approx(996.6554934, rel=1e-9)  # cube root of 900 × 1000 × 1100
    assert c["rate"]["value"] == pytest.approx(mid, rel=1e-5)
    assert c["rate"]["ci_low"] == pytest.approx(low, rel=1e-5) and c["rate"]["ci_high"] == pytest.approx(high, rel=1e-5)
    assert c["systems_needed"] == {
        **c["systems_needed"],
        "value": 21,
        "ci_low": math.ceil(20000 / high),
        "ci_high": math.ceil(20000 / low),
    }
    # the rate interval is about 777-1279 tokens/s
    assert (c["systems_needed"]["ci_low"], c["systems_needed"]["ci_high"]) == (16, 26)
    # cost is price ÷ rate: its interval is the rate's, inverted
    assert c["cost_per_million"]["ci_low"] == pytest.approx(98.0 / (high * 3600) * 1e6, rel=1e-5)
    assert c["cost_per_million"]["ci_high"] == pytest.approx(98.0 / (low * 3600) * 1e6, rel=1e-5)


def test_headroom_and_purchase_price_over_the_lifetime() -> None:
    q = question(headroom=0.25, prices={"purchase": {"H100": {"price": 300000, "lifetime_hours": 30000}}})
    c = only(dec.answer(q, evidence([run(f"h{i}", 1000.0) for i in range(3)])), "H100")
    assert c["systems_needed"]["value"] == 25  # 20000 × 1.25 / 1000
    assert c["cost_per_million"]["value"] == pytest.approx(10.0 / 3600 * 1e6 / 1000, rel=1e-5)  # 10 USD per hour
    assert "lifetime of 30000 hours" in c["cost_per_million"]["price"]


@pytest.mark.parametrize(
    ("ttfts", "verdict"),
    [
        ([1800.0, 1850.0, 1900.0], "meets"),
        ([2100.0, 2200.0, 2150.0], "misses"),
        ([1500.0, 2000.0, 2600.0], "uncertain"),
        ([1800.0, 1850.0], "not-enough-evidence"),
    ],
)
def test_objective_verdicts_use_the_interval_of_the_measured_percentile(ttfts: list[float], verdict: str) -> None:
    c = only(dec.answer(question(), evidence([run(f"h{i}", 1000.0, t) for i, t in enumerate(ttfts)])), "H100")
    assert c["objectives"][0]["verdict"] == verdict and c["meets"] == verdict
    if verdict == "misses":
        assert c["systems_needed"]["value"] is None and "does not meet" in c["systems_needed"]["reason"]
    if verdict == "not-enough-evidence":
        assert {g["code"] for g in c["gaps"]} == {"too-few-repetitions"}


def test_the_frontier_keeps_every_undominated_candidate_and_names_no_single_winner() -> None:
    docs = (
        [run(f"h{i}", 1000.0, 300.0) for i in range(3)]  # cost 27.2, latency 300, energy 0.486
        + [run(f"m{i}", 1200.0, 500.0, 700.0, model="MI300X", weights="fp8") for i in range(3)]  # 18.5, 500, 0.583
        + [run(f"b{i}", 800.0, 600.0, 600.0, model="MI300X", weights="bf16") for i in range(3)]
    )  # dominated
    answer = dec.answer(question(), evidence(docs))
    assert answer["frontier"]["criteria"] == ["cost", "latency", "energy"]
    labels = {c["label"]: c for c in answer["candidates"]}
    assert sorted(answer["frontier"]["labels"]) == sorted(
        c["label"]
        for c in answer["candidates"]
        if c["accelerator_model"] == "H100" or c["configuration"].get("precision.weights") == "fp8"
    )
    assert len(labels) == 3 and "score" not in answer and all("score" not in c for c in answer["candidates"])


def test_a_criterion_one_candidate_lacks_is_dropped_from_the_frontier_and_said() -> None:
    docs = [run(f"h{i}", 1000.0) for i in range(3)] + [
        run(f"m{i}", 1200.0, watts=None, model="MI300X") for i in range(3)
    ]
    answer = dec.answer(question(), evidence(docs))
    assert answer["frontier"]["criteria"] == ["cost", "latency"]
    assert answer["frontier"]["dropped"][0]["criterion"] == "energy"
    assert {g["code"] for g in only(answer, "MI300X")["gaps"]} == {"no-energy"}


def test_runs_outside_the_question_are_left_out_with_the_reason() -> None:
    no_quality = run("q", 1000.0)
    no_quality["metrics"].pop("quality")
    docs = [
        run("o", 1000.0, **{"scenario.kind": "offline"}),
        no_quality,
        run("t", 1000.0, **{"workload.name": "other"}),
        run("p", 1000.0),
    ]
    docs[3]["metrics"]["quality"]["target_ratio"] = 0.999
    answer = dec.answer(question(), evidence(docs))
    reasons = [x["reason"] for x in answer["left_out"]]
    assert answer["candidates"] == [] and len(reasons) == 4
    assert "scenario offline" in reasons[0] and "refused from the iso-quality axis: no measured quality" in reasons[1]
    assert "another workload" in reasons[2] and "quality target of 0.999" in reasons[3]


def test_weak_evidence_is_named_in_the_same_sentence_as_the_verdict() -> None:
    doc = run("h", 1000.0)
    doc["conditions"]["steady_state"]["reached"] = False
    doc["provenance"]["origin"] = {"kind": "mlperf-inference", "availability": "preview"}
    answer = dec.answer(question(), evidence([doc]))
    codes = {g["code"] for g in answer["candidates"][0]["gaps"]}
    assert codes == {"no-steady-state", "too-few-repetitions", "preview"}
    assert "did not show steady state" in answer["summary"][0] and "preview" in answer["summary"][0]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"demand": None}, "/demand"),
        ({"demand": {"value": -1, "unit": "tokens/s"}}, "/demand/value"),
        ({"demand": {"value": 1, "unit": "watts"}}, "/demand/unit"),
        ({"phase": "training"}, "/phase"),
        ({"objectives": [{"metric": "nope", "max_ms": 1}]}, "/objectives/0"),
        ({"criteria": ["beauty"]}, "/criteria"),
        ({"prices": {"system_hour": {"a/b": "x"}}}, "/prices/system_hour/a~1b"),
        ({"workload": None}, "/workload"),
    ],
)
def test_a_wrong_question_names_the_field(body: dict[str, Any], pointer: str) -> None:
    with pytest.raises(dec.DecisionError, match=pointer):
        question(**body)


def test_batch_size_is_the_implementations_choice_on_the_iso_quality_axis_only() -> None:
    from protocol import comparability as cmp

    a, b = run("a", 1000.0), run("b", 1000.0, **{"workload.shape.batch_size": 64})
    assert cmp.check([a, b], "iso-quality").comparable
    assert [d.pointer for d in cmp.check([a, b], "system").refusals] == ["/workload/shape/batch_size"]
    b["workload"]["shape"]["sequence_length"] = 512  # the inputs themselves stay controlled
    assert "/workload/shape/sequence_length" in [d.pointer for d in cmp.check([a, b], "iso-quality").refusals]
