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
from .statistics import (
    CONFIDENCE,
    MIN_VALUES,
    geometric_mean,
    log_ratio_interval,
    rounded,
    throughput_per_repetition,
)


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
    """E(n) = S(n) × n_ref ÷ n against `reference` (n_ref devices; 1 for a plan): S(n) is the ratio of the sizes'
    geometric mean rates, with Welch's interval on mean logs where both sides have MIN_VALUES values."""
    n, scale = size.devices, reference.devices / size.devices
    if size is reference:  # 1 by definition: an interval of the runs against themselves would only show their noise
        return Efficiency(n, 1.0, 1.0, None, None, len(size.values), "the reference: 1 by definition")
    base, subject = np.asarray(reference.values), np.asarray(size.values)
    if min(base.size, subject.size) < MIN_VALUES:
        speedup = geometric_mean(subject) / geometric_mean(base)
        words = f"fewer than {MIN_VALUES} independent values at {n} or {reference.devices} device(s): no interval"
        return Efficiency(n, speedup, speedup * scale, None, None, int(subject.size), words)
    ratio, low, high = (float(x) for x in log_ratio_interval(subject, base, confidence))
    words = f"{confidence:.0%} Welch t interval on mean logs, {subject.size} and {base.size} values"
    return Efficiency(n, ratio, ratio * scale, low * scale, high * scale, int(subject.size), words)


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


# --- the sizes of one configuration, compared (the comparability contract's scaling axis) -----------------------------

ONE_RESULT_PER_SIZE = "no interval, one result per size"
NOT_MLPERF = "derived, not an MLPerf metric"


def size_of(doc: dict[str, Any], where: str = "") -> int:
    """A run's size in devices: its distributed world size, else the accelerators its system lists."""
    world = (doc.get("scenario", {}).get("distributed") or {}).get("world_size")
    if isinstance(world, int) and world > 0:
        return world
    counts = [a.get("count") for a in doc.get("system", {}).get("accelerators") or [] if isinstance(a, dict)]
    total = sum(c for c in counts if isinstance(c, int) and c > 0)
    if total < 1:
        raise ScalingError(f"{where}/system/accelerators", "a run on the scaling axis needs its accelerator count")
    return total


def rates(doc: dict[str, Any], where: str = "") -> tuple[str, list[float]]:
    """The run's headline as independent rates (higher is faster): throughputs, or 1 ÷ time to train, so that one
    speedup serves both (T_base ÷ T(n) for times). Returns (the headline metric, its rates)."""
    if doc.get("metrics", {}).get("primary") == "time_to_quality":
        seconds = doc["metrics"].get("time_to_quality", {}).get("seconds")
        if not isinstance(seconds, int | float) or seconds <= 0:
            raise ScalingError(f"{where}/metrics/time_to_quality/seconds", "a time to train is needed")
        return "time_to_quality", [1.0 / float(seconds)]
    return "throughput", throughput_values(doc, where)


def curve(documents: Sequence[dict[str, Any]], confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The runs of one configuration at several sizes (a comparison on the scaling axis) as a JSON value: per size,
    smallest first, its runs (indices), headline (geometric mean throughput, or time to train), speedup and
    efficiency against the smallest size present (the base, named), E(n) = S(n) × n_base ÷ n, with the interval of
    `_at` where both sizes have MIN_VALUES values. For time to train, E(n) = (T_base × n_base) ÷ (T(n) × n)."""
    metrics: set[str] = set()
    by_size: dict[int, list[int]] = {}
    nodes: dict[int, set[int]] = {}
    values: dict[int, list[float]] = {}
    for i, doc in enumerate(documents):
        n = size_of(doc, f"/{i}")
        metric, found = rates(doc, f"/{i}")
        metrics.add(metric)
        by_size.setdefault(n, []).append(i)
        values.setdefault(n, []).extend(found)
        stated = (doc.get("scenario", {}).get("distributed") or {}).get("nodes") or doc.get("system", {}).get("nodes")
        nodes.setdefault(n, set()).update([stated] if isinstance(stated, int) else [])
    if len(metrics) > 1:
        raise ScalingError("/metrics/primary", "the sizes report different headlines (throughput and time to train)")
    (metric,) = metrics
    sizes = [SizePoint(n, tuple(values[n]), len(by_size[n])) for n in sorted(by_size)]
    base = sizes[0]
    one_each = all(len(s.values) == 1 for s in sizes)
    rows = [_curve_row(s, _at(s, base, confidence), by_size[s.devices], nodes[s.devices], metric) for s in sizes]
    mlperf = any((d.get("provenance", {}).get("origin") or {}).get("kind") == "mlperf-training" for d in documents)
    return {
        "metric": metric,
        "unit": "s" if metric == "time_to_quality" else "samples/s",
        "base": {"devices": base.devices, "words": f"the smallest size present, {base.devices} device(s)"},
        "formula": (
            "speedup S(n) = T_base ÷ T(n), efficiency E(n) = (T_base × n_base) ÷ (T(n) × n), T the time to train"
            if metric == "time_to_quality"
            else "speedup S(n) = X(n) ÷ X_base, efficiency E(n) = S(n) × n_base ÷ n, X the throughput"
        ),
        "label": NOT_MLPERF if mlperf else None,
        "interval": ONE_RESULT_PER_SIZE
        if one_each
        else f"{confidence:.0%} Welch t interval where both sizes have {MIN_VALUES} or more values",
        "sizes": rows,
    }


def _curve_row(size: SizePoint, e: Efficiency, runs: list[int], nodes: set[int], metric: str) -> dict[str, Any]:
    mean = geometric_mean(np.asarray(size.values))
    return {
        "devices": size.devices,
        "nodes": sorted(nodes),
        "runs": runs,
        "values": len(size.values),
        "value": rounded(1.0 / mean if metric == "time_to_quality" else mean),
        "speedup": rounded(e.speedup),
        "efficiency": rounded(e.efficiency),
        "ci_low": rounded(e.low),
        "ci_high": rounded(e.high),
        "evidence": e.evidence,
    }
