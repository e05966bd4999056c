"""Building test documents from the examples (plain Python, no Django)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any


def variant(document: dict[str, Any], system: str, throughput: float | None = None, **edits: Any) -> dict[str, Any]:
    """A copy of `document` on another system, with dotted-path edits ("precision.weights": "int8")."""
    doc = copy.deepcopy(document)
    doc["system"]["name"] = system
    if throughput is not None:
        doc["metrics"]["throughput"]["value"] = throughput
    for path, value in edits.items():
        node = doc
        *parents, last = path.split(".")
        for part in parents:
            node = node[part]
        node[last] = value
    return doc


# all_reduce over 8 ranks, 1 MiB of float in 100 us: algbw = 1048576 B / 1e9 / 1e-4 s = 10.48576 GB/s, busbw =
# algbw x 2(8-1)/8 = 18.35008 GB/s (nccl-tests' AllReduceGetBw). 8 B in 20 us: 0.0004 and 0.0007 GB/s.
COLLECTIVE_SIZES = [
    {"size_bytes": 8, "count": 2, "side": "in-place", "time_us": 20.0, "algbw_gbs": 0.0004, "busbw_gbs": 0.0007},
    {
        "size_bytes": 1048576,
        "count": 262144,
        "side": "in-place",
        "time_us": 100.0,
        "algbw_gbs": 10.48576,
        "busbw_gbs": 18.35008,
    },
]


def collective_document(**block: Any) -> dict[str, Any]:
    """A minimal valid collective run: an 8-rank all-reduce sweep measured by a runner (exact figures)."""
    metrics = {"collective": "all_reduce", "dtype": "float", "ranks": 8, "time_statistic": "max-over-ranks"}
    metrics |= {"sizes": copy.deepcopy(COLLECTIVE_SIZES)} | block
    return {
        "protocol": "benchreg.submission/1.3",
        "phase": "collective",
        "workload": {"name": "all_reduce", "version": "nccl-tests-2017", "shape": {"batch_size": 1}},
        "scenario": {"kind": "collective-sweep"},
        "precision": {"weights": "fp32", "activations": "fp32"},
        "system": {"name": "node", "nodes": 1, "accelerators": [], "host": None},
        "software": {"os": None, "communication": {"library": "nccl", "version": "2.21.5", "env": {}}},
        "conditions": {"window": {"iterations": 20}, "steady_state": {"method": "not-assessed", "reached": None}},
        "metrics": {"primary": "collectives", "collectives": metrics},
        "provenance": {"runner": {"name": "t", "version": "1"}, "submitter": "me", "source": "runner"},
    }


# A scaling plan's sizes (protocol 1.3) from a real 2-rank gloo run, stretched by a known law: weak scaling, step time
# t(1) × (1 + 0.1 log2 n), so the efficiency at n devices is exactly 1 ÷ (1 + 0.1 log2 n).
SCALING_RUN: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "tests/protocol/data/distributed_training_ddp_2.json").read_text()
)
PER_DEVICE = 16
SLOWER_PER_DOUBLING = 0.1


def scaling_stretch(n: int) -> float:
    """The law's step time at n devices over that at 1."""
    return 1 + SLOWER_PER_DOUBLING * math.log2(n)


def scaling_size_document(plan: str, devices: list[int], index: int, repeat: int = 0) -> dict[str, Any]:
    """The fixture run at devices[index] devices of weak scaling plan `plan`: every step time stretched by the law,
    the throughput and every derived figure recomputed so the document passes the protocol's checks; the last rank
    is the slowest (20 ms more busy time)."""
    n = devices[index]
    doc, f = copy.deepcopy(SCALING_RUN), scaling_stretch(n)
    reps = [[t * f for t in rep] for rep in doc["samples"]["step_time_ms"]["repetitions"]]
    doc["samples"]["step_time_ms"]["repetitions"] = reps
    for stat in ("min", "mean", "stdev", "p50", "max"):
        doc["metrics"]["step_time_ms"][stat] *= f
    doc["conditions"]["window"]["seconds"] = round(doc["conditions"]["window"]["seconds"] * f, 4)
    layout = doc["scenario"]["distributed"]
    layout.update(world_size=n, processes_per_node=n, per_device_batch=PER_DEVICE, global_batch=PER_DEVICE * n)
    layout["scaling"] = {"id": plan, "mode": "weak", "index": index, "devices": devices, "repeat": repeat}
    doc["workload"]["shape"].update(batch_size=PER_DEVICE * n, micro_batch_size=PER_DEVICE)
    times = [t for rep in reps for t in rep]
    throughput = PER_DEVICE * n * 1000 * len(times) / sum(times)
    doc["metrics"]["throughput"]["value"] = throughput
    step = doc["metrics"]["step_time_ms"]["p50"]
    ranks = [_rank(r, step, 3.0 + 20.0 * (r == n - 1), throughput / n) for r in range(n)]
    figures = doc["metrics"]["distributed"]
    figures.update(samples_per_second_per_device=throughput / n, slowest_rank=n - 1, ranks=ranks)
    figures["communication"]["share"] = sum(r["communication_share"] for r in ranks) / n
    return doc


def _rank(rank: int, step: float, busy: float, rate: float) -> dict[str, Any]:
    comm = step - busy
    figures = {
        "rank": rank,
        "step_time_ms": step,
        "busy_ms": busy,
        "communication_ms": comm,
        "samples_per_second": rate,
    }
    return {**SCALING_RUN["metrics"]["distributed"]["ranks"][0], **figures, "communication_share": comm / step}


def scaling_plan_documents(plan: str, devices: list[int], repeats: int = 2) -> list[dict[str, Any]]:
    """Every size of plan `plan`, `repeats` runs each (repeat 0 of every size first)."""
    return [scaling_size_document(plan, devices, i, r) for r in range(repeats) for i in range(len(devices))]
