"""The decision question: what is asked (workload, scenario, objectives, demand, candidates, prices, criteria),
read from its JSON form with every number held to a plausible range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import sizing

CRITERIA = ("cost", "latency", "energy")
RATE_UNITS = ("tokens/s", "samples/s", "requests/s", "queries/s", "images/s")


# Plausible ranges of the question's numbers (docs/decisions.md, "Plausible ranges"): outside them a figure is a
# typo or a probe, and its arithmetic would leave what JSON carries exactly. protocol.sizing holds the shared ones.
MAX_DEMAND = sizing.MAX_LOAD
MAX_HEADROOM = sizing.MAX_HEADROOM
MAX_PRICE_PER_HOUR = sizing.MAX_PRICE_PER_HOUR
MAX_PURCHASE_PRICE = 1e12
LIFETIME_HOURS = (1.0, 1e6)  # a purchase spread over 1 hour to about 114 years
MAX_ENERGY_PRICE_KWH = 1e4
RANGES = {
    "/demand/value": (0.0, MAX_DEMAND),
    "/headroom": (0.0, MAX_HEADROOM),
    "/prices/system_hour/*": (0.0, MAX_PRICE_PER_HOUR),
    "/prices/purchase/*/price": (0.0, MAX_PURCHASE_PRICE),
    "/prices/purchase/*/lifetime_hours": LIFETIME_HOURS,
    "/prices/energy_per_kwh": (0.0, MAX_ENERGY_PRICE_KWH),
    "/objectives/*/max_ms": (0.0, sizing.MAX_LATENCY_MS),
}


class DecisionError(ValueError):
    """A question that cannot be answered as asked; the message names the field by JSON pointer."""


@dataclass(frozen=True)
class Question:
    """A validated decision question (see `Question.from_dict` for the JSON form)."""

    phase: str
    workload: str
    workload_version: str | None
    scenario: str
    objectives: tuple[sizing.LatencyObjective, ...]
    quality_target_ratio: float | None
    quality_metric: str | None
    demand: float
    demand_unit: str
    headroom: float
    accelerator_models: tuple[str, ...] = ()
    accelerator_vendors: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ()
    exclude_preview: bool = False
    currency: str = "USD"
    system_hour: Mapping[str, float] = field(default_factory=dict)
    purchase: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # model -> (price, lifetime hours)
    energy_price_kwh: float | None = None
    criteria: tuple[str, ...] = CRITERIA

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Question:
        """Reads the JSON form; raises DecisionError naming the field (JSON pointer) that is wrong."""
        if not isinstance(data, Mapping):
            raise DecisionError("the question must be a JSON object")
        phase = _phase(data)
        objectives = _objectives(data)
        quality, ratio = _quality(data)
        value, unit = _demand(data)
        headroom = _headroom(data)
        cands, prices = _sections(data)
        criteria = _criteria(data)
        hourly, purchase = _prices(prices.get("system_hour"), "/prices/system_hour"), _purchase(prices)
        energy, currency = _energy_price(prices), _currency(prices)
        return cls(
            phase=phase,
            workload=_text(data, "workload"),
            workload_version=_text(data, "workload_version", None),
            scenario=_text(data, "scenario"),
            objectives=objectives,
            quality_target_ratio=ratio,
            quality_metric=_text(quality, "metric", None, "/quality/metric"),
            demand=value,
            demand_unit=unit,
            headroom=headroom,
            accelerator_models=_texts(cands, "accelerator_models"),
            accelerator_vendors=_texts(cands, "accelerator_vendors"),
            precisions=_texts(cands, "precisions"),
            exclude_preview=bool(cands.get("exclude_preview", False)),
            currency=currency,
            system_hour=hourly,
            purchase=purchase,
            energy_price_kwh=energy,
            criteria=criteria,
        )

    def words(self) -> str:
        """The question in one sentence, as on a report's cover."""
        slo = ", ".join(o.words() for o in self.objectives) or "throughput only (no latency objective)"
        target = (
            (
                f"quality at least {self.quality_target_ratio:g} of the reference"
                + (f" {self.quality_metric}" if self.quality_metric else "")
            )
            if self.quality_target_ratio
            else "the benchmark's own quality target"
        )
        return (
            f"Which systems serve {self.workload}{' ' + self.workload_version if self.workload_version else ''}"
            f" ({self.scenario}) at {self.demand:g} {self.demand_unit} sustained"
            f"{f' with {self.headroom:.0%} headroom' if self.headroom else ''}, meeting {slo}, with "
            f"{target}; how many, at what cost and energy per output?"
        )


def escape_pointer(key: Any) -> str:
    """`key` as one JSON pointer segment (RFC 6901: "~" -> "~0", "/" -> "~1")."""
    return str(key).replace("~", "~0").replace("/", "~1")


def _text(data: Mapping[str, Any], key: str, default: Any = ..., where: str | None = None) -> Any:
    value = data.get(key)
    if value is None or value == "":
        if default is ...:
            raise DecisionError(f"{where or '/' + key}: required")
        return default
    if not isinstance(value, str) or len(value) > 200:
        raise DecisionError(f"{where or '/' + key}: a text of at most 200 characters")
    return value


def _texts(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DecisionError(f"/candidates/{key}: a list of texts")
    return tuple(value)


def _number(data: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> float | None:
    value = data.get(key)
    if value is None:
        if required:
            raise DecisionError(f"{where}: required")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DecisionError(f"{where}: a finite number")
    return float(value)


def _prices(value: Any, where: str) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DecisionError(f"{where}: {{accelerator model: price per system-hour}}")
    out = {}
    for key in value:
        number = _number(value, key, f"{where}/{escape_pointer(key)}")
        if number is None or not 0 <= number <= MAX_PRICE_PER_HOUR:
            raise DecisionError(
                f"{where}/{escape_pointer(key)}: a price per system-hour from 0 to {MAX_PRICE_PER_HOUR:g}"
            )
        out[str(key)] = number
    return out


def _phase(data: Mapping[str, Any]) -> Any:
    phase = _text(data, "phase", "inference")
    if phase != "inference":
        raise DecisionError("/phase: decisions size inference serving; 'inference' is the only phase")
    return phase


def _headroom(data: Mapping[str, Any]) -> float:
    headroom = _number(data, "headroom", "/headroom", required=False) or 0.0
    if not 0 <= headroom <= MAX_HEADROOM:
        raise DecisionError(f"/headroom: from 0 to {MAX_HEADROOM:g} (0.2 is 20% spare capacity)")
    return headroom


def _sections(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """/candidates and /prices (empty when absent)."""
    cands = data.get("candidates") or {}
    prices = data.get("prices") or {}
    if not isinstance(cands, Mapping) or not isinstance(prices, Mapping):
        raise DecisionError("/candidates and /prices are objects")
    return cands, prices


def _objectives(data: Mapping[str, Any]) -> tuple[sizing.LatencyObjective, ...]:
    objectives = []
    for i, obj in enumerate(data.get("objectives") or []):
        if not isinstance(obj, Mapping):
            raise DecisionError(f"/objectives/{i}: an objective is an object {{metric, percentile, max_ms}}")
        try:
            objectives.append(sizing.LatencyObjective.from_dict(obj))
        except (KeyError, TypeError, ValueError) as exc:
            raise DecisionError(f"/objectives/{i}: {exc}") from None
    return tuple(objectives)


def _quality(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], float | None]:
    """The /quality object and its target ratio."""
    quality = data.get("quality") or {}
    if not isinstance(quality, Mapping):
        raise DecisionError("/quality: an object {metric, target_ratio}")
    ratio = _number(quality, "target_ratio", "/quality/target_ratio", required=False)
    if ratio is not None and not 0 < ratio <= 1.5:
        raise DecisionError("/quality/target_ratio: a ratio of the reference quality, e.g. 0.99")
    return quality, ratio


def _demand(data: Mapping[str, Any]) -> tuple[float, str]:
    """The demand's value and unit."""
    demand = data.get("demand")
    if not isinstance(demand, Mapping):
        raise DecisionError('/demand: required, e.g. {"value": 20000, "unit": "tokens/s"}')
    value = _number(demand, "value", "/demand/value")
    unit = demand.get("unit")
    if unit not in RATE_UNITS:
        raise DecisionError(f"/demand/unit: one of {', '.join(RATE_UNITS)}")
    if value is None or not 0 < value <= MAX_DEMAND:
        raise DecisionError(f"/demand/value: a positive rate of at most {MAX_DEMAND:g}")
    return value, str(unit)


def _criteria(data: Mapping[str, Any]) -> tuple[str, ...]:
    criteria = tuple(data.get("criteria") or CRITERIA)
    bad = [c for c in criteria if c not in CRITERIA]
    if bad or not criteria:
        raise DecisionError(f"/criteria: choose among {', '.join(CRITERIA)} (got {', '.join(map(str, bad))})")
    return criteria


def _purchase(prices: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """/prices/purchase as {model: (price, lifetime hours)}."""
    purchase: dict[str, tuple[float, float]] = {}
    raw_purchase = prices.get("purchase") or {}
    if not isinstance(raw_purchase, Mapping):
        raise DecisionError("/prices/purchase: {accelerator model: {price, lifetime_hours}}")
    for model, entry in raw_purchase.items():
        purchase[str(model)] = _purchase_entry(entry, f"/prices/purchase/{escape_pointer(model)}")
    return purchase


def _purchase_entry(entry: Any, where: str) -> tuple[float, float]:
    if not isinstance(entry, Mapping):
        raise DecisionError(f"{where}: an object {{price, lifetime_hours}}")
    price, hours = (
        _number(entry, "price", f"{where}/price"),
        _number(entry, "lifetime_hours", f"{where}/lifetime_hours"),
    )
    if (
        price is None
        or hours is None
        or not 0 <= price <= MAX_PURCHASE_PRICE
        or not LIFETIME_HOURS[0] <= hours <= LIFETIME_HOURS[1]
    ):
        raise DecisionError(
            f"{where}: a price from 0 to {MAX_PURCHASE_PRICE:g} and lifetime_hours from "
            f"{LIFETIME_HOURS[0]:g} to {LIFETIME_HOURS[1]:g}"
        )
    return price, hours


def _energy_price(prices: Mapping[str, Any]) -> float | None:
    energy = _number(prices, "energy_per_kwh", "/prices/energy_per_kwh", required=False)
    if energy is not None and not 0 <= energy <= MAX_ENERGY_PRICE_KWH:
        raise DecisionError(f"/prices/energy_per_kwh: from 0 to {MAX_ENERGY_PRICE_KWH:g}")
    return energy


def _currency(prices: Mapping[str, Any]) -> str:
    currency = prices.get("currency", "USD")
    if not isinstance(currency, str) or not 1 <= len(currency) <= 8:
        raise DecisionError("/prices/currency: a currency code such as USD")
    return currency
