"""What measured numbers mean for a deployment: derived metrics (energy, cost) and capacity sizing.

Everything here is labelled derived, carries its formula, and states its assumptions in words. Nothing is
ever derived from a rating instead of a measurement: energy comes only from `metrics.energy` (a meter),
never from a power limit or TDP; capacity comes only from a measured rate whose latency met the objective.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import rules
from .statistics import UNIT_NOUN, rounded

SERVING_SCENARIOS = frozenset({"server", "interactive"})
# Which measured rates may stand for a replica's sustainable load, best first. Goodput counts only
# requests that met the run's latency objectives, so it is preferred over the raw request rate.
RATE_PREFERENCE = ("goodput", "request_rate", "throughput", "tokens_per_second")


class SizingError(ValueError):
    """A sizing request that cannot be answered as asked (unknown objective, non-positive load): the caller's
    error, said in words. Any other exception from this module is a bug."""


@dataclass(frozen=True)
class Derived:
    """A number computed from measured ones. `value` is None when it cannot be derived; `reason` says why."""

    name: str
    value: float | None
    unit: str | None
    formula: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    assumption: str | None = None
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "derived": True, "value": rounded(self.value), "unit": self.unit,
                "formula": self.formula, "inputs": dict(self.inputs), "assumption": self.assumption,
                "reason": self.reason}


@dataclass(frozen=True)
class LatencyObjective:
    """A latency service-level objective, e.g. ttft_ms p99 <= 500 ms."""

    metric: str  # one of rules.DISTRIBUTION_METRICS
    percentile: str  # "p50", "p90", "p95", "p99", ...
    max_ms: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LatencyObjective:
        obj = cls(str(data["metric"]), str(data.get("percentile", "p99")), float(data["max_ms"]))
        if obj.metric not in rules.DISTRIBUTION_METRICS or obj.percentile not in rules.PERCENTILES:
            raise SizingError(f"unknown latency objective {obj.metric}.{obj.percentile}")
        if not math.isfinite(obj.max_ms) or obj.max_ms <= 0:
            raise SizingError("a latency objective needs a positive max_ms")
        return obj

    def words(self) -> str:
        return f"{self.metric}.{self.percentile} <= {self.max_ms:g} ms"


@dataclass(frozen=True)
class Sizing:
    """How many replicas of the system as tested carry `target_load`; `replicas` is None when refused."""

    replicas: int | None
    target_load: float
    load_unit: str
    per_replica_rate: float | None
    rate_metric: str | None
    objectives: tuple[str, ...]
    headroom: float
    assumption: str
    reason: str | None = None
    formula: str = "replicas = ceil(target load × (1 + headroom) ÷ measured sustainable rate per replica)"

    def as_dict(self) -> dict[str, Any]:
        return {"derived": True, "replicas": self.replicas, "target_load": rounded(self.target_load),
                "load_unit": self.load_unit, "per_replica_rate": rounded(self.per_replica_rate),
                "rate_metric": self.rate_metric, "latency_objectives": list(self.objectives),
                "headroom": rounded(self.headroom), "formula": self.formula, "assumption": self.assumption,
                "reason": self.reason}


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def system_words(doc: Mapping[str, Any]) -> str:
    system = doc.get("system") or {}
    accels = system.get("accelerators") or []
    parts = [f"{a.get('count', 1)}× {a.get('model', '?')}" for a in accels]
    what = ", ".join(parts) or (system.get("host") or {}).get("cpu_model") or "host CPU"
    return f"{system.get('name', '?')} ({what}, {system.get('nodes', 1)} node(s))"


def energy_per_output(doc: Mapping[str, Any]) -> Derived:
    """Measured energy ÷ outputs, in J per output unit. Never computed from a power limit or TDP."""
    metrics = doc.get("metrics") or {}
    energy, tput = metrics.get("energy"), metrics.get("throughput") or {}
    rate, unit = _num(tput.get("value")), tput.get("unit")
    noun = UNIT_NOUN.get(unit or "", "output")
    name, out_unit = "energy_per_output", f"J/{noun}"
    if not isinstance(energy, dict) or not energy.get("source"):
        return Derived(name, None, out_unit, "average power ÷ throughput",
                       reason="no measured energy (a power limit or TDP is not a measurement)")
    watts, joules = _num(energy.get("average_power_w")), _num(energy.get("joules"))
    inputs = {"source": energy["source"], "scope": energy.get("scope"), "throughput": rate, "unit": unit}
    if not rate:
        return Derived(name, None, out_unit, "average power ÷ throughput", inputs, reason="no throughput")
    if watts is not None:
        return Derived(name, watts / rate, out_unit, "measured average power (W) ÷ throughput (per s)",
                       {**inputs, "average_power_w": watts})
    seconds = _num(((doc.get("conditions") or {}).get("window") or {}).get("seconds"))
    if joules is not None and seconds:
        return Derived(name, joules / (rate * seconds), out_unit,
                       "measured energy (J) ÷ (throughput × window seconds)",
                       {**inputs, "joules": joules, "window_seconds": seconds},
                       assumption="the measured energy covers the measurement window")
    return Derived(name, None, out_unit, "average power ÷ throughput", inputs,
                   reason="energy block has neither average power nor joules over a known window")


def cost_per_million_outputs(doc: Mapping[str, Any], price_per_hour: float | None, currency: str) -> Derived:
    """User-supplied price per system-hour ÷ outputs per hour × 1e6. The price is a stated assumption."""
    tput = (doc.get("metrics") or {}).get("throughput") or {}
    rate, unit = _num(tput.get("value")), tput.get("unit")
    noun = UNIT_NOUN.get(unit or "", "output")
    name, out_unit = "cost_per_million_outputs", f"{currency} per million {noun}s"
    formula = "price per system-hour ÷ (throughput × 3600) × 1,000,000"
    if price_per_hour is None:
        return Derived(name, None, out_unit, formula, reason="no hourly price supplied for this system")
    assumption = (f"price of {price_per_hour:g} {currency} per hour for {system_words(doc)} as supplied by "
                  "the user, fully busy at the measured throughput")
    if not rate:
        return Derived(name, None, out_unit, formula, assumption=assumption, reason="no throughput")
    return Derived(name, price_per_hour / (rate * 3600.0) * 1e6, out_unit, formula,
                   {"price_per_hour": price_per_hour, "currency": currency, "throughput": rate, "unit": unit},
                   assumption=assumption)


def _objectives(value: LatencyObjective | Mapping[str, Any] | Sequence[Any] | None) -> list[LatencyObjective]:
    if value is None:
        return []
    if isinstance(value, LatencyObjective):
        return [value]
    if isinstance(value, Mapping):
        return [LatencyObjective.from_dict(value)]
    return [v if isinstance(v, LatencyObjective) else LatencyObjective.from_dict(v) for v in value]


def _latency_problem(doc: Mapping[str, Any], objectives: list[LatencyObjective]) -> str | None:
    """Why the measured latency does not meet the objectives, or None when it does."""
    scenario = (doc.get("scenario") or {}).get("kind")
    if objectives and scenario not in SERVING_SCENARIOS:
        return (f"a {scenario} run measures no latency under a steady offered load, so it cannot show "
                "whether a latency objective is met; size from a server or interactive run")
    metrics = doc.get("metrics") or {}
    for obj in objectives:
        measured = _num((metrics.get(obj.metric) or {}).get(obj.percentile))
        if measured is None:
            return f"this run did not measure {obj.metric}.{obj.percentile}"
        if measured > obj.max_ms:
            return (f"measured {obj.metric}.{obj.percentile} is {measured:g} ms, above the objective of "
                    f"{obj.max_ms:g} ms: at the tested load this system does not meet it, and a lighter load "
                    "was not measured")
    return None


def sustainable_rate(doc: Mapping[str, Any], load_unit: str) -> tuple[str, float] | None:
    """(metric, value) of the run's best measured rate in `load_unit` (RATE_PREFERENCE order), or None."""
    return _sustainable_rate(doc, load_unit)


def _sustainable_rate(doc: Mapping[str, Any], load_unit: str) -> tuple[str, float] | None:
    metrics = doc.get("metrics") or {}
    for name in RATE_PREFERENCE:
        rate = metrics.get(name)
        if isinstance(rate, dict) and rate.get("unit") == load_unit and _num(rate.get("value")):
            return name, float(rate["value"])
    return None


def replicas_needed(doc: Mapping[str, Any], target_load: float, load_unit: str,
                    latency_objective: LatencyObjective | Mapping[str, Any] | Sequence[Any] | None = None,
                    *, headroom: float = 0.0) -> Sizing:
    """Replicas of the tested system needed to carry `target_load` (in `load_unit`) within the objectives.

    The per-replica rate is a measured one: goodput (else request rate) of a serving run whose latency met
    every objective, or plain throughput when no objective is given. Refuses, with the reason, when the
    latency was above an objective, when no measured rate is in `load_unit`, or for training runs.
    """
    if not math.isfinite(target_load) or target_load <= 0 or not math.isfinite(headroom) or headroom < 0:
        raise SizingError("target_load must be positive and headroom non-negative")
    objectives = _objectives(latency_objective)
    words = tuple(o.words() for o in objectives)
    assumption = (f"each replica is {system_words(doc)} exactly as tested; capacity scales linearly with "
                  f"replicas (load balanced evenly, no shared bottleneck); headroom {headroom:.0%}"
                  + (" (none added)" if headroom == 0 else "")
                  + ("; latency objectives " + ", ".join(words) if words else "; no latency objective"))
    refused = Sizing(None, target_load, load_unit, None, None, words, headroom, assumption)
    if doc.get("phase") != "inference":
        return replace(refused, reason="capacity sizing applies to inference serving; this is a training run")
    problem = _latency_problem(doc, objectives)
    found = _sustainable_rate(doc, load_unit)
    if problem is None and found is None:
        problem = f"no measured rate in {load_unit} in this run"
    if problem is not None or found is None:
        return replace(refused, reason=problem)
    name, rate = found
    replicas = math.ceil(target_load * (1.0 + headroom) / rate - 1e-9)  # tolerate float noise at exact fits
    return replace(refused, replicas=max(replicas, 1), per_replica_rate=rate, rate_metric=name)


def arm_derived(docs: Sequence[dict[str, Any]], prices: Mapping[str, float] | None,
                currency: str) -> list[dict[str, Any]]:
    """Energy per output and (with prices) cost per million outputs for runs repeating one setup: medians."""
    out = []
    energy = [energy_per_output(d) for d in docs]
    candidates = [energy]
    if prices is not None:
        candidates.append([cost_per_million_outputs(
            d, prices.get((d.get("system") or {}).get("name", "")), currency) for d in docs])
    for per_run in candidates:
        values = [x.value for x in per_run if x.value is not None]
        entry = next((x for x in per_run if x.value is not None), per_run[0]).as_dict()
        entry.update(value=rounded(float(np.median(values))) if values else None, runs_used=len(values),
                     method="median over the arm's runs" if len(per_run) > 1 else "from the run")
        out.append(entry)
    return out


def arm_sizing(docs: Sequence[dict[str, Any]], request: Mapping[str, Any]) -> dict[str, Any]:
    """The most conservative member's sizing: every repetition must support it."""
    results = [replicas_needed(
        d, float(request["target_load"]), str(request["load_unit"]), request.get("latency_objectives"),
        headroom=float(request.get("headroom", 0.0))) for d in docs]
    refused = [r for r in results if r.replicas is None]
    worst = refused[0] if refused else max(results, key=lambda r: r.replicas or 0)
    return worst.as_dict()
