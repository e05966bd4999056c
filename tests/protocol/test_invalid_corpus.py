"""A corpus of invalid documents: each a mutation of an example, with the pointer and code it must produce."""

from __future__ import annotations

import pytest

import protocol
from tests.conftest import load_example
from tests.protocol.mutations import DELETE, apply

SERVER, OFFLINE, TRAINING = "inference-server-h100-bf16", "inference-offline-cpu-int8", "training-h100-bf16"

CORPUS = [
    # (example, edits, pointer, code)
    (SERVER, {"/protocol": "benchreg.submission/2.0"}, "/protocol", "bad-format"),
    (SERVER, {"/phase": "serving"}, "/phase", "not-allowed-value"),
    (SERVER, {"/workload/name": DELETE}, "/workload/name", "required"),
    (SERVER, {"/workload/shape/batch_size": 0}, "/workload/shape/batch_size", "out-of-range"),
    (SERVER, {"/workload/shape/batch_size": "8"}, "/workload/shape/batch_size", "wrong-type"),
    (SERVER, {"/workload/shape/batch_size": 8.5}, "/workload/shape/batch_size", "wrong-type"),
    (SERVER, {"/workload/model/digest": "md5:abc"}, "/workload/model/digest", "bad-format"),
    (SERVER, {"/scenario/kind": "fixed-steps"}, "/scenario/kind", "scenario-phase-mismatch"),
    (SERVER, {"/scenario/target_qps": -1}, "/scenario/target_qps", "out-of-range"),
    (SERVER, {"/precision/weights": "bfloat16"}, "/precision/weights", "not-allowed-value"),
    (SERVER, {"/precision/weights": "int8"}, "/precision/quantization", "quantization-missing"),
    (SERVER, {"/system/accelerators/0/count": 0}, "/system/accelerators/0/count", "out-of-range"),
    (SERVER, {"/system/accelerators/0/memory_gib": "80 GiB"}, "/system/accelerators/0/memory_gib", "wrong-type"),
    (SERVER, {"/system/host/memory_gib": "1.5TiB"}, "/system/host/memory_gib", "wrong-type"),
    (SERVER, {"/system/gpu": "H100"}, "/system/gpu", "unknown-field"),
    (SERVER, {"/extra": True}, "/extra", "unknown-field"),
    (SERVER, {"/software/settings/torch.num_threads": [16]}, "/software/settings/torch.num_threads", "wrong-type"),
    (SERVER, {"/conditions/isolation": "private"}, "/conditions/isolation", "not-allowed-value"),
    (
        SERVER,
        {"/conditions/steady_state/reached": False},
        "/conditions/steady_state/reasons",
        "steady-state-reasons-missing",
    ),
    (SERVER, {"/conditions/window/seconds": 0.5}, "/conditions/window/seconds", "window-too-short"),
    (SERVER, {"/conditions/window/seconds": 5.0}, "/conditions/window/seconds", "window-too-short"),
    (SERVER, {"/conditions/window/iterations": 3}, "/conditions/window/iterations", "window-too-short"),
    (SERVER, {"/conditions/window/seconds": 600.0}, "/conditions/window/seconds", "window-exceeds-run"),
    (SERVER, {"/metrics/primary": "goodput_tokens"}, "/metrics/primary", "primary-metric-absent"),
    (SERVER, {"/metrics/primary": "latency_ms"}, "/metrics/primary", "primary-metric-ambiguous"),
    (SERVER, {"/metrics/throughput": DELETE}, "/metrics/throughput", "missing-required-metric"),
    (
        SERVER,
        {"/metrics/latency_ms": DELETE, "/metrics/ttft_ms": DELETE},
        "/metrics/latency_ms",
        "missing-required-metric",
    ),
    (SERVER, {"/metrics/throughput/unit": "tokens/min"}, "/metrics/throughput/unit", "not-allowed-value"),
    (SERVER, {"/metrics/request_rate/unit": "tokens/s"}, "/metrics/request_rate/unit", "unit-mismatch"),
    (SERVER, {"/metrics/latency_ms/p90": 2000.0}, "/metrics/latency_ms/p95", "percentiles-out-of-order"),
    (SERVER, {"/metrics/ttft_ms/min": 70.0}, "/metrics/ttft_ms/p50", "percentiles-out-of-order"),
    (SERVER, {"/metrics/latency_ms/count": 500}, "/metrics/latency_ms/p99", "too-few-samples-for-percentile"),
    (SERVER, {"/metrics/latency_ms/count": 100}, "/metrics/latency_ms/p95", "too-few-samples-for-percentile"),
    (SERVER, {"/metrics/tpot_ms/count": 50}, "/metrics/tpot_ms/p90", "too-few-samples-for-percentile"),
    (SERVER, {"/metrics/latency_ms/method": "guess"}, "/metrics/latency_ms/method", "not-allowed-value"),
    (SERVER, {"/metrics/latency_ms/p50": -3.0}, "/metrics/latency_ms/p50", "out-of-range"),
    (SERVER, {"/metrics/energy/source": "tdp"}, "/metrics/energy/source", "not-allowed-value"),
    (SERVER, {"/metrics/energy/joules": 10_000_000.0}, "/metrics/energy/joules", "inconsistent-derived-value"),
    (SERVER, {"/provenance/finished_at": "2026-11-20T09:00:00Z"}, "/provenance/finished_at", "finished-before-started"),
    (SERVER, {"/provenance/started_at": "yesterday"}, "/provenance/started_at", "bad-format"),
    (SERVER, {"/provenance/source": "scraped"}, "/provenance/source", "not-allowed-value"),
    (SERVER, {"/provenance/runner": DELETE}, "/provenance/runner", "required"),
    (
        SERVER,
        {"/samples": {"latency_ms": {"unit": "ms", "repetitions": [[1.0, 2.0]]}}},
        "/samples/latency_ms/repetitions",
        "samples-count-mismatch",
    ),
    (
        SERVER,
        {"/samples": {"step_time_ms": {"unit": "ms", "repetitions": [[1.0]]}}},
        "/samples/step_time_ms",
        "samples-without-metric",
    ),
    (SERVER, {"/workload/model/parameters": 2**60}, "/workload/model/parameters", "integer-out-of-range"),
    (OFFLINE, {"/precision/quantization": None}, "/precision/quantization", "quantization-missing"),
    (OFFLINE, {"/system/accelerators": {}}, "/system/accelerators", "wrong-type"),
    (TRAINING, {"/scenario/kind": "offline"}, "/scenario/kind", "scenario-phase-mismatch"),
    (TRAINING, {"/metrics/step_time_ms": DELETE}, "/metrics/step_time_ms", "missing-required-metric"),
    (TRAINING, {"/metrics/step_time_ms/p99": 15.0}, "/metrics/step_time_ms/p99", "too-few-samples-for-percentile"),
    (TRAINING, {"/metrics/flops/mfu": 0.5}, "/metrics/flops/mfu", "inconsistent-derived-value"),
    (TRAINING, {"/metrics/flops/mfu": 1.5}, "/metrics/flops/mfu", "out-of-range"),
    (TRAINING, {"/metrics/loss/decreased": False}, "/metrics/loss/decreased", "inconsistent-derived-value"),
    (TRAINING, {"/workload/shape/micro_batch_size": 5}, "/workload/shape/batch_size", "inconsistent-shape"),
    (TRAINING, {"/precision/loss_scaling": "auto"}, "/precision/loss_scaling", "not-allowed-value"),
]


@pytest.mark.parametrize(("example", "edits", "pointer", "code"), CORPUS, ids=[f"{c[3]}@{c[2]}" for c in CORPUS])
def test_each_mutation_is_refused_with_its_pointer_and_code(example: str, edits: dict, pointer: str, code: str) -> None:
    document = apply(load_example(example), edits)
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(document)
    found = {(e.pointer, e.code) for e in refused.value.errors}
    assert (pointer, code) in found, f"expected {code} at {pointer}, got {sorted(found)}"
    assert all(e.message for e in refused.value.errors)


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


def test_every_error_is_reported_at_once() -> None:
    document = apply(
        load_example(SERVER),
        {
            "/phase": "serving",
            "/extra": 1,
            "/metrics/latency_ms/count": 10,
            "/provenance/finished_at": "2026-11-20T09:00:00Z",
        },
    )
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(document)
    codes = {e.code for e in refused.value.errors}
    assert {"not-allowed-value", "unknown-field", "too-few-samples-for-percentile", "finished-before-started"} <= codes


def test_a_wrongly_shaped_value_is_a_schema_error_not_a_crash() -> None:
    """Found by the property test: a list where a format belongs crashed a semantic rule (a 500)."""
    document = apply(load_example(TRAINING), {"/precision/weights": []})
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(document)
    assert ("/precision/weights", "not-allowed-value") in {(e.pointer, e.code) for e in refused.value.errors}
