"""The decision question: what is asked (workload, scenario, objectives, demand, candidates, prices, criteria),
read from its JSON form with every number held to a plausible range.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import serving, sizing
from ..canonical import canonicalize
from ..rules import INFERENCE_SCENARIOS

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
MAX_REDUNDANCY = 1000  # spare systems (the k of N+k)
MAX_NAMEPLATE_KW = 1e5  # one system's nameplate power (100 MW is no single system)
PUE_RANGE = (1.0, 5.0)  # power usage effectiveness: 1 is no overhead at all

# The fields a question may hold, per object: a field the answer would not use is refused, never dropped.
FIELDS = {
    "": (
        "phase",
        "workload",
        "workload_version",
        "scenario",
        "objectives",
        "quality",
        "demand",
        "headroom",
        "redundancy",
        "candidates",
        "prices",
        "criteria",
        "interactivity",
        "provisioning",
        "served_model",
        "request_shape",
    ),
    "/served_model": ("name", "weights_digest"),
    "/interactivity": ("min_tokens_per_second_per_user",),
    "/provisioning": ("nameplate_kw", "pue"),
    "/quality": ("metric", "target_ratio"),
    "/demand": ("value", "peak", "sustained", "unit"),
    "/candidates": ("accelerator_models", "accelerator_vendors", "precisions", "exclude_preview"),
    "/prices": ("currency", "system_hour", "accelerator_hour", "purchase", "energy_per_kwh"),
}

# A price belongs to a configuration: "8x NVIDIA H100-SXM-80GB" (accelerators in the whole tested system, then
# the model, as the candidate's label shows them), or "*" for any system.
CONFIGURATION_KEY = re.compile(r"^\s*(\d+)\s*[x×]\s*(\S.*?)\s*$")
RANGES = {
    "/demand/value": (0.0, MAX_DEMAND),
    "/demand/peak": (0.0, MAX_DEMAND),
    "/demand/sustained": (0.0, MAX_DEMAND),
    "/redundancy": (0, MAX_REDUNDANCY),
    "/prices/accelerator_hour/*": (0.0, MAX_PRICE_PER_HOUR),
    "/headroom": (0.0, MAX_HEADROOM),
    "/prices/system_hour/*": (0.0, MAX_PRICE_PER_HOUR),
    "/prices/purchase/*/price": (0.0, MAX_PURCHASE_PRICE),
    "/prices/purchase/*/lifetime_hours": LIFETIME_HOURS,
    "/prices/energy_per_kwh": (0.0, MAX_ENERGY_PRICE_KWH),
    "/objectives/*/max_ms": (0.0, sizing.MAX_LATENCY_MS),
    "/interactivity/min_tokens_per_second_per_user": (0.0, serving.MAX_PER_USER),
    "/provisioning/nameplate_kw/*": (0.0, MAX_NAMEPLATE_KW),
    "/provisioning/pue": PUE_RANGE,
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
    demand: float  # the peak demand systems are sized for
    demand_unit: str
    headroom: float
    sustained: float | None = None  # the average demand costs are computed at; None: equal to the peak
    redundancy: int = 0  # k spare systems (N+k)
    accelerator_models: tuple[str, ...] = ()
    accelerator_vendors: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ()
    exclude_preview: bool = False
    currency: str = "USD"
    system_hour: Mapping[str, float] = field(default_factory=dict)  # configuration key or "*" -> price per hour
    accelerator_hour: Mapping[str, float] = field(default_factory=dict)  # accelerator model -> price per hour
    purchase: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # configuration -> (price, hours)
    energy_price_kwh: float | None = None
    criteria: tuple[str, ...] = CRITERIA
    # The least tokens/s one user sees (median request), a level must give to count (None: no such target).
    min_per_user: float | None = None
    nameplate_kw: Mapping[str, float] = field(default_factory=dict)  # configuration key or "*" -> kW per system
    pue: float | None = None
    # The model served (software.serving.model) and its weights (workload.model.digest): part of the workload of
    # served evidence (DECISIONS.md, "Which runs answer it"). None: not named, which holds only while the runs
    # that answer the question serve one model (answer.py refuses to mix models).
    served_model: str | None = None
    served_weights: str | None = None
    # The request shape (workload.request_shape) of served evidence: controlled on the iso-quality axis, so part of
    # what the question asks. None: not named, which holds only while the runs that answer it have one shape
    # (answer.py refuses to mix shapes, as it refuses to mix models).
    request_shape: Mapping[str, Any] | None = None

    @property
    def target(self) -> serving.Target:
        """What a load level must meet: the latency objectives and the interactivity target."""
        return serving.Target(self.min_per_user, self.objectives)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Question:
        """Reads the JSON form; raises DecisionError naming the field (JSON pointer) that is wrong."""
        if not isinstance(data, Mapping):
            raise DecisionError("the question must be a JSON object")
        _known_fields(data)
        phase = _phase(data)
        objectives = _objectives(data)
        quality, ratio = read_quality(data)
        value, sustained, unit = _demand(data)
        headroom = _headroom(data)
        cands, prices = read_sections(data)
        criteria = _criteria(data)
        hourly, purchase = read_prices(prices.get("system_hour"), "/prices/system_hour"), read_purchase(prices)
        per_accelerator = read_prices(prices.get("accelerator_hour"), "/prices/accelerator_hour", configuration=False)
        energy, currency = read_energy_price(prices), read_currency(prices)
        nameplate, pue = _provisioning(data)
        served, weights = _served_model(data)
        shape = _request_shape(data)
        return cls(
            phase=phase,
            workload=read_text(data, "workload"),
            workload_version=read_text(data, "workload_version", None),
            scenario=_scenario(data),
            objectives=objectives,
            quality_target_ratio=ratio,
            quality_metric=read_text(quality, "metric", None, "/quality/metric"),
            demand=value,
            demand_unit=unit,
            headroom=headroom,
            sustained=sustained,
            redundancy=read_redundancy(data),
            accelerator_models=read_texts(cands, "accelerator_models"),
            accelerator_vendors=read_texts(cands, "accelerator_vendors"),
            precisions=read_texts(cands, "precisions"),
            exclude_preview=bool(cands.get("exclude_preview", False)),
            currency=currency,
            system_hour=hourly,
            accelerator_hour=per_accelerator,
            purchase=purchase,
            energy_price_kwh=energy,
            criteria=criteria,
            min_per_user=_interactivity(data),
            nameplate_kw=nameplate,
            pue=pue,
            served_model=served,
            served_weights=weights,
            request_shape=shape,
        )

    @property
    def sustained_demand(self) -> float:
        """The average demand costs are computed at (the peak when only one demand value was given)."""
        return self.demand if self.sustained is None else self.sustained

    def words(self) -> str:
        """The question in one sentence, as on a report's cover."""
        slo = ", ".join(o.words() for o in self.objectives) or "throughput only (no latency objective)"
        if self.quality_target_ratio is not None:
            target = f"quality at least {self.quality_target_ratio:g} of the reference" + (
                f" {self.quality_metric}" if self.quality_metric else ""
            )
        elif self.quality_metric:
            target = f"quality measured as {self.quality_metric}"
        else:
            target = "no quality target stated (a run is held to its benchmark's own where it measured quality)"
        demand = (
            f"{self.demand:g} {self.demand_unit} (peak and sustained)"
            if self.sustained is None
            else f"a peak of {self.demand:g} {self.demand_unit} ({self.sustained:g} sustained)"
        )
        if self.min_per_user is not None:
            slo += f", at least {self.min_per_user:g} tokens/s per user (median request)"
        spare = f" plus {self.redundancy} spare system{'s' if self.redundancy > 1 else ''}" if self.redundancy else ""
        return (
            f"Which systems serve {self.workload}{' ' + self.workload_version if self.workload_version else ''}"
            f" ({self.scenario}){self.served_words()} at {demand}"
            f"{f' with {self.headroom:.0%} headroom' if self.headroom else ''}{spare}, meeting {slo}, with "
            f"{target}; how many, at what cost and energy per output?"
        )

    def served_words(self) -> str:
        """' with the model amd/GLM-5.1-MXFP4 served (weights sha256:…)' and ' for requests of 64/32 fixed,
        multi-turn', each only where the question names it."""
        words = ""
        if self.served_model is not None:
            weights = f" (weights {self.served_weights})" if self.served_weights else ""
            words = f" with the model {self.served_model}{weights} served"
        if self.request_shape is not None:
            words += f" for requests of {serving.shape_words(self.request_shape)}"
        return words

    def assumptions(self, refused: frozenset[str] = frozenset()) -> list[str]:
        """Every input the answer's figures rest on, in words: what the requester stated, nothing invented."""
        out = [
            f"peak demand {self.demand:g} {self.demand_unit}"
            + (
                "; sustained demand taken equal to it (one demand value was given)"
                if self.sustained is None
                else f"; sustained demand {self.sustained:g} {self.demand_unit}"
            ),
            f"headroom {self.headroom:.0%}; {self.redundancy} spare system(s) (N+{self.redundancy})",
            "throughput scales linearly with the number of systems (load balanced evenly, no shared bottleneck)",
        ]
        out += price_assumptions(self, refused)
        if self.min_per_user is not None:
            out.append(
                f"interactivity: a load level counts only where its median request saw at least "
                f"{self.min_per_user:g} output tokens/s (metrics.tokens_per_second_per_user p50); only measured "
                "levels count, nothing is interpolated between them"
            )
        out += [
            f"{key}: nameplate power {kw:g} kW per system, as supplied"
            for key, kw in self.nameplate_kw.items()
            if f"/provisioning/nameplate_kw/{escape_pointer(key)}" not in refused
        ]
        if self.pue is not None:
            out.append(f"power usage effectiveness (PUE) {self.pue:g}, as supplied")
        return out


def escape_pointer(key: Any) -> str:
    """`key` as one JSON pointer segment (RFC 6901: "~" -> "~0", "/" -> "~1")."""
    return str(key).replace("~", "~0").replace("/", "~1")


def read_text(data: Mapping[str, Any], key: str, default: Any = ..., where: str | None = None) -> Any:
    value = data.get(key)
    if value is None or value == "":
        if default is ...:
            raise DecisionError(f"{where or '/' + key}: required")
        return default
    if not isinstance(value, str) or len(value) > 200:
        raise DecisionError(f"{where or '/' + key}: a text of at most 200 characters")
    return value


def read_texts(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DecisionError(f"/candidates/{key}: a list of texts")
    return tuple(value)


def read_number(data: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> float | None:
    value = data.get(key)
    if value is None:
        if required:
            raise DecisionError(f"{where}: required")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DecisionError(f"{where}: a finite number")
    return float(value)


def read_prices(value: Any, where: str, *, configuration: bool = True) -> dict[str, float]:
    """{key: price per hour}. Keys name a configuration ("8x <model>", or "*") or, for accelerator-hours, a model."""
    if value is None:
        return {}
    shape = (
        "{'<count>x <accelerator model>' or '*': price per system-hour}"
        if configuration
        else ("{accelerator model: price per accelerator-hour}")
    )
    if not isinstance(value, Mapping):
        raise DecisionError(f"{where}: {shape}")
    out = {}
    for key in value:
        at = f"{where}/{escape_pointer(key)}"
        if configuration:
            _configuration_key(str(key), at)
        number = read_number(value, key, at)
        if number is None or not 0 <= number <= MAX_PRICE_PER_HOUR:
            raise DecisionError(f"{at}: a price per hour from 0 to {MAX_PRICE_PER_HOUR:g}")
        out[str(key)] = number
    return out


def _configuration_key(key: str, where: str) -> None:
    """A price's key must name a configuration: a model alone would put an 8-GPU server's price on a 1-GPU one."""
    if key != "*" and not CONFIGURATION_KEY.match(key):
        raise DecisionError(
            f"{where}: a price belongs to a configuration: name it '<accelerators>x <model>' (e.g. "
            f"'8x {key}'), or '*' for any system, or give /prices/accelerator_hour/{escape_pointer(key)} for a "
            "price per accelerator-hour"
        )


def _known_fields(data: Mapping[str, Any]) -> None:
    """Refuses a field the answer would not use (a typo, or a field of another tool), naming it."""
    refuse_unknown_fields(data, FIELDS)


def refuse_unknown_fields(data: Mapping[str, Any], fields: Mapping[str, tuple[str, ...]]) -> None:
    """As `_known_fields`, for the fields of one kind of question (inference or training)."""
    for where, known in fields.items():
        section = data if where == "" else data.get(where[1:])
        if not isinstance(section, Mapping):
            continue
        for key in section:
            if key not in known:
                raise DecisionError(
                    f"{where}/{escape_pointer(key)}: not a field of a decision question here; the known fields are "
                    + ", ".join(known)
                )


def read_redundancy(data: Mapping[str, Any]) -> int:
    value = data.get("redundancy", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REDUNDANCY:
        raise DecisionError(f"/redundancy: a whole number of spare systems from 0 to {MAX_REDUNDANCY} (the k of N+k)")
    return value


def _phase(data: Mapping[str, Any]) -> Any:
    phase = read_text(data, "phase", "inference")
    if phase != "inference":  # protocol.decisions.read gives a 'training' question to TrainingQuestion
        raise DecisionError("/phase: 'inference' (serving, sized for a demand rate) or 'training' (R runs a period)")
    return phase


def _headroom(data: Mapping[str, Any]) -> float:
    headroom = read_number(data, "headroom", "/headroom", required=False) or 0.0
    if not 0 <= headroom <= MAX_HEADROOM:
        raise DecisionError(f"/headroom: from 0 to {MAX_HEADROOM:g} (0.2 is 20% spare capacity)")
    return headroom


def read_sections(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
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


def read_quality(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], float | None]:
    """The /quality object and its target ratio."""
    quality = data.get("quality") or {}
    if not isinstance(quality, Mapping):
        raise DecisionError("/quality: an object {metric, target_ratio}")
    ratio = read_number(quality, "target_ratio", "/quality/target_ratio", required=False)
    if ratio is not None and not 0 < ratio <= 1.5:
        raise DecisionError("/quality/target_ratio: a ratio of the reference quality, e.g. 0.99")
    return quality, ratio


def _demand(data: Mapping[str, Any]) -> tuple[float, float | None, str]:
    """The peak demand, the sustained demand (None: one value given, used for both) and their unit."""
    demand = data.get("demand")
    if not isinstance(demand, Mapping):
        raise DecisionError('/demand: required, e.g. {"peak": 50000, "sustained": 35000, "unit": "tokens/s"}')
    unit = demand.get("unit")
    if unit not in RATE_UNITS:
        raise DecisionError(f"/demand/unit: one of {', '.join(RATE_UNITS)}")
    if "value" in demand and ("peak" in demand or "sustained" in demand):
        raise DecisionError("/demand/value: give either value (peak and sustained alike) or peak and sustained")
    if "value" in demand:
        return _rate_value(demand, "value"), None, str(unit)
    if "peak" not in demand or "sustained" not in demand:
        missing = "peak" if "peak" not in demand else "sustained"
        raise DecisionError(f"/demand/{missing}: required with the other (or give one value for both)")
    peak, sustained = _rate_value(demand, "peak"), _rate_value(demand, "sustained")
    if sustained > peak:
        raise DecisionError(f"/demand/sustained: at most the peak ({peak:g})")
    return peak, sustained, str(unit)


def _rate_value(demand: Mapping[str, Any], key: str) -> float:
    value = read_number(demand, key, f"/demand/{key}")
    if value is None or not 0 < value <= MAX_DEMAND:
        raise DecisionError(f"/demand/{key}: a positive rate of at most {MAX_DEMAND:g}")
    return value


def _scenario(data: Mapping[str, Any]) -> str:
    """An inference scenario the protocol knows: any other names no run, so the question could never be answered."""
    scenario: str = read_text(data, "scenario")
    if scenario not in INFERENCE_SCENARIOS:
        raise DecisionError(
            f"/scenario: one of {', '.join(sorted(INFERENCE_SCENARIOS))} (the protocol's inference scenarios), "
            f"not {scenario!r}"
        )
    return scenario


def _criteria(data: Mapping[str, Any]) -> tuple[str, ...]:
    raw = data.get("criteria") or CRITERIA  # none named: the frontier is drawn over every criterion
    if not isinstance(raw, list | tuple):  # a bare "cost" would be read letter by letter
        raise DecisionError(f'/criteria: a list, e.g. ["cost", "latency"], of {", ".join(CRITERIA)}')
    criteria = tuple(raw)
    bad = [c for c in criteria if c not in CRITERIA]
    if bad:
        raise DecisionError(f"/criteria: choose among {', '.join(CRITERIA)} (got {', '.join(map(str, bad))})")
    if len(set(criteria)) != len(criteria):
        raise DecisionError(f"/criteria: each criterion once (got {', '.join(criteria)})")
    return criteria


def read_purchase(prices: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """/prices/purchase as {model: (price, lifetime hours)}."""
    purchase: dict[str, tuple[float, float]] = {}
    raw_purchase = prices.get("purchase") or {}
    if not isinstance(raw_purchase, Mapping):
        raise DecisionError("/prices/purchase: {'<count>x <accelerator model>': {price, lifetime_hours}}")
    for key, entry in raw_purchase.items():
        where = f"/prices/purchase/{escape_pointer(key)}"
        _configuration_key(str(key), where)
        purchase[str(key)] = _purchase_entry(entry, where)
    return purchase


def _purchase_entry(entry: Any, where: str) -> tuple[float, float]:
    if not isinstance(entry, Mapping):
        raise DecisionError(f"{where}: an object {{price, lifetime_hours}}")
    price, hours = (
        read_number(entry, "price", f"{where}/price"),
        read_number(entry, "lifetime_hours", f"{where}/lifetime_hours"),
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


def read_energy_price(prices: Mapping[str, Any]) -> float | None:
    energy = read_number(prices, "energy_per_kwh", "/prices/energy_per_kwh", required=False)
    if energy is not None and not 0 <= energy <= MAX_ENERGY_PRICE_KWH:
        raise DecisionError(f"/prices/energy_per_kwh: from 0 to {MAX_ENERGY_PRICE_KWH:g}")
    return energy


def read_currency(prices: Mapping[str, Any]) -> str:
    currency = prices.get("currency", "USD")
    if not isinstance(currency, str) or not 1 <= len(currency) <= 8:
        raise DecisionError("/prices/currency: a currency code such as USD")
    return currency


def _interactivity(data: Mapping[str, Any]) -> float | None:
    """/interactivity/min_tokens_per_second_per_user (None when the question states none)."""
    block = data.get("interactivity")
    if block is None:
        return None
    if not isinstance(block, Mapping):
        raise DecisionError('/interactivity: an object, e.g. {"min_tokens_per_second_per_user": 50}')
    try:
        return serving.per_user_target(block.get("min_tokens_per_second_per_user"), "/interactivity")
    except serving.TargetError as exc:
        raise DecisionError(str(exc)) from None


WEIGHTS_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
MAX_SHAPE_CHARACTERS = 10_000  # a request shape is a few hundred characters; a question is not a place for data


def _request_shape(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """/request_shape: the request shape to size for, as the runs state it (workload.request_shape), or None."""
    shape = data.get("request_shape")
    if shape is None:
        return None
    if not isinstance(shape, Mapping) or not shape or len(repr(shape)) > MAX_SHAPE_CHARACTERS or not _canonical(shape):
        raise DecisionError(
            "/request_shape: the request shape to size for, as the runs state it (workload.request_shape), e.g. "
            '{"kind": "fixed", "input_tokens": {"mean": 1000, "stdev": 0, "distribution": "constant"}, '
            '"output_tokens": {"mean": 200, "stdev": 0, "distribution": "constant"}, "turns": "single"}'
        )
    return shape


def _canonical(value: Any) -> bool:
    """Whether the value has a canonical form (RFC 8785: what two shapes are compared in)."""
    try:
        canonicalize(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _served_model(data: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """/served_model: the model served, as {"name", "weights_digest"?} or its name alone."""
    block = data.get("served_model")
    if block is None or block == "":
        return None, None
    if isinstance(block, str):
        block = {"name": block}
    if not isinstance(block, Mapping):
        raise DecisionError(
            '/served_model: the model served, e.g. {"name": "amd/GLM-5.1-MXFP4", "weights_digest": "sha256:…"} '
            "or its name alone"
        )
    name = block.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 500:
        raise DecisionError(
            "/served_model/name: the model's name as the runs state it (software.serving.model), at most 500 characters"
        )
    weights = block.get("weights_digest")
    if weights is not None and (not isinstance(weights, str) or not WEIGHTS_DIGEST.match(weights)):
        raise DecisionError("/served_model/weights_digest: the weights' digest as runs state it, sha256:<64 hex>")
    return name.strip(), weights


def _provisioning(data: Mapping[str, Any]) -> tuple[dict[str, float], float | None]:
    """/provisioning: nameplate kW per configuration ('8x <model>' or '*') and the site's PUE."""
    block = data.get("provisioning") or {}
    if not isinstance(block, Mapping):
        raise DecisionError('/provisioning: an object {"nameplate_kw": {"8x <model>": kW}, "pue": 1.3}')
    raw = block.get("nameplate_kw") or {}
    if not isinstance(raw, Mapping):
        raise DecisionError("/provisioning/nameplate_kw: {'<count>x <accelerator model>' or '*': kW per system}")
    nameplate = {}
    for key in raw:
        at = f"/provisioning/nameplate_kw/{escape_pointer(key)}"
        _configuration_key(str(key), at)
        kw = read_number(raw, key, at)
        if kw is None or not 0 < kw <= MAX_NAMEPLATE_KW:
            raise DecisionError(f"{at}: a system's nameplate power in kW, above 0 and at most {MAX_NAMEPLATE_KW:g}")
        nameplate[str(key)] = kw
    pue = read_number(block, "pue", "/provisioning/pue", required=False)
    if pue is not None and not PUE_RANGE[0] <= pue <= PUE_RANGE[1]:
        raise DecisionError(f"/provisioning/pue: from {PUE_RANGE[0]:g} to {PUE_RANGE[1]:g} (1.3 is 30% overhead)")
    return nameplate, pue


def price_assumptions(prices: Any, refused: Any) -> list[str]:
    """The stated prices an answer used, each as supplied (a price refused by `refused`'s pointers is left out):
    the same lines for an inference and a training question, whose prices are read alike (read_prices)."""
    out = [
        f"{key}: {price:g} {prices.currency} per system-hour, as supplied"
        for key, price in prices.system_hour.items()
        if f"/prices/system_hour/{escape_pointer(key)}" not in refused
    ]
    out += [
        f"{model}: {price:g} {prices.currency} per accelerator-hour, as supplied"
        for model, price in prices.accelerator_hour.items()
        if f"/prices/accelerator_hour/{escape_pointer(model)}" not in refused
    ]
    out += [
        f"{key}: bought for {price:g} {prices.currency} over {hours:g} hours, as supplied"
        for key, (price, hours) in prices.purchase.items()
        if f"/prices/purchase/{escape_pointer(key)}" not in refused
    ]
    if prices.energy_price_kwh is not None:
        out.append(f"energy at {prices.energy_price_kwh:g} {prices.currency} per kWh, as supplied")
    return out
