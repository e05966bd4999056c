"""A decision's answer in words (registry.presentation.answers): what the page opens with and the cover prints."""

from __future__ import annotations

from typing import Any

from registry.presentation import answers


def _candidate(
    label: str, gaps: list[tuple[str, str]], weights: str = "bf16", activations: str = "bf16"
) -> dict[str, Any]:
    return {
        "label": label,
        "meets": "meets",
        "systems_needed": {"value": 4, "ci_low": 4, "ci_high": 5},
        "cost_per_million": {"value": None},
        "configuration": {"precision.weights": weights, "precision.activations": activations},
        "gaps": [{"code": code, "message": message} for code, message in gaps],
    }


def test_a_caveat_every_candidate_says_alike_is_said_once_and_particulars_stay_with_their_candidate() -> None:
    energy = ("no-energy", "no run measured energy with a meter")
    answer = {
        "candidates": [
            _candidate("8x H100", [energy, ("no-load-sweep", "one offered load (20 queries/s offered)")]),
            _candidate("8x H200", [energy, ("no-load-sweep", "one offered load (40 queries/s offered)")]),
        ],
        "frontier": {"labels": ["8x H100"]},
    }
    shared = answers.shared_caveats(answer["candidates"])
    # Said alike: once in its words; said with particulars: once by its short name, the particulars per candidate.
    assert shared == ["no run measured energy with a meter", "one offered load only (no sweep)"]
    sentences = answers.candidate_sentences(answer)
    assert all("energy" not in s for s in sentences)
    assert "20 queries/s" in sentences[0] and "40 queries/s" in sentences[1] and "on the frontier" in sentences[0]
    assert answers.own_gap_titles(answer["candidates"][0], answers.shared_gap_codes(answer["candidates"])) == []
    words = answers.conclusion(answer)
    assert "Both candidates have no energy measured with a meter." in words["why"]


def test_one_candidate_alone_shares_nothing_and_its_gap_is_its_own() -> None:
    alone = [_candidate("1x H100", [("no-price", "no price stated for 1x H100")])]
    assert answers.shared_caveats(alone) == [] and answers.shared_gap_codes(alone) == []
    assert answers.conclusion({"candidates": alone})["why"] == ["The one candidate has no price stated, so no cost."]


def test_a_candidate_set_is_named_by_every_precision_it_spans() -> None:
    same = [_candidate("a", []), _candidate("b", [])]
    assert answers.scope_words(same) == "2 candidate configurations, all in bf16."
    mixed = [*same, _candidate("c", [], "fp8"), _candidate("d", [], "int4", "int8")]
    assert answers.scope_words(mixed) == (
        "4 candidate configurations, in bf16, fp8 weights with bf16 activations and int4 weights with int8 activations."
    )
    assert answers.scope_words([]) == "No candidate configuration."


def test_the_frontier_reads_in_sentences_and_fields_beside_a_figure_in_words() -> None:
    frontier = {
        "criteria": ["cost", "latency"],
        "labels": ["A", "B"],
        "dropped": [{"criterion": "energy", "lacking": ["A", "B"]}],
        "unplaced": [{"label": "C", "lacking": ["cost"]}],
        "tied": [["A", "B"]],
        "cannot_tell": [{"labels": ["A", "D"], "why": "D has no 95% interval"}],
    }
    assert answers.frontier_lines(frontier) == [
        "Pareto frontier over cost, latency: A; B.",
        "Energy is left out of the frontier: no candidate has it.",
        "C is not placed on the frontier: no cost.",
        "A and B are tied within noise.",
        "A and D cannot be told apart: D has no 95% interval.",
    ]
    rows = answers.beside_rows(
        [{"field": "metrics.quality.value", "value": "0.997"}, {"field": "x.new_field", "value": "1"}]
    )
    assert rows == [{"field": "quality", "value": "0.997"}, {"field": "new field", "value": "1"}]


def test_many_pairs_that_cannot_be_told_apart_are_said_once_naming_the_candidates_without_an_interval() -> None:
    """6 candidates with one run each are 15 pairs: one sentence, not a page of near-identical ones."""
    labels = [f"C{i}" for i in range(6)]
    pairs = [
        {"labels": [a, b], "without_interval": [a, b], "why": "…"}
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
    ]
    (line,) = answers.frontier_lines({"criteria": ["cost"], "labels": labels, "cannot_tell": pairs})[1:]
    assert line.startswith("The frontier cannot order its 6 candidates (15 pairs): none has a 95% interval")
    some = [{"labels": ["A", x], "without_interval": [x], "why": "…"} for x in ("B", "C", "D")]
    (line,) = answers.cannot_tell_lines(some, ["A", "B", "C", "D"])
    assert "cannot order 3 of its candidates against the others (3 pairs): B; C; D have no 95% interval" in line
    two = answers.cannot_tell_lines(some[:2], ["A", "B", "C"])
    assert two == ["A and B cannot be told apart: ….", "A and C cannot be told apart: …."]
