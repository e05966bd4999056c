"""A decision on served evidence weighs like against like (shared/DECISIONS.md, "Which runs answer it"): the model
served (name and weights) is part of the workload, and the engine settings that change capacity are part of the
candidate's configuration; a sweep whose engine was tuned level by level says so where its knee is used. The
sweeps follow tests/protocol/serving_law.py (knee at concurrency 16 for the question below)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from protocol import decisions as dec
from protocol.decisions.evidence import same_model
from tests.protocol.serving_law import sweep_docs
from tests.protocol.test_decisions_sweeps import NOISE, evidence, question

KIMI, GLM = "/lustre/fsw/models/Kimi-K2.5-NVFP4", "amd/GLM-5.1-MXFP4"
DIGEST_A, DIGEST_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def served(docs: list[dict[str, Any]], model: str, **settings: Any) -> list[dict[str, Any]]:
    """The levels as a served model's: software.serving names the model, software.settings the engine's settings
    (a value given as a function of the concurrency is set per level)."""
    for d in docs:
        d["software"]["serving"] = {
            "engine": "vllm",
            "version": "0.22.0",
            "api": "chat",
            "streaming": True,
            "model": model,
            "parallelism": {"tensor": 8, "expert": 1},
            "tool": {"name": "aiperf", "version": "0.8.0"},
        }
        for key, value in settings.items():
            d["software"]["settings"][key] = value(d["scenario"]["concurrency"]) if callable(value) else value
    return docs


def two_models() -> list[dict[str, Any]]:
    return served(sweep_docs((1, 2, 4, 8, 16, 32), sweep="kimi", noise=NOISE), KIMI) + served(
        sweep_docs((1, 2, 4, 8), sweep="glm", noise=NOISE, accelerators=2, model="MI355X"), GLM
    )


def test_a_question_naming_no_model_over_runs_of_two_models_is_refused_with_the_models_listed() -> None:
    with pytest.raises(dec.DecisionError) as refused:
        dec.answer(question(), evidence(two_models()))
    words = str(refused.value)
    assert words.startswith("/served_model: the runs that answer this question serve 2 models")
    assert f"'{KIMI}' (18 run(s) on 8x B200)" in words and f"'{GLM}' (12 run(s) on 2x MI355X)" in words


def test_the_model_named_keeps_its_runs_and_every_other_run_is_left_out_with_the_models_named() -> None:
    answer = dec.answer(question(served_model={"name": GLM}), evidence(two_models()))
    assert [c["served_model"] for c in answer["candidates"]] == [GLM]
    assert len(answer["left_out"]) == 18
    assert {x["reason"] for x in answer["left_out"]} == {f"serves {KIMI}, the question asks for {GLM}"}
    assert f"with the model {GLM} served" in answer["question"]


def test_one_model_among_the_runs_is_answered_and_named_among_the_assumptions() -> None:
    docs = served(sweep_docs((1, 2, 4, 8, 16, 32), sweep="kimi", noise=NOISE), KIMI)
    answer = dec.answer(question(), evidence(docs))
    assert answer["served_model"] == KIMI and answer["assumptions"][0].startswith(f"the model served: {KIMI}")


def test_a_weights_digest_asked_for_leaves_out_runs_of_other_weights_or_none_stated() -> None:
    docs = served(sweep_docs((1, 2, 4), sweep="a", noise=NOISE), KIMI)
    for d in docs[:3]:
        d["workload"]["model"]["digest"] = DIGEST_B
    for d in docs[3:6]:
        d["workload"]["model"] = None
    for d in docs[6:]:
        d["workload"]["model"]["digest"] = DIGEST_A
    q = question(served_model={"name": "Kimi-K2.5-NVFP4", "weights_digest": DIGEST_A})
    answer = dec.answer(q, evidence(docs))
    reasons = [x["reason"] for x in answer["left_out"]]
    assert f"serves {KIMI} with weights {DIGEST_B}, the question asks for weights {DIGEST_A}" in reasons
    assert (
        f"serves {KIMI} with no weights digest (workload.model.digest), the question asks for weights {DIGEST_A}"
        in (reasons)
    )
    assert len(reasons) == 6 and [len(c["runs"]) for c in answer["candidates"]] == [3]  # concurrency 4's runs


def test_runs_that_serve_no_model_are_left_out_of_a_question_naming_one() -> None:
    docs = sweep_docs((1, 2), sweep="plain", noise=NOISE)  # no software.serving (e.g. an MLPerf result)
    answer = dec.answer(question(served_model=KIMI), evidence(docs))
    assert answer["candidates"] == []
    assert answer["left_out"][0]["reason"] == (
        f"states no model served (software.serving.model), the question asks for {KIMI}"
    )


@pytest.mark.parametrize(
    ("asked", "served_as", "same"),
    [
        ("Kimi-K2.5-NVFP4", KIMI, True),  # a local checkout is named by its folder
        ("kimi-k2.5-nvfp4", KIMI, True),
        ("amd/GLM-5.1-MXFP4", GLM, True),
        ("GLM-5.1-MXFP4", GLM, False),  # a hub id is one name: another org's GLM-5.1-MXFP4 is other weights
        ("Kimi-K2.5", KIMI, False),
    ],
)
def test_a_model_is_matched_by_its_whole_name_or_a_local_checkouts_folder(
    asked: str, served_as: str, same: bool
) -> None:
    assert same_model(asked, served_as) is same


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"name": ""}, "/served_model/name"),
        ({"name": "x", "weights_digest": "abc"}, "/served_model/weights_digest"),
        ({"name": "x", "revision": "main"}, "/served_model/revision: not a field"),
        (42, "/served_model: the model served"),
    ],
)
def test_the_question_refuses_a_malformed_served_model_by_name(value: Any, where: str) -> None:
    with pytest.raises(dec.DecisionError, match=where):
        question(served_model=value)


def test_two_sweeps_differing_in_an_engine_setting_are_two_candidates_labelled_by_it() -> None:
    docs = served(sweep_docs((1, 2, 4, 8, 16, 32), sweep="a", noise=NOISE), KIMI, max_num_seqs=64)
    docs += served(sweep_docs((1, 2, 4, 8, 16, 32), sweep="b", noise=NOISE), KIMI, max_num_seqs=256)
    answer = dec.answer(question(), evidence(docs))
    labels = sorted(c["label"] for c in answer["candidates"])
    assert len(labels) == 2 and "max sequences 256" in labels[0] and "max sequences 64" in labels[1]
    assert all("tuned-per-level" not in [g["code"] for g in c["gaps"]] for c in answer["candidates"])


def test_two_sweeps_differing_in_tensor_parallelism_are_two_candidates() -> None:
    docs = served(sweep_docs((1, 2, 4), sweep="tp8", noise=NOISE), KIMI)
    docs += served(sweep_docs((1, 2, 4), sweep="tp4", noise=NOISE), KIMI)
    for d in docs[9:]:
        d["software"]["serving"]["parallelism"] = {"tensor": 4, "expert": 2}
    labels = [c["label"] for c in dec.answer(question(), evidence(docs))["candidates"]]
    assert len(labels) == 2 and len(set(labels)) == 2 and any("tensor" in label for label in labels)


def test_a_sweep_tuned_level_by_level_is_one_candidate_that_says_so_where_its_knee_is_used() -> None:
    # InferenceX sets vLLM's max_num_seqs to each level's concurrency: one sweep, one candidate, read at its knee
    # (16, by hand as in test_decisions_sweeps), with the caveat naming the setting at the knee.
    docs = served(sweep_docs((1, 2, 4, 8, 16, 32), sweep="tuned", noise=NOISE), KIMI, max_num_seqs=lambda c: c)
    answer = dec.answer(question(), evidence(docs))
    (c,) = answer["candidates"]
    assert c["sweep"]["knee"]["level"]["load"] == 16.0 and c["systems_needed"]["value"] == 38
    assert "max sequences" not in c["label"]
    gap = next(g for g in c["gaps"] if g["code"] == "tuned-per-level")
    assert "max sequences set to the concurrency at every level (1 to 32)" in gap["message"]
    assert "(concurrency 16: max sequences 16)" in gap["message"]
    assert "the engine was tuned at each load" in answer["summary"][0]


def test_a_setting_tuned_off_the_load_is_said_value_by_value() -> None:
    docs = served(
        sweep_docs((1, 2, 4, 8, 16, 32), sweep="t", noise=NOISE), KIMI, max_num_seqs=lambda c: 64 if c < 16 else 128
    )
    (c,) = dec.answer(question(), evidence(docs))["candidates"]
    gap = next(g for g in c["gaps"] if g["code"] == "tuned-per-level")
    assert "max sequences 64, 64, 64, 64, 128, 128 at concurrency 1, 2, 4, 8, 16, 32" in gap["message"]


@pytest.mark.parametrize(
    ("unit", "rate", "noun"), [("tokens/s", "throughput", "token"), ("requests/s", "request_rate", "request")]
)
def test_a_served_sweep_with_measured_energy_answers_energy_per_output_at_its_knee(unit, rate, noun) -> None:
    """A served sweep whose levels carry a DCGM exporter's energy (benchreg run serving --dcgm-url) is no longer an
    energy gap: energy per output is the knee level's average power over its rate in the demand's unit."""
    docs = served(sweep_docs((1, 2, 4, 8, 16, 32), sweep="kimi", noise=NOISE), KIMI)
    for d in docs:
        watts = 4000.0 + 100 * d["scenario"]["concurrency"]
        d["metrics"]["energy"] = {"source": "nvml", "average_power_w": watts, "joules": watts * 60,
                                  "window_s": 60.0, "scope": "8 GPUs", "method": "dcgm-exporter"}  # fmt: skip
        d["metrics"].setdefault(
            "request_rate", {"value": d["metrics"]["throughput"]["value"] / 100, "unit": "requests/s"}
        )
    demand = {"value": 20000 if unit == "tokens/s" else 200, "unit": unit}
    (c,) = dec.answer(question(demand=demand), evidence(docs))["candidates"]
    at_knee = [d for d in docs if d["scenario"]["concurrency"] == 16]
    per_output = [d["metrics"]["energy"]["average_power_w"] / d["metrics"][rate]["value"] for d in at_knee]
    assert c["energy_per_output"]["unit"] == f"J/{noun}"
    assert c["energy_per_output"]["value"] == pytest.approx(math.exp(sum(map(math.log, per_output)) / 3), rel=1e-3)
    assert "no-energy" not in {g["code"] for g in c["gaps"]}
    assert c["energy_measured"][0]["words"] == "nvml over 60 s: dcgm-exporter"
