"""The cover in plain words (registry.reports.plain): what a reader who decides can conclude, the likely cause when
the runs record one, when the configurations were measured, and what to do next; never a ratio, an interval or a
steady-state test statistic."""

from __future__ import annotations

from typing import Any

from registry.reports.context import conclusion
from registry.reports.plain import cover_words, decision_words

ENGINEERING = ("×", "CI", "Kruskal", "block medians", "blas_threads=2 delivers", "p 6.3e-07")


def _doc(started: str, finished: str, load: str | None = "10.97 8.10 6.20", threads: int = 2) -> dict[str, Any]:
    notes = {"load_average_at_start": load} if load else {}
    return {
        "system": {"name": "vm", "host": {"cores": threads, "threads": threads}, "notes": notes},
        "provenance": {"started_at": started, "finished_at": finished},
    }


def _result(ratio: float = 0.146, lower: bool = False, outcome: str = "inconclusive", caveats: Any = None) -> dict:
    estimate = {"metric": "throughput", "unit": "samples/s", "lower_is_better": lower}
    unsteady = [
        {"code": "steady-state-not-reached", "run": i, "message": "warm-up capped at 17 iterations / 3.1 s"}
        for i in (0, 1)
    ]
    return {
        "comparable": True,
        "arms": [
            {"index": 0, "label": "numpy.blas_threads=1", "runs": [0], "estimate": estimate},
            {"index": 1, "label": "numpy.blas_threads=2", "runs": [1], "estimate": estimate},
        ],
        "pairwise": [{"subject": 1, "baseline": 0, "ratio": ratio, "verdict": outcome, "statement": "x"}],
        "caveats": unsteady if caveats is None else caveats,
        "conclusion": {
            "outcome": outcome,
            "statement": f"{outcome}: numpy.blas_threads=2 delivers {ratio}× numpy.blas_threads=1's throughput",
            "reasons": [],
            "baseline": 0,
            "focus": [0, 1],
        },
    }


def _cover(result: dict, docs: list[dict]) -> dict[str, Any]:
    return cover_words(result, docs, [5, 8], conclusion(result, [5, 8]))


def _all_text(words: dict[str, Any]) -> str:
    return " ".join([words["headline"], *words["why"], *words["next"]])


def test_an_unsteady_pair_on_a_busy_machine_reads_as_inconclusive_with_the_likely_cause_and_the_next_step():
    docs = [
        _doc("2026-11-26T04:20:00Z", "2026-11-26T04:20:15Z"),
        _doc("2026-11-26T04:31:00Z", "2026-11-26T04:31:20Z", load="3.5 3 2"),
    ]
    words = _cover(_result(), docs)
    text = _all_text(words)
    assert words["headline"].startswith("These measurements are inconclusive and cannot settle the decision")
    assert "both runs kept changing speed" in words["headline"]
    assert any(
        "likely cause" in w and "run 5" in w and "load average 10.97" in w and "2 processor" in w for w in words["why"]
    )
    assert any("one after the other" in w and "about 11 minutes apart" in w for w in words["why"])
    assert words["next"][0] == "Do not choose on these numbers." and "alternating the configurations" in text
    assert not [e for e in ENGINEERING if e in text], text
    assert "section 1" in words["detail"]


def test_an_idle_machine_is_not_named_as_a_cause_and_interleaved_runs_are_not_called_sequential():
    docs = [
        _doc("2026-11-26T04:20:00Z", "2026-11-26T04:30:00Z", load="0.5 0.4 0.3"),
        _doc("2026-11-26T04:25:00Z", "2026-11-26T04:35:00Z", load="0.6 0.4 0.3"),
    ]
    words = _cover(_result(), docs)
    assert not [w for w in words["why"] if "likely cause" in w or "one after the other" in w]


def test_a_difference_beyond_the_noise_names_the_better_configuration_and_by_how_much_in_percent():
    docs = [_doc("2026-11-26T04:20:00Z", "2026-11-26T04:21:00Z"), _doc("2026-11-26T04:22:00Z", "2026-11-26T04:23:00Z")]
    more = _cover(_result(1.21, outcome="distinguishable", caveats=[]), docs)
    assert more["headline"].startswith("numpy.blas_threads=2 is the better choice on throughput: about 21% more than")
    slower = _cover(_result(0.8, outcome="distinguishable", caveats=[]), docs)
    assert slower["headline"].startswith("numpy.blas_threads=1 is the better choice on throughput: about 25% more")
    latency = _cover(_result(0.85, lower=True, outcome="distinguishable", caveats=[]), docs)
    assert (
        "numpy.blas_threads=2 is the better choice" in latency["headline"] and "about 15% lower" in latency["headline"]
    )
    assert any("one after the other" in w for w in more["why"])  # said whatever the outcome


def test_no_difference_and_too_few_runs_each_say_what_to_do_instead():
    docs = [_doc("2026-11-26T04:20:00Z", "2026-11-26T04:21:00Z", load=None)] * 2
    same = _cover(_result(1.01, outcome="indistinguishable", caveats=[]), docs)
    assert "do not tell" in same["headline"] and same["next"][0].startswith("Decide on other grounds")
    few = _cover(_result(1.3, outcome="not-enough-evidence", caveats=[]), docs)
    assert "too few measurements" in few["headline"] and "at least 3 times" in few["next"][0]


def _candidate(label: str, meets: str, cost: float | None, gaps: list[str]) -> dict[str, Any]:
    price = (
        f"98.32 USD per system-hour for {label}, as supplied" if cost is not None else f"no price stated for {label}"
    )
    return {
        "label": label,
        "meets": meets,
        "systems_needed": {"value": 4},
        "cost_per_million": {"value": cost, "unit": "USD per million tokens", "price": price},
        "gaps": [{"code": g, "message": g} for g in gaps],
    }


def test_a_decision_cover_names_who_meets_it_the_cheapest_with_its_price_and_the_gaps_to_close():
    answer = {
        "candidates": [
            _candidate("8x H100", "meets", 3.121, ["no-load-sweep"]),
            _candidate("8x H200", "meets", 2.5, ["no-load-sweep", "no-energy"]),
            _candidate("1x MI300X", "misses", None, ["no-price"]),
        ]
    }
    words = decision_words(answer)
    assert words["headline"] == "2 of the 3 candidates meet the question's objectives: 8x H100; 8x H200."
    assert "8x H200, 2.5 USD with 4 systems (98.32 USD per system-hour for 8x H200, as supplied)" in words["why"][0]
    assert "8x H100; 8x H200 (2 of the 3 candidates) were measured at one offered load only" in " ".join(words["why"])
    assert any("several offered loads" in n for n in words["next"]) and words["tone"] == "clear"


def test_a_decision_no_candidate_can_be_confirmed_for_says_not_to_buy_on_it_yet():
    answer = {"candidates": [_candidate("8x H100", "not-enough-evidence", 3.1, ["too-few-repetitions"])]}
    words = decision_words(answer)
    assert words["headline"] == "The one candidate cannot be confirmed to meet the question's objectives yet."
    assert words["next"][0] == "Do not buy on this answer alone." and words["tone"] == "tentative"
    assert words["why"][0].startswith("Taken at face value, the lowest cost per million tokens: 8x H100")


def test_each_configuration_against_the_baseline_says_its_verdict_once():
    """Section 1's list "The other configurations against the baseline": each statement already ends in its verdict
    (protocol.comparability), and the list appended the verdict again ("...; distinguishable from noise —
    distinguishable from noise")."""
    from protocol import comparability as cmp
    from registry.reports.context import decision_points

    from .conftest import variant

    docs = [variant(f"lab-{i}", 1000.0 * (1 + 0.2 * i) if i < 3 else 1001.0, seed=i) for i in range(4)]
    for i, doc in enumerate(docs):  # four configurations: the system axis tells them by their accelerators
        doc["system"]["accelerators"][0]["model"] = f"Accelerator {i}"
    result = cmp.compare(docs, "system", baseline=0)
    points = decision_points(result, conclusion(result, [1, 2, 3, 4]))
    assert points, "the other configurations are listed"
    verdicts = {p["verdict"] for p in result["pairwise"]}
    assert {"distinguishable", "indistinguishable"} <= verdicts, "both kinds of pair are exercised"
    for point in points:
        assert point.count("distinguishable from noise") == 1, point
