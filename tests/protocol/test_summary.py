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


def test_a_summary_gives_one_value_per_declared_column_in_the_declared_order() -> None:
    import copy

    from protocol.summary import COLUMN_NAMES, COLUMNS, summarize, sweep_id
    from tests.conftest import load_example
    from tests.protocol.test_protocol_1_2 import level

    assert len(set(COLUMN_NAMES)) == len(COLUMNS)
    for doc in (load_example("inference-server-h100-bf16"), load_example("training-h100-bf16"), level(concurrency=8)):
        assert tuple(summarize(doc).columns()) == COLUMN_NAMES
        assert summarize(doc).columns()["sweep_id"] == (sweep_id(doc) or "")
    served = level(concurrency=8)
    assert summarize(served).sweep_id == served["scenario"]["sweep"]["id"] != ""
    odd = copy.deepcopy(served)
    odd["scenario"]["sweep"] = "not an object"
    assert sweep_id(odd) is None


def test_every_declared_column_states_its_limits_and_text_columns_their_width() -> None:
    from protocol.summary import COLUMNS, POSITIVE_INT4

    kinds = {"text", "integer", "float", "boolean", "datetime"}
    for column in COLUMNS:
        assert column.kind in kinds, column.name
        assert (column.max_length is not None) == (column.kind == "text"), column.name
        assert column.limits == (POSITIVE_INT4 if column.kind == "integer" else column.max_length)
        assert column.pointer == "" or column.pointer.startswith("/"), column.name
