"""Protocol 1.2: a served-model load level (sweep, request shape, per-user rate, request accounting, the client's own
lag, the serving stack) is accepted when declared 1.2, refused field by field when declared 1.1, and checked for
what the schema cannot see."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import protocol
from tests.conftest import load_example
from tests.protocol.test_protocol_versions import declaring, put

DIST = {"count": 700, "method": "nearest-rank", "unit": "ms", "min": 1.0, "mean": 9.0, "p50": 8.0, "p99": 30.0}
USER = {"count": 700, "method": "linear", "unit": "tokens/s", "min": 20.0, "mean": 60.0, "p50": 61.0, "max": 90.0}

# Every addition of 1.2, as (pointer, value). Pointers are where a 1.1 document using it is refused.
ADDITIONS_1_2: list[tuple[str, Any]] = [
    ("/scenario/sweep", {"id": "sweep-abc", "index": 2, "levels": 6, "mode": "concurrency", "stop_reason": None}),
    ("/workload/request_shape", {"kind": "agentic-multi-turn", "turns": "multi", "input_tokens": None}),
    ("/metrics/itl_ms", DIST),
    ("/metrics/tokens_per_second_per_user", USER),
    ("/metrics/requests", {"sent": 2366, "completed": 2364, "errors": 1, "timeouts": 0, "incomplete": 1}),
    ("/metrics/token_counts", {"input_total": 10, "output_total": 20, "counted_by": "server-usage", "notes": None}),
    ("/metrics/client", {"kept_up": True, "dispatch_lag_ms": DIST, "notes": None}),
    (
        "/software/serving",
        {
            "engine": "vllm",
            "version": "0.22.0",
            "image": "vllm/vllm-openai:v0.22.0",
            "api": "chat",
            "streaming": True,
            "model": "nvidia/Kimi-K2.5-NVFP4",
            "endpoint": "http://localhost:8000",
            "parallelism": {"tensor": 8, "expert": 1, "pipeline": None, "data": None, "data_parallel_attention": False},
            "speculative": None,
            "kv_offload": None,
            "tool": {"name": "aiperf", "version": "0.8.0"},
        },
    ),
    ("/provenance/origin", {"kind": "serving-benchmark", "fields": {"/metrics/ttft_ms/p50": "a.json ttft.p50 (ms)"}}),
]


def level(**scenario: Any) -> dict[str, Any]:
    """The server example as one level of a concurrency sweep, using every addition of 1.2."""
    doc = load_example("inference-server-h100-bf16")
    for pointer, value in ADDITIONS_1_2:
        doc = put(doc, pointer, copy.deepcopy(value))
    doc["scenario"] = {**doc["scenario"], "arrival": "closed-loop", "target_qps": None, **scenario}
    return declaring(doc, "1.2")


def found(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.pointer, e.code) for e in protocol.errors(doc)]


def test_a_load_level_using_every_addition_is_a_valid_1_2_document() -> None:
    assert found(level()) == []
    assert protocol.check(level()).digest.startswith("sha256:")


@pytest.mark.parametrize(("pointer", "value"), ADDITIONS_1_2, ids=lambda x: str(x)[:40])
def test_a_1_1_document_using_a_1_2_addition_is_refused_naming_it(pointer: str, value: Any) -> None:
    doc = declaring(put(load_example("inference-server-h100-bf16"), pointer, copy.deepcopy(value)), "1.1")
    errors = protocol.errors(doc)
    needs = [e for e in errors if e.code == "needs-newer-minor"]
    assert [e.pointer for e in needs] == [pointer] or all(e.pointer.startswith(pointer) for e in needs)
    assert needs and all("protocol 1.2" in e.message for e in needs)


@pytest.mark.parametrize("value", ["gamma"])
def test_gamma_arrival_is_a_value_of_1_2(value: str) -> None:
    doc = put(load_example("inference-server-h100-bf16"), "/scenario/arrival", value)
    doc = put(doc, "/scenario/burstiness", 0.5)
    assert sorted(found(declaring(doc, "1.1"))) == [
        ("/scenario/arrival", "needs-newer-minor"),
        ("/scenario/burstiness", "needs-newer-minor"),
    ]
    assert found(declaring(doc, "1.2")) == []


def test_requests_must_add_up() -> None:
    doc = put(level(), "/metrics/requests/errors", 5)
    assert found(doc) == [("/metrics/requests/sent", "requests-do-not-add-up")]
    assert "completed 2364 + errors 5 + timeouts 0 + incomplete 1 make 2370" in protocol.errors(doc)[0].message


def test_a_distribution_may_not_count_more_requests_than_completed() -> None:
    doc = put(level(), "/metrics/requests", {"sent": 10, "completed": 10, "errors": 0, "timeouts": 0, "incomplete": 0})
    assert ("/metrics/ttft_ms/count", "requests-do-not-add-up") in found(doc)


def test_ttft_itl_and_per_user_rate_need_a_streamed_response() -> None:
    doc = put(level(), "/software/serving/streaming", False)
    assert found(doc) == [
        ("/metrics/itl_ms", "needs-streaming"),
        ("/metrics/tokens_per_second_per_user", "needs-streaming"),
        ("/metrics/ttft_ms", "needs-streaming"),
    ]


@pytest.mark.parametrize(
    ("mode", "scenario", "pointer"),
    [
        ("concurrency", {"concurrency": None}, "/scenario/concurrency"),
        ("request-rate", {"target_qps": None}, "/scenario/target_qps"),
        ("automatic", {"concurrency": None, "target_qps": None}, "/scenario/target_qps"),
    ],
)
def test_a_sweep_level_states_the_load_its_mode_names(mode: str, scenario: dict[str, Any], pointer: str) -> None:
    doc = put(level(**scenario), "/scenario/sweep/mode", mode)
    assert found(doc) == [(pointer, "sweep-load-missing")]


def test_a_request_rate_level_with_its_rate_is_accepted() -> None:
    doc = put(level(target_qps=4.0, concurrency=None, arrival="poisson"), "/scenario/sweep/mode", "request-rate")
    assert found(doc) == []


def test_a_sweep_index_lies_within_its_levels() -> None:
    assert found(put(level(), "/scenario/sweep/index", 6)) == [("/scenario/sweep/index", "sweep-index-out-of-range")]
    assert found(put(level(), "/scenario/sweep/levels", None)) == []


@pytest.mark.parametrize(
    ("arrival", "burstiness", "code"),
    [
        ("gamma", None, "burstiness-missing"),
        ("gamma", 0.5, None),
        ("poisson", 1.0, None),
        ("poisson", 0.5, "burstiness-without-gamma"),
        ("closed-loop", 2.0, "burstiness-without-gamma"),
    ],
)
def test_burstiness_is_the_shape_of_gamma_arrivals(arrival: str, burstiness: float | None, code: str | None) -> None:
    doc = level(arrival=arrival, burstiness=burstiness)
    assert found(doc) == ([("/scenario/burstiness", code)] if code else [])


def test_burstiness_must_be_positive() -> None:
    assert found(level(arrival="gamma", burstiness=0)) == [("/scenario/burstiness", "out-of-range")]


@pytest.mark.parametrize(
    "where", ["/metrics/itl_ms", "/metrics/tokens_per_second_per_user", "/metrics/client/dispatch_lag_ms"]
)
def test_serving_distributions_follow_the_percentile_rules(where: str) -> None:
    few = put(level(), f"{where}/count", 100)
    assert (f"{where}/p99", "too-few-samples-for-percentile") in found(few) or "per_user" in where
    disordered = put(level(), f"{where}/p50", 1000.0)
    assert any(code == "percentiles-out-of-order" and p.startswith(where) for p, code in found(disordered))


def test_the_per_user_rate_is_in_tokens_per_second() -> None:
    assert found(put(level(), "/metrics/tokens_per_second_per_user/unit", "ms")) == [
        ("/metrics/tokens_per_second_per_user/unit", "not-allowed-value")
    ]


def test_an_endpoint_carries_no_credentials_or_path() -> None:
    for bad in ("http://user:secret@host:8000", "http://host:8000/v1"):
        doc = put(level(), "/software/serving/endpoint", bad)
        assert found(doc) == [("/software/serving/endpoint", "bad-format")]
