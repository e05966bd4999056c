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

# Plausible ranges of the numbers a sizing or cost computation takes. Outside them a figure is a typo or a probe,
# not a deployment, and its arithmetic would leave the floats JSON can carry (1e308 × 3600 is infinite; a count
# of 10^300 systems is no integer JSON keeps exactly). Requests outside them are refused, naming the bound; runs
# whose measured rate is outside RATE_RANGE are not used to size (the reason says so).
MAX_LOAD = 1e12  # outputs per second a question or sizing request may ask for
MAX_HEADROOM = 100.0  # spare capacity as a fraction (100 = 10,000%)
MAX_LATENCY_MS = 1e7  # a latency objective (about 2.8 hours)
MAX_PRICE_PER_HOUR = 1e7  # price per system-hour, in the stated currency
MAX_SYSTEMS = 10**9  # a count of systems beyond this is refused rather than claimed
RATE_RANGE = (1e-6, 1e10)  # a measured per-system rate, outputs per second
MAX_POWER_W = 1e9  # a measured average power


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
        return {
            "name": self.name,
            "derived": True,
            "value": rounded(self.value),
            "unit": self.unit,
            "formula": self.formula,
            "inputs": dict(self.inputs),
            "assumption": self.assumption,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class LatencyObjective:
    """A latency service-level objective, e.g. ttft_ms p99 <= 500 ms."""

    metric: str  # one of rules.DISTRIBUTION_METRICS
    percentile: str  # "p50", "p90", "p95", "p99", ...
    max_ms: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LatencyObjective:
        if not isinstance(data, Mapping) or "metric" not in data:
            raise SizingError("a latency objective is an object {metric, percentile, max_ms}")
        max_ms = number(data.get("max_ms"), "max_ms", low=0.0, high=MAX_LATENCY_MS, low_open=True)
        obj = cls(str(data["metric"]), str(data.get("percentile", "p99")), max_ms)
        if obj.metric not in rules.DISTRIBUTION_METRICS or obj.percentile not in rules.PERCENTILES:
            raise SizingError(f"unknown latency objective {obj.metric}.{obj.percentile}")
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
        return {
            "derived": True,
            "replicas": self.replicas,
            "target_load": rounded(self.target_load),
            "load_unit": self.load_unit,
            "per_replica_rate": rounded(self.per_replica_rate),
            "rate_metric": self.rate_metric,
            "latency_objectives": list(self.objectives),
            "headroom": rounded(self.headroom),
            "formula": self.formula,
            "assumption": self.assumption,
            "reason": self.reason,
        }


def number(value: Any, name: str, *, low: float, high: float, low_open: bool = False) -> float:
    """`value` as a float within [low, high] ((low, high] when `low_open`); SizingError naming `name` and the
    range otherwise (a text, a boolean, an infinite or out-of-range number)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok and (value > low if low_open else value >= low) and value <= high:
        return float(value)
    bracket = "(" if low_open else "["
    raise SizingError(f"{name} must be a number in {bracket}{low:g}, {high:g}], got {value!r:.40}")


def finite(value: float | None) -> float | None:
    """`value` when it is a finite float, else None: a computation that left the representable range."""
    return value if value is not None and math.isfinite(value) else None


def count(load: float, rate: float) -> int | None:
    """ceil(load ÷ rate), at least 1, or None when it is not a plausible count (more than MAX_SYSTEMS)."""
    ratio = load / rate
    if not math.isfinite(ratio) or ratio > MAX_SYSTEMS:
        return None
    return max(1, math.ceil(ratio - 1e-9))  # tolerate float noise at exact fits


def rate_problem(value: float) -> str | None:
    """Why a measured rate is not used to size (outside RATE_RANGE), or None."""
    low, high = RATE_RANGE
    if not low <= value <= high:
        return (
            f"its measured rate {value:g} per second is outside the plausible range {low:g} to {high:g} per "
            "system, so no count or cost is computed from it"
        )
    return None


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def system_words(doc: Mapping[str, Any]) -> str:
    system = doc.get("system") or {}
    accels = system.get("accelerators") or []
    parts = [f"{a.get('count', 1)}× {a.get('model', '?')}" for a in accels]
    what = ", ".join(parts) or (system.get("host") or {}).get("cpu_model") or "host CPU"
    return f"{system.get('name', '?')} ({what}, {system.get('nodes', 1)} node(s))"


# The measured rates energy is divided by, best first: every output the energy was spent on, so never goodput.
ENERGY_RATES = ("throughput", "tokens_per_second", "request_rate")


def energy_per_output(doc: Mapping[str, Any], unit: str | None = None) -> Derived:
    """Measured energy ÷ outputs, in J per output unit. Never computed from a power limit or TDP.

    The output is the throughput's unit, or `unit` (a rate's unit, "requests/s") where given: a served run's
    energy per token and per request both come from its one power reading. The inputs name the meter (source,
    scope) and, where the run states them (protocol 1.1), the window the measurement covers and how it was taken,
    so a reader sees "SPEC PTDaemon over 600 s" beside the figure.
    """
    metrics = doc.get("metrics") or {}
    energy, tput = metrics.get("energy"), _energy_rate(metrics, unit)
    rate, unit = _num(tput.get("value")), tput.get("unit") or unit
    noun = UNIT_NOUN.get(unit or "", "output")
    out_unit = f"J/{noun}"
    if not isinstance(energy, dict) or not energy.get("source"):
        reason = "no measured energy (a power limit or TDP is not a measurement)"
        return Derived(_ENERGY, None, out_unit, "average power ÷ throughput", reason=reason)
    watts, joules = _num(energy.get("average_power_w")), _num(energy.get("joules"))
    inputs = {"source": energy["source"], "scope": energy.get("scope"), "throughput": rate, "unit": unit}
    inputs.update(_measurement_stated(energy))
    if not rate:
        reason = f"no measured rate in {unit}" if unit else "no throughput"
        return Derived(_ENERGY, None, out_unit, "average power ÷ throughput", inputs, reason=reason)
    return _metered_energy(doc, rate, watts, joules, out_unit, inputs)


_ENERGY = "energy_per_output"


def _energy_rate(metrics: Mapping[str, Any], unit: str | None) -> Mapping[str, Any]:
    """The throughput block, or the first measured rate (ENERGY_RATES) in `unit`; {} where none is."""
    tput = metrics.get("throughput") or {}
    if unit is None or (isinstance(tput, dict) and tput.get("unit") == unit):
        return tput if isinstance(tput, dict) else {}
    for name in ENERGY_RATES:
        rate = metrics.get(name)
        if isinstance(rate, dict) and rate.get("unit") == unit:
            return rate
    return {}


def _measurement_stated(energy: Mapping[str, Any]) -> dict[str, Any]:
    """The meter's window (s) and method where the run states them; nothing where it does not (older documents'
    figures keep the inputs they always had)."""
    stated: dict[str, Any] = {}
    if (window := _num(energy.get("window_s"))) is not None:
        stated["window_s"] = window
    if isinstance(method := energy.get("method"), str) and method:
        stated["method"] = method
    return stated


def _metered_energy(
    doc: Mapping[str, Any],
    rate: float,
    watts: float | None,
    joules: float | None,
    out_unit: str,
    inputs: dict[str, Any],
) -> Derived:
    """Energy per output from the meter's average power, else from its joules over the window they cover."""
    if watts is not None:
        formula = "measured average power (W) ÷ throughput (per s)"
        return Derived(_ENERGY, finite(watts / rate), out_unit, formula, {**inputs, "average_power_w": watts})
    metered = inputs.get("window_s")
    if joules is not None and metered:
        formula = "measured energy (J) ÷ (throughput × the meter's window seconds)"
        value = finite(joules / (rate * metered))
        return Derived(_ENERGY, value, out_unit, formula, {**inputs, "joules": joules})
    seconds = _num(((doc.get("conditions") or {}).get("window") or {}).get("seconds"))
    if joules is not None and seconds:
        formula = "measured energy (J) ÷ (throughput × window seconds)"
        used = {**inputs, "joules": joules, "window_seconds": seconds}
        assumption = "the measured energy covers the measurement window"
        return Derived(_ENERGY, finite(joules / (rate * seconds)), out_unit, formula, used, assumption=assumption)
    reason = "energy block has neither average power nor joules over a known window"
    return Derived(_ENERGY, None, out_unit, "average power ÷ throughput", inputs, reason=reason)


def cost_per_million_outputs(doc: Mapping[str, Any], price_per_hour: float | None, currency: str) -> Derived:
    """User-supplied price per system-hour ÷ outputs per hour × 1e6. The price is a stated assumption."""
    tput = (doc.get("metrics") or {}).get("throughput") or {}
    rate, unit = _num(tput.get("value")), tput.get("unit")
    noun = UNIT_NOUN.get(unit or "", "output")
    name, out_unit = "cost_per_million_outputs", f"{currency} per million {noun}s"
    formula = "price per system-hour ÷ (throughput × 3600) × 1,000,000"
    if price_per_hour is None:
        return Derived(name, None, out_unit, formula, reason="no hourly price supplied for this system")
    assumption = (
        f"price of {price_per_hour:g} {currency} per hour for {system_words(doc)} as supplied by "
        "the user, fully busy at the measured throughput"
    )
    value, reason = _cost(rate, price_per_hour)
    if value is None:
        return Derived(name, None, out_unit, formula, assumption=assumption, reason=reason)
    inputs = {"price_per_hour": price_per_hour, "currency": currency, "throughput": rate, "unit": unit}
    return Derived(name, value, out_unit, formula, inputs, assumption=assumption)


def _cost(rate: float | None, price_per_hour: float) -> tuple[float | None, str | None]:
    """The cost per million outputs, or why it is not computed."""
    if not rate:
        return None, "no throughput"
    if (problem := rate_problem(rate)) is not None:
        return None, f"not computed: {problem}"
    value = finite(price_per_hour / (rate * 3600.0) * 1e6)
    if value is None or not 0 <= price_per_hour <= MAX_PRICE_PER_HOUR:
        return None, (
            f"not computed: a price of {price_per_hour:g} per hour is outside the plausible "
            f"range 0 to {MAX_PRICE_PER_HOUR:g}"
        )
    return value, None


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
        return (
            f"a {scenario} run measures no latency under a steady offered load, so it cannot show "
            "whether a latency objective is met; size from a server or interactive run"
        )
    metrics = doc.get("metrics") or {}
    for obj in objectives:
        measured = _num((metrics.get(obj.metric) or {}).get(obj.percentile))
        if measured is None:
            return f"this run did not measure {obj.metric}.{obj.percentile}"
        if measured > obj.max_ms:
            return (
                f"measured {obj.metric}.{obj.percentile} is {measured:g} ms, above the objective of "
                f"{obj.max_ms:g} ms: at the tested load this system does not meet it, and a lighter load "
                "was not measured"
            )
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


def replicas_needed(
    doc: Mapping[str, Any],
    target_load: float,
    load_unit: str,
    latency_objective: LatencyObjective | Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    headroom: float = 0.0,
) -> Sizing:
    """Replicas of the tested system needed to carry `target_load` (in `load_unit`) within the objectives.

    The per-replica rate is a measured one: goodput (else request rate) of a serving run whose latency met
    every objective, or plain throughput when no objective is given. Refuses, with the reason, when the
    latency was above an objective, when no measured rate is in `load_unit`, or for training runs.
    """
    target_load = number(target_load, "target_load", low=0.0, high=MAX_LOAD, low_open=True)
    headroom = number(headroom, "headroom", low=0.0, high=MAX_HEADROOM)
    objectives = _objectives(latency_objective)
    words = tuple(o.words() for o in objectives)
    assumption = _replica_assumption(doc, headroom, words)
    refused = Sizing(None, target_load, load_unit, None, None, words, headroom, assumption)
    if doc.get("phase") != "inference":
        return replace(refused, reason="capacity sizing applies to inference serving; this is a training run")
    return _sized(doc, objectives, refused)


def _replica_assumption(doc: Mapping[str, Any], headroom: float, words: tuple[str, ...]) -> str:
    return (
        f"each replica is {system_words(doc)} exactly as tested; capacity scales linearly with "
        f"replicas (load balanced evenly, no shared bottleneck); headroom {headroom:.0%}"
        + (" (none added)" if headroom == 0 else "")
        + ("; latency objectives " + ", ".join(words) if words else "; no latency objective")
    )


def _sized(doc: Mapping[str, Any], objectives: list[LatencyObjective], refused: Sizing) -> Sizing:
    """`refused` with its replica count, or with the reason there is none (the objectives, the rate)."""
    problem = _latency_problem(doc, objectives)
    found = _sustainable_rate(doc, refused.load_unit)
    if problem is None and found is None:
        problem = f"no measured rate in {refused.load_unit} in this run"
    if problem is not None or found is None:
        return replace(refused, reason=problem)
    name, rate = found
    problem = rate_problem(rate)
    replicas = count(refused.target_load * (1.0 + refused.headroom), rate) if problem is None else None
    if replicas is None:
        return replace(
            refused,
            per_replica_rate=rate,
            rate_metric=name,
            reason=problem
            or (f"more than {MAX_SYSTEMS:,} replicas: not a plausible deployment, so no count is claimed"),
        )
    return replace(refused, replicas=replicas, per_replica_rate=rate, rate_metric=name)


def arm_derived(
    docs: Sequence[dict[str, Any]], prices: Mapping[str, float] | None, currency: str
) -> list[dict[str, Any]]:
    """Energy per output and (with prices) cost per million outputs for runs repeating one setup: medians."""
    out = []
    energy = [energy_per_output(d) for d in docs]
    candidates = [energy]
    if prices is not None:
        candidates.append(
            [cost_per_million_outputs(d, prices.get((d.get("system") or {}).get("name", "")), currency) for d in docs]
        )
    for per_run in candidates:
        values = [x.value for x in per_run if x.value is not None]
        entry = next((x for x in per_run if x.value is not None), per_run[0]).as_dict()
        entry.update(
            value=rounded(float(np.median(values))) if values else None,
            runs_used=len(values),
            method="median over the arm's runs" if len(per_run) > 1 else "from the run",
        )
        out.append(entry)
    return out


def arm_sizing(docs: Sequence[dict[str, Any]], request: Mapping[str, Any]) -> dict[str, Any]:
    """The most conservative member's sizing: every repetition must support it. SizingError names a request
    field that is missing, not a number or outside its plausible range."""
    if not isinstance(request, Mapping):
        raise SizingError("sizing is an object {target_load, load_unit, latency_objectives?, headroom?}")
    target = number(request.get("target_load"), "sizing.target_load", low=0.0, high=MAX_LOAD, low_open=True)
    headroom = number(request.get("headroom", 0.0), "sizing.headroom", low=0.0, high=MAX_HEADROOM)
    unit = request.get("load_unit")
    if not isinstance(unit, str) or not unit or len(unit) > 40:
        raise SizingError("sizing.load_unit must be a unit such as tokens/s")
    objectives = request.get("latency_objectives")
    if objectives is not None and not isinstance(objectives, Mapping | list):
        raise SizingError("sizing.latency_objectives is an objective {metric, percentile, max_ms} or a list of them")
    results = [replicas_needed(d, target, unit, objectives, headroom=headroom) for d in docs]
    refused = [r for r in results if r.replicas is None]
    worst = refused[0] if refused else max(results, key=lambda r: r.replicas or 0)
    return worst.as_dict()
