"""The protocol 1.3 document of one distributed training run, from every rank's figures (docs/protocol.md 1.3).

A world's steps are as long as its slowest rank's (every step ends in a collective), so the run's step times are those
of the rank with the longest window, and throughput is the measured steps' samples over that window. A
rank's busy time is its step time less its time in communication: the rank with the most is the slowest (the others
wait for it inside the collectives, which their communication time shows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import stats
from ..backends import Backend
from ..inference import framework_versions, workload_section
from ..measure import Policy, Warmup
from ..record import Recorder
from ..training import loss_summary
from .options import LAUNCHER, Options
from .worker import RankFigures

VERSION = "1.3"
RUNNER = "benchreg.runners.distributed_training"
METHOD = (
    "per rank and step: the union of the intervals from issuing each gradient collective (DDP comm hook; FSDP2 "
    "custom all-gather and reduce-scatter) to its completion on that rank ({clock}), waiting for late peers included; "
    "no barrier between steps; the run's figure is the mean over ranks of each rank's median"
)


def rank_section(f: RankFigures, options: Options) -> dict[str, Any]:
    """One rank's figures: medians over the measured steps; its own samples/s over its own window."""
    step, comm = np.asarray(f.step_ms), np.asarray(f.communication_ms)
    samples = len(f.step_ms) * options.per_device_batch * options.accumulation
    median_step, median_comm = float(np.median(step)), float(np.median(comm))
    return {
        "rank": f.rank,
        "node": f.node,
        "device": f.device,
        "samples_per_second": round(samples / f.window_s, 4),
        "step_time_ms": round(median_step, 6),
        "busy_ms": round(float(np.median(step - comm)), 6),
        "communication_ms": round(median_comm, 6),
        "communication_share": round(min(1.0, median_comm / median_step), 6) if median_step > 0 else 0.0,
        "peak_memory_bytes": f.peak_memory_bytes,
        "memory_kind": f.memory_kind,
    }


def figures(ranks: list[RankFigures], options: Options, throughput: float, cuda: bool) -> dict[str, Any]:
    """metrics.distributed: per device, communication, the slowest rank and the spread of busy times."""
    each = [rank_section(f, options) for f in sorted(ranks, key=lambda f: f.rank)]
    busy = np.asarray([r["busy_ms"] for r in each])
    slowest = int(each[int(np.argmax(busy))]["rank"])
    median_busy = float(np.median(busy))
    return {
        "samples_per_second_per_device": round(throughput / options.world_size, 4),
        "communication": {
            "ms_per_step": round(float(np.mean([r["communication_ms"] for r in each])), 6),
            "share": round(float(np.mean([r["communication_share"] for r in each])), 6),
            "method": METHOD.format(clock="CUDA events on the collective's stream" if cuda else "host clock"),
        },
        "slowest_rank": slowest,
        "busy_spread": round(float(busy.max() - busy.min()) / median_busy, 6) if median_busy > 0 else None,
        "ranks": each,
    }


def layout(options: Options, backend: dict[str, Any]) -> dict[str, Any]:
    """scenario.distributed: the world, the parallelism, the batch, the backend and (in a plan) the scaling size."""
    out: dict[str, Any] = {
        "parallelism": options.parallelism,
        "world_size": options.world_size,
        "nodes": options.nnodes,
        "processes_per_node": options.nproc_per_node,
        "per_device_batch": options.per_device_batch,
        "global_batch": options.global_batch,
        "gradient_accumulation": options.accumulation,
        "backend": {"name": backend["name"], "version": backend["version"]},
        "launcher": LAUNCHER,
    }
    if options.scaling is not None:
        s = options.scaling
        out["scaling"] = {"id": s.id, "mode": s.mode, "index": s.index, "devices": list(s.devices), "repeat": s.repeat}
    return out


def world_steps(ranks: list[RankFigures]) -> np.ndarray:
    """The world's step times: those of the rank whose window was longest (the one throughput divides by). Not the
    longest over the ranks step by step: ranks' steps end at different instants (a fast rank's step i holds its wait
    for the slow rank), so those maxima add up to more than any rank's window."""
    return np.asarray(max(ranks, key=lambda f: f.window_s).step_ms)


def metrics_section(ranks: list[RankFigures], options: Options, cuda: bool) -> dict[str, Any]:
    """The run's metrics: world throughput over the longest rank window, its steps, the largest memory peak."""
    steps = world_steps(ranks)
    throughput = steps.size * options.global_batch / max(f.window_s for f in ranks)
    memory = max(ranks, key=lambda f: f.peak_memory_bytes or 0)
    return {
        "primary": "throughput",
        "throughput": {"value": round(throughput, 4), "unit": "samples/s"},
        "step_time_ms": stats.distribution(steps),
        "memory": {"peak_bytes": memory.peak_memory_bytes, "kind": memory.memory_kind},
        "loss": loss_summary(ranks[0].losses),
        "distributed": figures(ranks, options, throughput, cuda),
    }


def build(options: Options, backend: Backend, recorder: Recorder, outcome: dict[str, Any]) -> dict[str, Any]:
    """The validated document (raises protocol.Invalid on a runner bug)."""
    ranks: list[RankFigures] = outcome["ranks"]
    spec = options.spec.resolved()
    steps = world_steps(ranks)
    measured = int(steps.size)  # options.steps, or more to fill the protocol's minimum window (worker.py)
    repetitions = [[round(float(x), 6) for x in part] for part in np.array_split(steps, options.repetitions)]
    warm = Warmup(options.warmup_steps, round(max(f.warmup_s for f in ranks), 4), True, ())
    window_s, verdict = max(f.window_s for f in ranks), stats.assess(steps).as_document()
    policy = Policy(repetitions=options.repetitions)
    conditions = recorder.conditions(policy, warm, window_s, measured, verdict, spec.isolation)
    workload = workload_section(spec, "training")
    workload["shape"].update(
        batch_size=options.global_batch,
        micro_batch_size=options.per_device_batch,
        gradient_accumulation_steps=options.accumulation,
    )
    scenario = {"kind": "fixed-steps", "steps": measured, "optimizer": "adamw", "learning_rate": spec.learning_rate}
    return recorder.document(
        workload=workload,
        scenario={**scenario, "distributed": layout(options, outcome["backend"])},
        precision=backend.precision_section("training", spec.precision),
        conditions=conditions,
        metrics=metrics_section(ranks, options, spec.device == "cuda"),
        samples={"step_time_ms": {"unit": "ms", "repetitions": repetitions}},
        framework=framework_versions(backend),
        software_notes=_notes(options, max(ranks, key=lambda f: f.peak_memory_bytes or 0), measured),
        settings=options.injected.settings() if options.injected.any() else None,
        nodes=options.nnodes,
    )


def _notes(options: Options, memory: RankFigures, measured: int) -> dict[str, str]:
    notes = {
        "training.steps": f"{options.warmup_steps} warm-up + {measured} measured optimizer steps on each of "
        f"{options.world_size} rank(s); a step's time is the longest over the ranks; loss first/last are rank 0's",
        "distributed.memory": f"metrics.memory is the largest peak over the ranks (rank {memory.rank}); each rank's "
        "own is in metrics.distributed.ranks",
    }
    if options.nnodes > 1:
        notes["distributed.nodes"] = (
            f"{options.nnodes} nodes of {options.nproc_per_node} rank(s) each met at one c10d rendezvous; system "
            "describes node 0's host (which wrote this run); each rank's node and device are in "
            "metrics.distributed.ranks"
        )
    if memory.memory_note:
        notes["distributed.memory_note"] = memory.memory_note
    if options.injected.any():
        notes["runner.injected"] = (
            "known delays were injected for a truth test: see software.settings runner.injected.*"
        )
    return notes
