"""The bundled training runner (`benchreg.runners.training`): fixed-steps training with a timed breakdown.

Every step is timed phase by phase (data, forward, backward, optimizer) with a device synchronisation
after each phase, so the breakdown adds up to the step time; the price is that phases cannot overlap
(e.g. the next batch's copy with this step's compute), which a production loop may do. Warm-up steps
train too (the loss check covers the whole run) but are not in the window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import stats, workloads
from .backends import Backend, Trainer
from .inference import framework_versions, verdict_line, workload_section
from .measure import Policy, Warmup, Window, measure, warm_up
from .progress import Reporter
from .record import Recorder
from .spec import RunSpec

PHASES = ("data", "forward", "backward", "optimizer")
Section = dict[str, Any]  # a section of the run document


@dataclass
class StepLoop:
    """Runs training steps; each call times one step and keeps its phase times and loss."""

    trainer: Trainer
    backend: Backend
    step: int = 0
    phases: list[tuple[float, float, float, float]] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        sync, t = self.backend.synchronize, time.perf_counter_ns
        sync()
        t0 = t()
        batch = self.trainer.data(self.step)
        sync()
        t1 = t()
        loss = self.trainer.forward(batch)
        sync()
        t2 = t()
        self.trainer.backward(loss)
        sync()
        t3 = t()
        self.trainer.optimizer_step()
        sync()
        t4 = t()
        self.losses.append(self.trainer.loss_value(loss))  # outside the timed phases: .item() syncs
        self.phases.append(((t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6, (t4 - t3) / 1e6))
        self.step += 1
        return (t4 - t0) / 1e6


def loss_summary(losses: list[float]) -> dict[str, Any]:
    """First and last loss as means of the first and last tenth of all steps (single steps are noisy)."""
    k = max(1, len(losses) // 10)
    first, last = float(np.mean(losses[:k])), float(np.mean(losses[-k:]))
    return {"first": round(first, 6), "last": round(last, 6), "decreased": bool(round(last, 6) < round(first, 6))}


def _flops(spec: RunSpec, backend: Backend, step_ms: float) -> dict[str, Any]:
    per_step = workloads.training_flops(spec.definition, spec.shape())
    achieved = per_step / (step_ms / 1e3) / 1e12
    peak: float | None
    if spec.peak_tflops is not None:
        peak, source = spec.peak_tflops, spec.peak_source or ""
    else:
        peak, source = backend.peak_tflops(spec.precision)
    mfu = round(achieved / peak, 6) if peak else None
    if mfu is not None and mfu > 1.0:  # a measured peak below what the model achieved is no peak at all
        mfu, source = None, f"{source}; below the achieved rate, so MFU is omitted"
    return {
        "per_step": per_step,
        "achieved_tflops": round(achieved, 6),
        "peak_tflops": peak,
        "peak_source": source,
        "mfu": mfu,
    }


def run(spec: RunSpec, backend: Backend, report: Reporter) -> dict[str, Any]:
    """Train one configuration for its steps and return the validated document."""
    spec = spec.resolved()
    assert spec.threads is not None
    policy = spec.policy()
    recorder, loop = _prepare(spec, backend)
    warm, window, first_window_step = _timed(loop, recorder, policy, report)
    verdict = stats.assess(window.samples)
    capped, cap_reasons = window.truncation(policy)  # steps too slow to time the minimum count
    reasons = warm.reasons(policy) + cap_reasons
    report.note(verdict_line(verdict, reasons))
    metrics = _metrics(spec, backend, recorder, loop, window, first_window_step)
    steady = verdict.as_document(reasons)
    conditions = recorder.conditions(
        policy, warm, window.total_seconds, window.iterations, steady, spec.isolation, capped or None
    )
    return _document(spec, recorder, warm, window, metrics, conditions)


def _prepare(spec: RunSpec, backend: Backend) -> tuple[Recorder, StepLoop]:
    assert spec.threads is not None
    backend.check("training", spec.definition, spec.precision)
    backend.configure(spec.threads, spec.precision)
    recorder = Recorder(backend, "training", spec.submitter)
    trainer = backend.trainer(spec.definition, spec.shape(), spec.precision, spec.seed, spec.learning_rate)
    return recorder, StepLoop(trainer, backend)


def _timed(loop: StepLoop, recorder: Recorder, policy: Policy, report: Reporter) -> tuple[Warmup, Window, int]:
    """Warm up, then time the window: (warm-up, window, the step the window starts at)."""
    warm = warm_up(loop, policy, report)
    first_window_step = len(loop.phases)
    recorder.window_start()
    window = measure(loop, policy, report, warm)
    recorder.window_stop()
    return warm, window, first_window_step


def _metrics(
    spec: RunSpec, backend: Backend, recorder: Recorder, loop: StepLoop, window: Window, first_window_step: int
) -> dict[str, Any]:
    shape, step_ms = spec.shape(), window.samples
    breakdown = np.median(np.asarray(loop.phases[first_window_step:]), axis=0)
    samples_per_s = window.iterations * shape.batch_size / window.total_seconds
    metrics: dict[str, Any] = {
        "primary": "throughput",
        "throughput": {"value": round(samples_per_s, 4), "unit": "samples/s"},
        "step_time_ms": stats.distribution(step_ms),
        "step_breakdown_ms": {name: round(float(v), 6) for name, v in zip(PHASES, breakdown, strict=True)},
        "memory": recorder.memory(),
        "flops": _flops(spec, backend, float(np.median(step_ms))),
        "loss": loss_summary(loop.losses),
        "energy": recorder.energy(window.total_seconds),
    }
    if shape.sequence_length:
        metrics["tokens_per_second"] = {"value": round(samples_per_s * shape.sequence_length, 4), "unit": "tokens/s"}
    return metrics


def _document(
    spec: RunSpec, recorder: Recorder, warm: Warmup, window: Window, metrics: Section, conditions: Section
) -> Section:
    backend = recorder.backend
    scenario = {"kind": "fixed-steps", "steps": spec.steps, "optimizer": "adamw", "learning_rate": spec.learning_rate}
    notes = {
        "training.steps": f"{warm.iterations} warm-up + {window.iterations} measured steps; "
        f"step breakdown is the median of each phase over the window; "
        f"loss first/last are means over the first/last tenth of all steps"
    }
    return recorder.document(
        workload=workload_section(spec, "training"),
        scenario=scenario,
        precision=backend.precision_section("training", spec.precision),
        conditions=conditions,
        metrics=metrics,
        samples={"step_time_ms": {"unit": "ms", "repetitions": [[round(x, 6) for x in r] for r in window.repetitions]}},
        framework=framework_versions(backend),
        software_notes=notes,
    )
