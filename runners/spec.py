"""RunSpec: everything that defines a run, as one frozen value (what the CLI parses and agents receive)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any

from protocol import rules

from .arguments import (
    CONCURRENCY,
    LEARNING_RATE,
    MILLISECONDS,
    PEAK_TFLOPS,
    RATE,
    REPETITIONS,
    SAMPLES,
    SECONDS,
    SEED,
    THREADS,
    TRAINING_STEPS,
    count,
    number,
)
from .measure import Policy
from .workloads import WORKLOADS, Shape, Workload, get

INFERENCE_SCENARIOS = ("single-stream", "offline", "server")
PRECISIONS = ("fp32", "bf16", "fp16", "int8", "fp8")
# Latency objectives for goodput when none is given (recorded in the document's scenario section).
DEFAULT_SLO_MS = {"decoder-small": {"ttft_p99": 500.0, "tpot_p99": 50.0}}
DEFAULT_LATENCY_SLO_MS = 100.0


# Each numeric field's range: the one its command-line option is read with (runners/arguments.py), so a job's spec
# from the registry is held to what the command would take. None (not given) is always allowed.
FIELD_RANGES: dict[str, count | number] = {
    "batch_size": SAMPLES,
    "threads": THREADS,
    "repetitions": REPETITIONS,
    "min_seconds": SECONDS,
    "warmup_max_seconds": SECONDS,
    "steps": TRAINING_STEPS,
    "target_qps": RATE,
    "concurrency": CONCURRENCY,
    "latency_slo_ms": MILLISECONDS,
    "ttft_slo_ms": MILLISECONDS,
    "tpot_slo_ms": MILLISECONDS,
    "sequence_length": SAMPLES,
    "output_tokens": SAMPLES,
    "learning_rate": LEARNING_RATE,
    "seed": SEED,
    "peak_tflops": PEAK_TFLOPS,
}


def available_threads() -> int:
    """CPUs this process may run on (affinity), which is what a thread count should default to."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@dataclass(frozen=True)
class RunSpec:
    """One run. None means "the default for this phase/workload" (resolved by `resolved()`)."""

    phase: str
    workload: str
    precision: str = "fp32"
    batch_size: int | None = None
    scenario: str | None = None
    backend: str | None = None
    device: str = "cpu"
    threads: int | None = None
    repetitions: int | None = None
    min_seconds: float | None = None
    warmup_max_seconds: float | None = None
    # The measured window's time cap, all repetitions together (default 900 s, 60 s quick): a run it stops is
    # kept, marked truncated with the reason (a failed `finished_within_time_cap` validity check).
    max_seconds: float | None = None
    steps: int | None = None
    target_qps: float | None = None
    concurrency: int | None = None
    latency_slo_ms: float | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    sequence_length: int | None = None
    output_tokens: int | None = None
    learning_rate: float = 3e-4
    quick: bool = False
    seed: int = 1234
    isolation: str | None = None
    submitter: str = "local"
    peak_tflops: float | None = None
    peak_source: str | None = None
    # Test and diagnostic setting: a pause of `sleep_ms` after each query, inside the timed region, for injecting
    # a known slowdown (a query of 2 ms with sleep_ms 50 takes 52 ms; with 104, about twice as long).
    # Recorded as software.settings["runner.sleep_ms"].
    sleep_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.phase not in ("inference", "training"):
            raise ValueError(f"phase must be inference or training, not {self.phase!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.phase == "inference" and self.scenario not in (None, *INFERENCE_SCENARIOS):
            raise ValueError(f"inference scenarios: {', '.join(INFERENCE_SCENARIOS)}")
        if self.phase == "training" and self.scenario not in (None, "fixed-steps"):
            raise ValueError("the bundled training runner runs the fixed-steps scenario")
        for name, kind in FIELD_RANGES.items():
            value = getattr(self, name)
            if value is not None and (why := kind.problem(value)):
                raise ValueError(f"{name}: {why}")
        if self.peak_tflops is not None and not self.peak_source:
            raise ValueError("a stated peak needs its source (peak_source)")
        if not (math.isfinite(self.sleep_ms) and 0.0 <= self.sleep_ms <= 10_000.0):
            raise ValueError(f"sleep_ms must be between 0 and 10000, not {self.sleep_ms!r}")
        if self.max_seconds is not None and not (math.isfinite(self.max_seconds) and self.max_seconds >= 1.0):
            raise ValueError(f"max_seconds must be at least {rules.MIN_WINDOW_SECONDS:g}, not {self.max_seconds!r}")
        if self.sleep_ms and self.phase != "inference":
            raise ValueError("sleep_ms is a setting of the inference runner only")
        workload = get(self.workload)
        # A length the model never reads would be stated in the document's shape (and turned into tokens/s).
        if self.sequence_length is not None and not workload.is_transformer:
            raise ValueError(
                f"{self.workload} takes fixed-size feature vectors, not token sequences: --sequence-length is for "
                f"{', '.join(sorted(n for n, w in WORKLOADS.items() if w.is_transformer))}"
            )
        if self.output_tokens is not None and not workload.is_decoder:
            raise ValueError(
                f"{self.workload} generates no tokens: --output-tokens is for "
                f"{', '.join(sorted(n for n, w in WORKLOADS.items() if w.is_decoder))}"
            )

    @property
    def definition(self) -> Workload:
        return get(self.workload)

    def resolved(self) -> RunSpec:
        """This spec with every default filled in."""
        w = self.definition
        server = self.scenario == "server"
        return replace(
            self,
            batch_size=self.batch_size or w.default_shape.batch_size,
            scenario=self.scenario or ("fixed-steps" if self.phase == "training" else "offline"),
            threads=self.threads or available_threads(),
            # 3 is the fewest repetitions a comparison forms an interval (and a verdict) on; 5 halves the
            # interval's width at 3 (t 2.78/√5 against 4.30/√3). docs/statistics.md has the calibration.
            repetitions=self.repetitions or (3 if self.quick or self.phase == "training" else 5),
            min_seconds=self.min_seconds or (1.0 if self.phase == "training" else 0.6 if self.quick else 5.0),
            steps=(self.steps or (30 if self.quick else 500)) if self.phase == "training" else None,
            target_qps=self.target_qps or (10.0 if server else None),
            concurrency=self.concurrency or (4 if server else None),
        )

    def shape(self) -> Shape:
        return self.definition.shape(
            self.batch_size or self.definition.default_shape.batch_size, self.sequence_length, self.output_tokens
        )

    def policy(self) -> Policy:
        """Warm-up and window limits; training measures `steps` steps (extended to the 1 s minimum)."""
        r = self.resolved()
        assert r.repetitions is not None and r.min_seconds is not None
        warm_cap = self.warmup_max_seconds or (3.0 if self.quick else 30.0)
        block = 0.1 if self.quick else 0.2
        if self.phase == "training":
            return self._training_policy(r, warm_cap, block)
        return Policy(
            repetitions=r.repetitions,
            min_seconds=r.min_seconds,
            min_iterations=10 if self.quick else 50,
            warmup_max_seconds=warm_cap,
            warmup_block_seconds=block,
            max_seconds=self.max_seconds or (60.0 if self.quick else 900.0),
        )

    def _training_policy(self, r: RunSpec, warm_cap: float, block: float) -> Policy:
        # The requested steps are split over the repetitions: as many steps as before, and each
        # repetition is one independent value for the comparison's interval.
        assert r.steps is not None and r.repetitions is not None and r.min_seconds is not None
        per_rep = max(math.ceil(r.steps / r.repetitions), rules.MIN_WINDOW_ITERATIONS)
        return Policy(
            repetitions=r.repetitions,
            min_seconds=max(r.min_seconds, rules.MIN_WINDOW_SECONDS) / r.repetitions,
            min_iterations=per_rep,
            max_iterations=max(per_rep, 100_000),
            warmup_max_seconds=warm_cap,
            warmup_block_seconds=block,
            max_seconds=self.max_seconds or (60.0 if self.quick else 900.0),
        )

    def slo(self) -> dict[str, Any]:
        """The latency objective goodput is measured against."""
        if self.definition.is_decoder:
            base = DEFAULT_SLO_MS[self.workload]
            return {"ttft_p99": self.ttft_slo_ms or base["ttft_p99"], "tpot_p99": self.tpot_slo_ms or base["tpot_p99"]}
        return {"latency_p99": self.latency_slo_ms or DEFAULT_LATENCY_SLO_MS}


# The precisions the backends state as a weight format (runners/backends' precision sections).
_WEIGHT_FORMATS = {"int8": "int8", "fp8": "fp8-e4m3"}


def expected_fields(spec: RunSpec) -> dict[str, Any]:
    """What the document a run of `spec` produces must state, by JSON pointer.

    The registry holds an agent's run to this before linking it to its job ("vouched" means the run is
    the job it was given). Only what the spec fixes is listed: what the runner measures is not.
    """
    r = spec.resolved()
    out: dict[str, Any] = {
        "/phase": r.phase,
        "/workload/name": r.workload,
        "/scenario/kind": r.scenario,
        "/workload/shape/batch_size": r.batch_size,
    }
    # The backends' precision sections (runners/backends): int8 and fp8 are weight formats, the others
    # the format activations are computed in (weights stay fp32 under autocast).
    if r.precision in _WEIGHT_FORMATS:
        out["/precision/weights"] = _WEIGHT_FORMATS[r.precision]
    else:
        out["/precision/activations"] = r.precision
    if r.sequence_length is not None:
        out["/workload/shape/sequence_length"] = r.sequence_length
    if r.output_tokens is not None:
        out["/workload/shape/output_tokens"] = r.output_tokens
    out.update(_scenario_fields(r))
    return out


def _scenario_fields(r: RunSpec) -> dict[str, Any]:
    """The inference window's and settings' fields, and the server scenario's load."""
    out: dict[str, Any] = {}
    if r.phase == "inference":
        out["/conditions/window/repetitions"] = r.repetitions
        out["/software/settings/runner.sleep_ms"] = float(r.sleep_ms)
    if r.scenario == "server":
        out["/scenario/target_qps"] = r.target_qps
        out["/scenario/concurrency"] = r.concurrency
    return out
