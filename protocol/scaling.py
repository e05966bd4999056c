"""Scaling efficiency of a plan: one configuration measured at 1, 2, 4, … devices (docs/distributed-training.md).

The runs of one plan share `scenario.distributed.scaling.id`. At n devices the speedup is S(n) = T(n) ÷ T(1), the
ratio of the geometric means of the global throughputs (samples/s), and the efficiency E(n) = S(n) ÷ n: 1 is ideal.
Weak scaling (fixed per-device batch) and strong scaling (fixed global batch) both divide throughput by throughput:
with G samples a step and step time t, T = G ÷ t, so strong scaling's E(n) = t(1) ÷ (n · t(n)), the textbook
definition, and weak scaling's E(n) = per-device throughput at n ÷ the throughput of one device.

The independent values are one throughput per repetition of every run (`statistics.throughput_per_repetition` of its
raw step times), as for every other interval in benchreg (docs/statistics.md); the interval of E(n) is Welch's t
interval on the difference of mean logs (`statistics.log_ratio_interval`) divided by n, the exact reading of a
ratio of geometric means. Fewer than MIN_VALUES values on either side: the point alone, and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .numbers import Style, number
from .statistics import CONFIDENCE, MIN_VALUES, geometric_mean, log_ratio_interval, throughput_per_repetition


class ScalingError(ValueError):
    """Documents that do not form a scaling plan (the caller's mistake), with the JSON pointer of the cause."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"{pointer}: {message}")
        self.pointer = pointer


@dataclass(frozen=True)
class SizePoint:
    """One size of a plan: its device count and its independent throughput values (samples/s)."""

    devices: int
    values: tuple[float, ...]
    runs: int


@dataclass(frozen=True)
class Plan:
    """The runs of one scaling plan, by size, smallest first."""

    id: str
    mode: str
    sizes: tuple[SizePoint, ...]


@dataclass(frozen=True)
class Efficiency:
    """Efficiency at one size against the 1-device runs; low and high are None where the evidence is too thin."""

    devices: int
    speedup: float
    efficiency: float
    low: float | None
    high: float | None
    values: int
    evidence: str


def throughput_values(doc: dict[str, Any], where: str = "") -> list[float]:
    """A run's independent throughputs: one per repetition of its raw step times, else its one headline."""
    batch = doc.get("workload", {}).get("shape", {}).get("batch_size")
    reps = doc.get("samples", {}).get("step_time_ms", {}).get("repetitions")
    if isinstance(batch, int) and isinstance(reps, list) and reps and all(reps):
        return [float(throughput_per_repetition(np.asarray(r, dtype=np.float64), batch)) for r in reps]
    value = doc.get("metrics", {}).get("throughput", {}).get("value")
    if not isinstance(value, int | float) or value <= 0:
        raise ScalingError(f"{where}/metrics/throughput/value", "a run of a scaling plan needs its throughput")
    return [float(value)]


def points(documents: Iterable[dict[str, Any]]) -> list[Plan]:
    """Group documents into plans by scaling id (in order of first appearance); every one must belong to a plan."""
    grouped: dict[str, tuple[str, dict[int, list[list[float]]]]] = {}
    for i, doc in enumerate(documents):
        scaling = (doc.get("scenario", {}).get("distributed") or {}).get("scaling")
        where = f"/{i}/scenario/distributed"
        if not isinstance(scaling, dict):
            raise ScalingError(f"{where}/scaling", "this run is not a size of a scaling plan")
        world = doc["scenario"]["distributed"]["world_size"]
        mode, sizes = grouped.setdefault(scaling["id"], (scaling["mode"], {}))
        if scaling["mode"] != mode:
            raise ScalingError(
                f"{where}/scaling/mode", f"plan {scaling['id']} is {mode} scaling, not {scaling['mode']}"
            )
        sizes.setdefault(world, []).append(throughput_values(doc, f"/{i}"))
    return [
        Plan(
            plan_id,
            mode,
            tuple(SizePoint(n, tuple(v for run in runs for v in run), len(runs)) for n, runs in sorted(sizes.items())),
        )
        for plan_id, (mode, sizes) in grouped.items()
    ]


def efficiency(plan: Plan, confidence: float = CONFIDENCE) -> list[Efficiency]:
    """E(n) with its interval at every size of `plan`, against its 1-device runs (1.0 there by definition)."""
    reference = next((s for s in plan.sizes if s.devices == 1), None)
    if reference is None:
        raise ScalingError(
            "/scenario/distributed/scaling/devices", f"plan {plan.id} has no 1-device runs to scale from"
        )
    return [_at(size, reference, confidence) for size in plan.sizes]


def _at(size: SizePoint, reference: SizePoint, confidence: float) -> Efficiency:
    n = size.devices
    if size is reference:  # 1 by definition: an interval of the runs against themselves would only show their noise
        return Efficiency(1, 1.0, 1.0, None, None, len(size.values), "the reference: 1 by definition")
    base, subject = np.asarray(reference.values), np.asarray(size.values)
    if min(base.size, subject.size) < MIN_VALUES:
        speedup = geometric_mean(subject) / geometric_mean(base)
        words = f"fewer than {MIN_VALUES} independent values at {n} or 1 device(s): no interval"
        return Efficiency(n, speedup, speedup / n, None, None, int(subject.size), words)
    ratio, low, high = (float(x) for x in log_ratio_interval(subject, base, confidence))
    words = f"{confidence:.0%} Welch t interval on mean logs, {subject.size} and {base.size} values"
    return Efficiency(n, ratio, ratio / n, low / n, high / n, int(subject.size), words)


def table(plan: Plan, rows: Sequence[Efficiency]) -> str:
    """The plan's efficiency as text, one line a size."""
    lines = [f"scaling plan {plan.id} ({plan.mode}): efficiency against 1 device (1 is ideal)"]
    for r in rows:
        interval = (
            f"[{number(r.low, Style.RATIO)}, {number(r.high, Style.RATIO)}]" if r.low is not None else "(no interval)"
        )
        lines.append(
            f"  {r.devices:>4} device(s): speedup {number(r.speedup, Style.RATIO)}, "
            f"efficiency {number(r.efficiency, Style.RATIO)} {interval}, {r.values} values"
        )
    return "\n".join(lines)
