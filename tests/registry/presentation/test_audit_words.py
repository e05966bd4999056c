"""The audit pages' sentences: numbers grouped as everywhere else, a failure always says NOT and why."""

from __future__ import annotations

from registry.audit.checks import InclusionCheck
from registry.presentation.audit import inclusion_sentence, short_hash


def test_an_inclusion_that_verifies_reads_as_the_issue_asks() -> None:
    check = InclusionCheck(seq=1234, size=5000, verified=True, problem=None, proof=[], leaf_hash=None)
    assert inclusion_sentence(check) == "Entry 1,234 is included in the checkpoint of size 5,000 — proof verified."


def test_an_inclusion_that_fails_says_not_verified_and_why() -> None:
    check = InclusionCheck(1234, 5000, False, "the entry was changed", [], None)
    assert inclusion_sentence(check) == (
        "Entry 1,234 is NOT verified against the checkpoint of size 5,000 — the entry was changed."
    )


def test_a_hash_is_shortened_without_its_algorithm_prefix() -> None:
    assert short_hash("sha256:" + "ab" * 32) == "abababababab…"
    assert short_hash("abc") == "abc"
