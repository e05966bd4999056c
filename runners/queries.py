"""One inference query, timed: a classifier/encoder batch, or a decoder generation with its first token.

`run()` returns (first-token ms or None, total ms), both measured from the call, with device
synchronisation before each clock reading. Closed-loop scenarios use `timed()`, which also keeps the
per-query time to first token and time per output token; the server scenario calls `run()` from its
worker threads and adds the queueing delay itself.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import numpy as np

from . import workloads
from .backends import Backend
from .workloads import Shape, Workload


class Query(Protocol):
    ttft_ms: list[float]
    tpot_ms: list[float]

    def run(self) -> tuple[float | None, float]: ...

    def timed(self) -> float: ...

    def clear(self) -> None: ...


def fixed_inputs(workload: Workload, shape: Shape, seed: int) -> np.ndarray:
    """The deterministic inputs every query of a run uses (features, or token ids / prompts)."""
    if not workload.is_transformer:
        return workloads.features(workload, shape, seed)[0]
    return workloads.tokens(workload, shape, seed)


class BatchQuery:
    """Classifier or encoder inference on a fixed batch."""

    def __init__(self, backend: Backend, model: Any, inputs: Any) -> None:
        self.backend, self.model, self.inputs = backend, model, inputs
        self.ttft_ms: list[float] = []
        self.tpot_ms: list[float] = []

    def run(self) -> tuple[float | None, float]:
        self.backend.synchronize()
        start = time.perf_counter_ns()
        self.backend.forward(self.model, self.inputs)
        self.backend.synchronize()
        return None, (time.perf_counter_ns() - start) / 1e6

    def timed(self) -> float:
        return self.run()[1]

    def clear(self) -> None:
        return None


class DecoderQuery:
    """Greedy generation of `output_tokens` tokens for a fixed batch of prompts, with a KV cache."""

    def __init__(self, backend: Backend, model: Any, prompts: Any, output_tokens: int) -> None:
        if output_tokens < 2:
            raise ValueError("a decoder query needs at least 2 output tokens to have a time per output token")
        self.backend, self.model, self.prompts, self.output_tokens = backend, model, prompts, output_tokens
        self.ttft_ms: list[float] = []
        self.tpot_ms: list[float] = []

    def run(self) -> tuple[float | None, float]:
        sync = self.backend.synchronize
        sync()
        start = time.perf_counter_ns()
        state = self.backend.prefill(self.model, self.prompts, self.output_tokens)
        sync()  # the first token exists once the prompt pass has finished on the device
        first = time.perf_counter_ns()
        for _ in range(self.output_tokens - 1):
            self.backend.decode(self.model, state)
        sync()
        return (first - start) / 1e6, (time.perf_counter_ns() - start) / 1e6

    def tpot(self, first_ms: float, total_ms: float) -> float:
        """Time per output token after the first (the vLLM / GenAI-Perf definition)."""
        return (total_ms - first_ms) / (self.output_tokens - 1)

    def timed(self) -> float:
        first, total = self.run()
        assert first is not None
        self.ttft_ms.append(first)
        self.tpot_ms.append(self.tpot(first, total))
        return total

    def clear(self) -> None:
        self.ttft_ms.clear()
        self.tpot_ms.clear()


def make_query(backend: Backend, model: Any, workload: Workload, shape: Shape, seed: int) -> Query:
    """The query of a run: fixed inputs from `seed`, moved to the device once, outside any timing."""
    inputs = backend.to_device(fixed_inputs(workload, shape, seed))
    if workload.is_decoder:
        assert shape.output_tokens is not None
        return DecoderQuery(backend, model, inputs, shape.output_tokens)
    return BatchQuery(backend, model, inputs)


def quality(
    backend: Backend, workload: Workload, shape: Shape, model: Any, reference: Any, seed: int, precision: str
) -> dict[str, Any]:
    """Agreement with an fp32 build of the same weights on fixed inputs (not the benchmark inputs)."""
    qseed = seed + 100  # a separate fixed set, so quality is not judged on the timed batch alone
    agreement = _decoder_outputs if workload.is_decoder else _predictions
    ours, ref, metric = agreement(backend, workload, shape, model, reference, qseed)
    return {
        "metric": metric,
        "value": round(float(np.mean(ours == ref)), 6),
        "reference_precision": "fp32",
        "values": {"compared": int(ours.size)},
    }


def _decoder_outputs(
    backend: Backend, workload: Workload, shape: Shape, model: Any, reference: Any, qseed: int
) -> tuple[np.ndarray, np.ndarray, str]:
    """(the tokens `model` generates, those `reference` generates, the metric's name) for fixed prompts."""
    assert shape.output_tokens is not None
    prompts = backend.to_device(workloads.tokens(workload, shape, qseed))
    ours = _generate(backend, model, prompts, shape.output_tokens)
    ref = _generate(backend, reference, prompts, shape.output_tokens)
    return ours, ref, "token-agreement-vs-fp32"


def _predictions(
    backend: Backend, workload: Workload, shape: Shape, model: Any, reference: Any, qseed: int
) -> tuple[np.ndarray, np.ndarray, str]:
    """(the predictions of `model`, those of `reference`, the metric's name) for fixed inputs."""
    batches = max(1, 256 // shape.batch_size) if not workload.is_transformer else 1
    inputs = (
        workloads.features(workload, shape, qseed, batches)[0]
        if not workload.is_transformer
        else workloads.tokens(workload, shape, qseed)
    )
    data = backend.to_device(inputs)
    ours = backend.predictions(backend.forward(model, data))
    ref = backend.predictions(backend.forward(reference, data))
    return ours, ref, "top1-agreement-vs-fp32"


def _generate(backend: Backend, model: Any, prompts: Any, output_tokens: int) -> np.ndarray:
    state = backend.prefill(model, prompts, output_tokens)
    for _ in range(output_tokens - 1):
        backend.decode(model, state)
    return backend.predictions(state)


class Paused:
    """A query followed by a pause of `ms` milliseconds inside the timed region (RunSpec.sleep_ms): a known
    slowdown to inject into a series. Sleeping, not spinning: the pause does not depend on CPU contention."""

    def __init__(self, query: Query, ms: float) -> None:
        self.query, self.seconds = query, ms / 1000.0
        self.ttft_ms: list[float] = query.ttft_ms  # the same lists: the wrapped query appends to them
        self.tpot_ms: list[float] = query.tpot_ms

    def run(self) -> tuple[float | None, float]:
        start = time.perf_counter_ns()
        first, _ = self.query.run()
        time.sleep(self.seconds)
        return first, (time.perf_counter_ns() - start) / 1e6

    def timed(self) -> float:
        start = time.perf_counter_ns()
        self.query.timed()
        time.sleep(self.seconds)
        return (time.perf_counter_ns() - start) / 1e6

    def clear(self) -> None:
        self.query.clear()
