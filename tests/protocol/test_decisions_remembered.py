"""A run's grouping (comparability key and configuration) is remembered across answers by its digest when the
caller vouches that digests name documents (the registry): the answers are the same as worked out afresh, the
memory is bounded, and what one answer hands out cannot change the next."""

from __future__ import annotations

import copy
import importlib
from typing import Any

import pytest

from protocol import decisions as dec
from protocol import digest
from tests.protocol.serving_law import sweep_docs
from tests.protocol.test_decisions_sweeps import NOISE, question, sweeps

answer_module = importlib.import_module("protocol.decisions.answer")  # the package's `answer` is the function


def named(docs: list[dict[str, Any]]) -> list[dec.Evidence]:
    """Evidence whose ref names each document by its own digest, as the registry's runs do."""
    return [dec.Evidence(d, {"id": i + 1, "digest": digest(d), "url": f"/runs/{i + 1}"}) for i, d in enumerate(docs)]


@pytest.fixture(autouse=True)
def forgotten() -> None:
    answer_module.forget_groupings()


def test_remembered_groupings_give_the_answer_worked_out_afresh_cold_and_warm() -> None:
    docs = sweeps()
    fresh = dec.answer(question(), named(docs))
    assert not answer_module._groupings  # not vouched for: nothing remembered
    cold = dec.answer(question(), named(docs), digests_name_documents=True)
    assert len(answer_module._groupings) == len(docs)
    warm = dec.answer(question(), named(docs), digests_name_documents=True)
    assert fresh == cold == warm
    assert len(fresh["candidates"]) == 2


def test_a_changed_answer_does_not_change_the_next() -> None:
    docs = sweeps()
    first = dec.answer(question(), named(docs), digests_name_documents=True)
    expected = copy.deepcopy(first)
    for cand in first["candidates"]:
        cand["configuration"].clear()
        cand["configuration"]["changed"] = True
    again = dec.answer(question(), named(docs), digests_name_documents=True)
    assert again == expected


def test_a_sweep_tuned_per_level_and_one_of_its_levels_alone_answer_as_afresh() -> None:
    """A sweep whose engine was tuned per level (max_num_seqs = the concurrency) is one candidate, its levels
    grouped without that setting; one level answering alone (nothing tuned) is grouped with it. Each grouping is
    remembered under the settings it was made neutral of."""
    docs = sweep_docs((1, 2, 4, 8, 16), sweep="tuned", noise=NOISE)
    for doc in docs:
        doc["software"].setdefault("settings", {})["vllm.max_num_seqs"] = doc["scenario"]["concurrency"]
    tuned = dec.answer(question(), named(docs), digests_name_documents=True)
    assert len(tuned["candidates"]) == 1
    level = [d for d in docs if d["scenario"]["concurrency"] == 4]
    alone = dec.answer(question(), named(level), digests_name_documents=True)
    assert alone == dec.answer(question(), named(level))
    assert {name[1] for name in answer_module._groupings} == {("vllm.max_num_seqs",), ()}


def test_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer_module, "MAX_GROUPINGS", 5)
    docs = sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=NOISE)
    assert len(docs) > 5
    answer = dec.answer(question(), named(docs), digests_name_documents=True)
    assert len(answer_module._groupings) == 5
    assert answer == dec.answer(question(), named(docs))
