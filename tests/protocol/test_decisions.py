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
        "prices": {"currency": "USD", "system_hour": {"1x H100": 98.0, "1x MI300X": 80.0}, "energy_per_kwh": 0.10},
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
    assert [g["code"] for g in c["gaps"]] == ["no-load-sweep"]  # every run at 20 queries/s offered


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
    # cost is the fleet's: its interval is the systems' interval, at the sustained demand
    assert c["cost_per_million"]["ci_low"] == pytest.approx(16 * 98.0 / (20000 * 3600) * 1e6, rel=1e-5)
    assert c["cost_per_million"]["ci_high"] == pytest.approx(26 * 98.0 / (20000 * 3600) * 1e6, rel=1e-5)


def test_headroom_and_purchase_price_over_the_lifetime() -> None:
    q = question(headroom=0.25, prices={"purchase": {"1x H100": {"price": 300000, "lifetime_hours": 30000}}})
    c = only(dec.answer(q, evidence([run(f"h{i}", 1000.0) for i in range(3)])), "H100")
    assert c["systems_needed"]["value"] == 25  # 20000 × 1.25 / 1000
    # the fleet of 25 at 10 USD per system-hour, paid every hour while it serves the 20000 tokens/s
    assert c["cost_per_million"]["value"] == pytest.approx(25 * 10.0 / (20000 * 3600) * 1e6, rel=1e-5)
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
        assert {g["code"] for g in c["gaps"]} == {"too-few-repetitions", "no-load-sweep"}


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


def test_a_candidate_lacking_a_criterion_is_not_placed_and_the_criterion_stays_for_the_others() -> None:
    docs = [run(f"h{i}", 1000.0) for i in range(3)] + [
        run(f"m{i}", 1200.0, watts=None, model="MI300X") for i in range(3)
    ]
    answer = dec.answer(question(), evidence(docs))
    assert answer["frontier"]["criteria"] == ["cost", "latency", "energy"] and answer["frontier"]["dropped"] == []
    assert answer["frontier"]["unplaced"] == [{"label": only(answer, "MI300X")["label"], "lacking": ["energy"]}]
    assert answer["frontier"]["labels"] == [only(answer, "H100")["label"]]
    assert {g["code"] for g in only(answer, "MI300X")["gaps"]} == {"no-energy", "no-load-sweep"}


def test_a_criterion_no_candidate_has_is_left_out_and_said() -> None:
    q = question(prices={})
    answer = dec.answer(q, evidence([run(f"h{i}", 1000.0) for i in range(3)]))
    assert answer["frontier"]["criteria"] == ["latency", "energy"]
    assert answer["frontier"]["dropped"][0]["criterion"] == "cost"
    assert "no-price" in {g["code"] for g in answer["candidates"][0]["gaps"]}
    assert "no price stated for 1x H100" in answer["summary"][0]


def test_peak_sizes_the_fleet_with_headroom_and_spares_and_sustained_demand_prices_it() -> None:
    # DECISIONS.md: N = ceil(peak × (1 + headroom) ÷ C) + k; cost = N × price ÷ (sustained × 3600) × 10^6
    q = question(
        demand={"peak": 50000, "sustained": 35000, "unit": "tokens/s"},
        headroom=0.2,
        redundancy=1,
        prices={"system_hour": {"1x H100": 98.32}},
    )
    c = only(dec.answer(q, evidence([run(f"h{i}", 21605.79) for i in range(3)])), "H100")
    assert c["systems_needed"]["value"] == math.ceil(50000 * 1.2 / 21605.79) + 1 == 4
    assert c["systems_needed"]["spare"] == 1 and c["systems_needed"]["serving"] == 3
    assert c["cost_per_million"]["value"] == pytest.approx(4 * 98.32 / (35000 * 3600) * 1e6, rel=1e-5)  # 3.121
    assert c["fleet_cost_per_hour"] == pytest.approx(4 * 98.32)


def test_the_answer_states_every_assumption_it_used_and_nothing_else() -> None:
    q = question(
        demand={"peak": 50000, "sustained": 35000, "unit": "tokens/s"},
        redundancy=2,
        prices={"accelerator_hour": {"H100": 12.0}},
    )
    answer = dec.answer(q, evidence([run(f"h{i}", 1000.0) for i in range(3)]))
    words = " | ".join(answer["assumptions"])
    assert "peak demand 50000 tokens/s; sustained demand 35000 tokens/s" in words
    assert "2 spare system(s) (N+2)" in words and "H100: 12 USD per accelerator-hour, as supplied" in words
    assert "energy" not in words and "system-hour" not in words
    assert (
        "12 USD per accelerator-hour as supplied × 1 accelerators"
        in answer["candidates"][0]["cost_per_million"]["price"]
    )


def test_a_price_belongs_to_a_configuration_not_to_an_accelerator_model() -> None:
    eight = run("h8", 8000.0)
    eight["system"]["accelerators"][0]["count"] = 8
    one = [run(f"h{i}", 1000.0) for i in range(3)]
    q = question(prices={"system_hour": {"8x H100": 98.0}})
    answer = dec.answer(q, evidence([eight, *one]))
    by_count = {c["runs"][0]["id"]: c for c in answer["candidates"]}
    assert by_count[1]["cost_per_million"]["value"] is not None  # the 8-GPU system has its price
    assert by_count[2]["cost_per_million"]["value"] is None  # the 1-GPU system has none, and says so
    assert "no price stated for 1x H100" in by_count[2]["cost_per_million"]["price"]
    with pytest.raises(dec.DecisionError, match=r"/prices/system_hour/H100: a price belongs to a configuration"):
        question(prices={"system_hour": {"H100": 98.0}})


def test_a_gap_of_runs_names_them_by_their_ids() -> None:
    """Not "2 of 2 run(s)": which runs, by the ids a reader looks them up by (ids unlike positions here). Runs of
    one candidate share their steady state (the contract holds it), so the gap is of every run of it."""
    docs = [run("h", 1000.0), run("h", 1010.0)]  # two repetitions of one configuration
    for doc in docs:
        doc["conditions"]["steady_state"]["reached"] = False
    cited = [
        dec.Evidence(d, {"id": 40 + i, "digest": f"sha256:{i}", "url": f"/runs/{40 + i}"}) for i, d in enumerate(docs)
    ]
    candidates = dec.answer(question(), cited)["candidates"]
    assert len(candidates) == 1 and len(candidates[0]["runs"]) == 2, candidates
    unsteady = next(g for g in candidates[0]["gaps"] if g["code"] == "no-steady-state")
    assert unsteady["message"].startswith("runs 40 and 41 did not show steady state"), unsteady
    one = next(g for g in dec.answer(question(), cited[1:])["candidates"][0]["gaps"] if g["code"] == "no-steady-state")
    assert one["message"].startswith("run 41 did not show steady state"), one
    # without ids (a caller that cites runs otherwise) the count is all there is to say
    anonymous = [dec.Evidence(d, {"digest": f"sha256:{i}"}) for i, d in enumerate(docs)]
    gap = next(g for g in dec.answer(question(), anonymous)["candidates"][0]["gaps"] if g["code"] == "no-steady-state")
    assert gap["message"].startswith("2 of 2 run(s) did not show steady state"), gap


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"redundancy": -1}, "/redundancy"),
        ({"redundancy": 1.5}, "/redundancy"),
        ({"peak": 5}, "/peak: not a field"),
        ({"demand": {"peak": 5, "unit": "tokens/s"}}, "/demand/sustained: required"),
        ({"demand": {"peak": 5, "sustained": 6, "unit": "tokens/s"}}, "/demand/sustained: at most the peak"),
        ({"demand": {"value": 5, "peak": 5, "sustained": 5, "unit": "tokens/s"}}, "/demand/value"),
        ({"demand": {"value": 5, "unit": "tokens/s", "sustainde": 3}}, "/demand/sustainde: not a field"),
        ({"prices": {"system_hour": {"*": 1.0}, "rental": 3}}, "/prices/rental: not a field"),
        ({"candidates": {"vendors": ["AMD"]}}, "/candidates/vendors: not a field"),
    ],
)
def test_a_question_field_the_answer_would_not_use_is_refused(body: dict[str, Any], pointer: str) -> None:
    with pytest.raises(dec.DecisionError, match=pointer):
        question(**body)


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
    # a published MLPerf Server result is read at its published capacity: no "one offered load" gap (DECISIONS.md)
    assert codes == {"no-steady-state", "too-few-repetitions", "preview"}
    assert "did not show steady state" in answer["summary"][0] and "preview" in answer["summary"][0]
    assert answer["candidates"][0]["capacity_basis"].startswith("the published MLPerf Inference")
    doc["provenance"]["origin"] = {"kind": "other"}
    measured = dec.answer(question(), evidence([doc]))["candidates"][0]
    assert "no-load-sweep" in {g["code"] for g in measured["gaps"]}


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"demand": None}, "/demand"),
        ({"demand": {"value": -1, "unit": "tokens/s"}}, "/demand/value"),
        ({"demand": {"value": 1, "unit": "watts"}}, "/demand/unit"),
        ({"phase": "training"}, "/phase"),
        ({"objectives": [{"metric": "nope", "max_ms": 1}]}, "/objectives/0"),
        ({"criteria": ["beauty"]}, "/criteria"),
        ({"criteria": ["cost", "cost"]}, "/criteria: each criterion once"),
        ({"criteria": "cost"}, "/criteria: a list"),  # was read letter by letter: "got c, o, s, t"
        ({"scenario": "bogus"}, "/scenario: one of interactive, multi-stream, offline"),  # was answered, by no run
        ({"scenario": "fixed-steps"}, "/scenario"),  # a training scenario in an inference question
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


def test_candidates_with_different_accelerator_counts_each_show_their_count() -> None:
    eight = run("h8", 8000.0)
    eight["system"]["accelerators"][0]["count"] = 8
    answer = dec.answer(question(prices={}), evidence([eight, run("h1", 1000.0)]))
    assert sorted(c["label"] for c in answer["candidates"]) == ["1× H100, bf16", "8× H100, bf16"]


def test_a_system_without_accelerators_is_priced_by_its_nodes_and_host_cpu() -> None:
    doc = run("c", 1000.0)
    doc["system"]["accelerators"] = []
    key = dec.evidence.configuration_key(doc)
    assert key == f"1x {doc['system']['host']['cpu_model']}" and not key.startswith("0x")


def test_candidates_without_intervals_are_not_tied_within_noise_but_cannot_be_told_apart() -> None:
    """DECISIONS.md, Trade-offs: without intervals (one run each) nothing is within noise. Two one-run candidates,
    one better on every point value, were called "tied within noise"."""
    docs = [run("h0", 1000.0, 300.0, 486.0), run("m0", 1100.0, 250.0, 400.0, model="MI300X")]
    answer = dec.answer(question(), evidence(docs))
    front = answer["frontier"]
    assert sorted(front["labels"]) == sorted(c["label"] for c in answer["candidates"])  # neither dominates
    assert front["tied"] == []
    (pair,) = front["cannot_tell"]
    assert sorted(pair["labels"]) == sorted(front["labels"])
    assert pair["why"].startswith(" and ".join(pair["labels"]) + " have no 95% interval (fewer than 3 runs)")
    three = [run(f"h{i}", 1000.0, 300.0, 486.0) for i in range(3)]
    three += [run(f"m{i}", 1100.0 + i, 250.0, 400.0, model="MI300X") for i in range(3)]
    answer = dec.answer(question(), evidence(three))
    assert answer["frontier"]["cannot_tell"] == [] and answer["frontier"]["labels"] == [only(answer, "MI300X")["label"]]
