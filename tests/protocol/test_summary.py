"""The summary columns a document is indexed by: here, the software summary the catalogue's facet groups on."""

from __future__ import annotations

from protocol.summary import SOFTWARE_SUMMARY_MAX, software_summary


def test_frameworks_are_listed_by_name_with_their_versions() -> None:
    assert software_summary({"vllm": "0.9.0", "pytorch": "2.7.0"}) == "pytorch 2.7.0, vllm 0.9.0"
    assert software_summary({"torch": "2.13.0"}) == "torch 2.13.0"


def test_a_framework_without_a_version_is_named_alone_and_none_stated_is_empty() -> None:
    assert software_summary({"jax": None, "torch": "2.13.0"}) == "jax, torch 2.13.0"
    assert software_summary({}) == "" and software_summary(None) == ""


def test_a_long_summary_is_cut_to_the_column_width_the_same_way_every_time() -> None:
    frameworks = {f"framework-{i:03d}": "1.0.0" for i in range(100)}
    summary = software_summary(frameworks)
    assert len(summary) == SOFTWARE_SUMMARY_MAX and summary.endswith("…")
    assert software_summary(dict(reversed(frameworks.items()))) == summary
