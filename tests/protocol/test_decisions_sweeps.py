"""A decision on load sweeps, answered by hand from shared/DECISIONS.md (Inference) in the comments: the capacity C
is read at the sweep's knee, the 'no load sweep' gap is gone, cost per million tokens is at the interactivity
target, and tokens per provisioned MW is its own figure. The sweeps follow tests/protocol/serving_law.py."""

from __future__ import annotations

from typing import Any

import pytest

from protocol import decisions as dec
from tests.protocol.serving_law import sweep_docs

NOISE = (0.98, 1.0, 1.02)  # three runs of every level: intervals and calibrated verdicts are possible


def question(**over: Any) -> dec.Question:
    body: dict[str, Any] = {
        "workload": "decoder-small",
        "scenario": "server",
        "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 1000}],
        "interactivity": {"min_tokens_per_second_per_user": 30},
        "demand": {"value": 20000, "unit": "tokens/s"},
        "prices": {"currency": "USD", "system_hour": {"8x B200": 100.0}},
        "provisioning": {"nameplate_kw": {"8x B200": 14.3}, "pue": 1.25},
    }
    body.update(over)
    return dec.Question.from_dict(body)


def evidence(docs: list[dict[str, Any]]) -> list[dec.Evidence]:
    return [
        dec.Evidence(d, {"id": i + 1, "digest": f"sha256:{i}", "url": f"/runs/{i + 1}"}) for i, d in enumerate(docs)
    ]


def sweeps() -> list[dict[str, Any]]:
    a = sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=NOISE)
    b = sweep_docs((1, 2, 4, 8, 16), sweep="mi355x", noise=NOISE, accelerators=2, model="MI355X", u0=80, c0=4, t0=300)
    return a + b


def by_model(answer: dict[str, Any], model: str) -> dict[str, Any]:
    return next(c for c in answer["candidates"] if c["accelerator_model"] == model)


def test_a_sweep_is_one_candidate_read_at_its_knee_as_by_hand() -> None:
    answer = dec.answer(question(), evidence(sweeps()))
    assert len(answer["candidates"]) == 2  # the levels of each sweep are one configuration, not six candidates
    c = by_model(answer, "B200")
    # By hand (DECISIONS.md, Inference, "the knee: the highest load measured before an objective failed"):
    #   ttft p99 = 100 × (1 + c/4): 500 ms at 16, 900 ms at 32 — both under 1000 ms;
    #   tokens/s per user = 100 ÷ (1 + c/8): 33.3 at 16 (>= 30), 20 at 32 (< 30): the interactivity target fails
    #   first at 32, so the knee is concurrency 16.
    assert c["sweep"]["knee"]["level"]["load"] == 16.0 and c["sweep"]["knee"]["failed_at"]["load"] == 32.0
    # C = T(16) = 16 × 33.33 = 533.3 tokens/s (geometric mean of 533.3 × 0.98, 1, 1.02 = 533.30)
    assert c["rate"]["value"] == pytest.approx(533.3, rel=1e-3) and c["rate"]["metric"] == "throughput"
    # N = ceil(20000 × (1 + 0) ÷ 533.3) + 0 = ceil(37.50) = 38
    assert c["systems_needed"]["value"] == 38
    # cost per million tokens = 38 × 100 USD/h ÷ (20000 tokens/s × 3600 s) × 1e6 = 52.78 USD
    assert c["cost_per_million"]["value"] == pytest.approx(38 * 100 / (20000 * 3600) * 1e6, rel=1e-4)
    # tokens/s per provisioned MW = 533.3 ÷ (14.3 kW × 1.25 ÷ 1000) = 29,835
    assert c["per_provisioned_mw"]["value"] == pytest.approx(533.3 / (14.3 * 1.25 / 1000), rel=1e-3)
    assert "nameplate" in c["per_provisioned_mw"]["label"] and "14.3 kW" in c["per_provisioned_mw"]["assumption"]
    # The verdicts are the knee's: ttft 500 ms (three equal values) under 1000; per-user 33.3 × (0.98..1.02),
    # whose 95% interval (t 4.30, sd of logs 0.02) starts at about 31.7 >= 30: meets.
    assert c["meets"] == "meets" and c["interactivity"]["verdict"] == "meets"
    assert len(c["runs"]) == 3 and all(r["digest"] in answer["cited"] for r in c["runs"])
    assert [g["code"] for g in c["gaps"]] == ["no-energy"]  # no "no-load-sweep": a sweep exists
    assert len(answer["cited"]) == 6 * 3 + 5 * 3  # every level of both sweeps was read to find the knees


def test_the_other_sweep_is_held_by_its_own_first_failure() -> None:
    c = by_model(dec.answer(question(), evidence(sweeps())), "MI355X")
    # ttft = 300 × (1 + c/4): 900 ms at 8, 1500 at 16; per-user = 80 ÷ (1 + c/4): 40 at 4, 26.7 at 8 (< 30):
    # interactivity fails first at 8, so the knee is 4; C = 4 × 40 = 160 tokens/s × (0.98 × 1.02)^(1/3) (the
    # geometric mean of the three runs) = 159.989; N = ceil(20000 ÷ 159.989) = ceil(125.008) = 126 (125 would
    # carry 19,999 tokens/s: the sizing rounds up, never down).
    assert c["sweep"]["knee"]["level"]["load"] == 4.0
    assert c["systems_needed"]["value"] == 126
    assert c["cost_per_million"]["value"] is None and "no-price" in [g["code"] for g in c["gaps"]]
    assert c["per_provisioned_mw"]["value"] is None  # no nameplate stated for 2x MI355X: absent, not guessed


def test_without_an_interactivity_target_the_latency_objective_sets_the_knee() -> None:
    q = question(interactivity=None, objectives=[{"metric": "ttft_ms", "percentile": "p99", "max_ms": 700}])
    c = by_model(dec.answer(q, evidence(sweeps())), "B200")
    # 500 ms at 16 holds, 900 at 32 fails: knee 16 again, now from the ttft objective
    assert c["sweep"]["knee"]["level"]["load"] == 16.0 and "ttft_ms p99" in c["sweep"]["knee"]["words"]


def test_a_sweep_where_no_load_failed_gives_a_lower_bound_gap() -> None:
    docs = sweep_docs((1, 2, 4), sweep="short", noise=NOISE)
    c = dec.answer(question(), evidence(docs))["candidates"][0]
    assert c["sweep"]["knee"]["level"]["load"] == 4.0 and not c["sweep"]["knee"]["reached"]
    assert [g["code"] for g in c["gaps"]] == ["no-knee", "no-energy"]


def test_a_sweep_failing_at_its_lowest_load_misses() -> None:
    c = dec.answer(question(interactivity={"min_tokens_per_second_per_user": 99}), evidence(sweeps()))
    assert all(x["meets"] == "misses" and x["systems_needed"]["value"] is None for x in c["candidates"])


def test_one_load_without_a_sweep_keeps_the_no_load_sweep_gap() -> None:
    docs = [d for d in sweep_docs((8,), sweep="one", noise=NOISE)]
    c = dec.answer(question(), evidence(docs))["candidates"][0]
    assert c["sweep"] is None and "no-load-sweep" in [g["code"] for g in c["gaps"]]


@pytest.mark.parametrize(
    ("over", "where"),
    [
        ({"interactivity": {"min_tokens_per_second_per_user": 0}}, "/interactivity/min_tokens_per_second_per_user"),
        ({"interactivity": {"max_tpot": 3}}, "/interactivity/max_tpot: not a field"),
        ({"provisioning": {"pue": 0.5}}, "/provisioning/pue"),
        ({"provisioning": {"nameplate_kw": {"B200": 14}}}, "/provisioning/nameplate_kw/B200"),
        ({"interactivity_target": 50}, "/interactivity_target: not a field"),
    ],
)
def test_the_question_refuses_bad_interactivity_and_provisioning_by_name(over: dict[str, Any], where: str) -> None:
    with pytest.raises(dec.DecisionError, match=where):
        question(**over)


def test_the_question_states_its_interactivity_and_provisioning_as_assumptions() -> None:
    q = question()
    assert "at least 30 tokens/s per user" in q.words()
    text = " ".join(q.assumptions())
    assert "nameplate power 14.3 kW" in text and "(PUE) 1.25" in text and "nothing is interpolated" in text


def test_a_sweep_that_measured_no_quality_answers_a_question_that_states_no_quality_target_with_that_gap() -> None:
    # Served sweeps (benchreg run serving, aiperf, guidellm, vLLM bench serve) never measure the outputs' quality.
    docs = sweeps()
    for d in docs:
        d["metrics"].pop("quality")
    answer = dec.answer(question(), evidence(docs))
    c = by_model(answer, "B200")
    # By hand, exactly as with quality (test_a_sweep_is_one_candidate_read_at_its_knee_as_by_hand): knee 16,
    # C = 533.3 tokens/s, N = 38; the missing quality is a gap named in the verdict's sentence.
    assert c["sweep"]["knee"]["level"]["load"] == 16.0 and c["systems_needed"]["value"] == 38
    assert c["meets"] == "meets"
    assert [g["code"] for g in c["gaps"]] == ["no-energy", "no-measured-quality"]
    sentence = next(s for s in answer["summary"] if s.startswith(c["label"]))
    assert "no measured quality" in sentence and answer["left_out"] == []
    assert "no quality target stated" in answer["question"]


def test_a_question_that_states_a_quality_target_leaves_out_a_sweep_that_measured_none() -> None:
    docs = sweeps()
    for d in docs:
        d["metrics"].pop("quality")
    answer = dec.answer(question(quality={"target_ratio": 0.99}), evidence(docs))
    assert answer["candidates"] == [] and len(answer["left_out"]) == len(docs)
    reason = answer["left_out"][0]["reason"]
    assert "no measured quality" in reason and "the question asks quality at least 0.99 of the reference" in reason


def _short_levels(docs: list[dict[str, Any]], *concurrencies: int, count: int = 500) -> list[dict[str, Any]]:
    """The levels at `concurrencies` had `count` requests (500 by default): below the 662 a p99 is stated from (the
    protocol's sample minimum), so their documents state no ttft p99, as a real short level's would not."""
    for d in docs:
        if d["scenario"]["concurrency"] in concurrencies:
            d["metrics"]["ttft_ms"].update({"count": count, "p99": None})
    return docs


def test_the_walk_passes_levels_too_short_for_the_objectives_percentile_and_says_so() -> None:
    # DECISIONS.md, Inference: "a level too short to state an objective's percentile neither holds nor fails: the
    # walk passes it and says so". B200 alone, with no ttft p99 at 8 and 16 (500 requests each): 1, 2 and 4 are
    # judged and hold; 8 and 16 are passed; 32 is judged and fails (tokens/s per user 20 < 30). The knee is the
    # highest judged load before the failure: 4.
    docs = _short_levels(sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=NOISE), 8, 16)
    c = dec.answer(question(), evidence(docs))["candidates"][0]
    knee = c["sweep"]["knee"]
    assert knee["level"]["load"] == 4.0 and knee["failed_at"]["load"] == 32.0 and not knee["unjudged"]
    assert [p["load"] for p in knee["passed"]] == [8.0, 16.0]
    assert (
        "passed without a verdict (neither held nor failed): concurrency 8 (ttft_ms p99 not stated: 500 "
        in (knee["words"])
    )
    assert "from 662" in knee["words"]
    # C = T(4) = 4 × 100 ÷ (1 + 4/8) = 266.67 tokens/s × (0.98 × 1.02)^(1/3) (the geometric mean of the three
    # runs) = 266.63; N = ceil(20000 ÷ 266.63) = ceil(75.01) = 76.
    assert c["rate"]["value"] == pytest.approx(266.63, abs=0.01)
    assert c["systems_needed"]["value"] == 76 and c["meets"] == "meets" and c["read_at"] == "concurrency 4"


def test_a_short_level_below_judged_levels_that_hold_does_not_lower_the_knee() -> None:
    # Only 8 is short: 16 is judged and holds, 32 fails, so the knee is 16 as if 8 held (by hand, the first test).
    docs = _short_levels(sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=NOISE), 8)
    c = dec.answer(question(), evidence(docs))["candidates"][0]
    assert c["sweep"]["knee"]["level"]["load"] == 16.0 and c["systems_needed"]["value"] == 38
    assert [p["load"] for p in c["sweep"]["knee"]["passed"]] == [8.0]


def test_a_short_lowest_level_is_passed_and_the_knee_read_above_it_with_every_figure_from_there() -> None:
    # The case: the lowest level too short for the percentile (62 requests), every level above it judged.
    docs = _short_levels(sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=NOISE), 1, count=62)
    c = dec.answer(question(), evidence(docs))["candidates"][0]
    assert c["sweep"]["knee"]["level"]["load"] == 16.0 and c["meets"] == "meets"
    # Every figure is the knee's (concurrency 16): C = 533.3, N = 38, cost 52.78 USD, per provisioned MW 29,835.
    assert c["rate"]["value"] == pytest.approx(533.3, rel=1e-3) and c["systems_needed"]["value"] == 38
    assert c["cost_per_million"]["value"] == pytest.approx(38 * 100 / (20000 * 3600) * 1e6, rel=1e-4)
    assert c["per_provisioned_mw"]["value"] == pytest.approx(533.3 / (14.3 * 1.25 / 1000), rel=1e-3)
    assert c["read_at"] == "concurrency 16" and {r["id"] for r in c["runs"]} == {13, 14, 15}


def test_a_failure_wins_over_an_unstated_objective_at_the_same_level() -> None:
    # At 32 the ttft p99 is not stated but tokens/s per user fails: the level fails, it is not passed.
    docs = _short_levels(sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=NOISE), 32)
    q = question(objectives=[{"metric": "ttft_ms", "percentile": "p99", "max_ms": 1000}])
    knee = dec.answer(q, evidence(docs))["candidates"][0]["sweep"]["knee"]
    assert knee["failed_at"]["load"] == 32.0 and knee["passed"] == []


def test_a_sweep_where_no_level_states_the_percentile_has_not_enough_evidence_and_no_figure() -> None:
    docs = _short_levels(sweep_docs((1, 2, 4), sweep="b200", noise=NOISE), 1, 2, 4)
    c = dec.answer(question(), evidence(docs))["candidates"][0]
    assert c["sweep"]["knee"]["level"] is None and c["sweep"]["knee"]["unjudged"]
    assert c["meets"] == "not-enough-evidence"  # never "misses": no load failed the objective
    assert c["systems_needed"]["value"] is None
    assert "no load of the sweep is shown to meet the target" in c["systems_needed"]["reason"]
    # No figure is read from a level that holds no capacity: no cost, no rate, no tokens per provisioned MW.
    assert c["cost_per_million"]["value"] is None and c["rate"]["value"] is None
    assert c["per_provisioned_mw"]["value"] is None and c["read_at"] is None


def test_a_sweep_whose_lowest_judged_level_fails_misses_without_figures() -> None:
    # 1 is short (passed); 2 is judged and fails ttft p99 <= 100 ms (150 ms): the candidate misses, and the figures
    # of the failing level (its rate, tokens per provisioned MW) are not given as the candidate's.
    docs = _short_levels(sweep_docs((1, 2, 4), sweep="b200", noise=NOISE), 1)
    q = question(objectives=[{"metric": "ttft_ms", "percentile": "p99", "max_ms": 100}])
    c = dec.answer(q, evidence(docs))["candidates"][0]
    assert c["meets"] == "misses" and c["sweep"]["knee"]["failed_at"]["load"] == 2.0
    assert c["rate"]["value"] is None and c["per_provisioned_mw"]["value"] is None
