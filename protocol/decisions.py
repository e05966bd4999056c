"""A procurement question answered from measured runs: who meets the objectives, how many systems, at what cost.

A *question* (phase, workload, scenario, latency objectives, quality target, demand, candidate filters, prices,
criteria) is answered per *candidate configuration*: runs that are comparable on the iso-quality axis (same
workload, dataset, scenario and quality target; system, software and precision are the subject) and repeat one
configuration. For each candidate the answer says:

- whether it meets every latency objective, with the runs that show it. The claim is calibrated: "meets" is
  said only when the 95% interval of the measured percentile (Student t on the logs of one value per run) lies
  wholly under the objective, "misses" only when it lies wholly above; otherwise "uncertain", and with fewer
  than 3 runs "not enough evidence" with the face value in words (tests/protocol/test_calibration.py);
- how many systems carry the demand at steady state, with an interval from the sustainable rate's interval;
- cost per million outputs (price per system-hour, or purchase price over its lifetime; energy cost apart),
  energy per output where a meter measured it;
- which candidates are on the Pareto frontier of the criteria that matter (cost, latency, energy), never a
  single score;
- the evidence that is missing or weak (no steady state, no energy, too few repetitions, preview systems).

Nothing here touches a database: the registry passes the candidate runs' documents and references.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import comparability as cmp
from . import sizing
from .canonical import digest
from .errors import value_at
from .statistics import CONFIDENCE, MIN_VALUES, UNIT_NOUN, log_t_interval, rounded

KIND = "benchreg.decision-answer/1"
CRITERIA = ("cost", "latency", "energy")
RATE_UNITS = ("tokens/s", "samples/s", "requests/s", "queries/s", "images/s")
METHODS = {
    "meets": "per objective, one value of the measured percentile per run; 95% Student t interval on their "
    "logs; 'meets' when the interval's upper end is at or under the objective, 'misses' when its "
    "lower end is above it, else 'uncertain'; fewer than 3 runs: 'not enough evidence'",
    "systems": "systems = ceil(demand × (1 + headroom) ÷ sustainable rate per system); the interval uses the "
    "rate's 95% interval (Student t on the logs of one rate per run)",
    "cost": "price per system-hour ÷ (rate × 3600) × 1,000,000; a purchase price is spread over its "
    "lifetime hours; energy cost = energy per output × energy price, stated apart",
    "energy": "measured average power ÷ throughput (protocol.sizing.energy_per_output), geometric mean over "
    "runs, only from a meter",
    "frontier": "Pareto frontier of the point values over the criteria that matter and every eligible "
    "candidate has; a candidate that misses an objective is not eligible",
}


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
        phase = _text(data, "phase", "inference")
        if phase != "inference":
            raise DecisionError("/phase: decisions size inference serving; 'inference' is the only phase")
        objectives = []
        for i, obj in enumerate(data.get("objectives") or []):
            if not isinstance(obj, Mapping):
                raise DecisionError(f"/objectives/{i}: an objective is an object {{metric, percentile, max_ms}}")
            try:
                objectives.append(sizing.LatencyObjective.from_dict(obj))
            except (KeyError, TypeError, ValueError) as exc:
                raise DecisionError(f"/objectives/{i}: {exc}") from None
        quality = data.get("quality") or {}
        if not isinstance(quality, Mapping):
            raise DecisionError("/quality: an object {metric, target_ratio}")
        ratio = _number(quality, "target_ratio", "/quality/target_ratio", required=False)
        if ratio is not None and not 0 < ratio <= 1.5:
            raise DecisionError("/quality/target_ratio: a ratio of the reference quality, e.g. 0.99")
        demand = data.get("demand")
        if not isinstance(demand, Mapping):
            raise DecisionError('/demand: required, e.g. {"value": 20000, "unit": "tokens/s"}')
        value = _number(demand, "value", "/demand/value")
        unit = demand.get("unit")
        if unit not in RATE_UNITS:
            raise DecisionError(f"/demand/unit: one of {', '.join(RATE_UNITS)}")
        if value is None or not 0 < value <= MAX_DEMAND:
            raise DecisionError(f"/demand/value: a positive rate of at most {MAX_DEMAND:g}")
        headroom = _number(data, "headroom", "/headroom", required=False) or 0.0
        if not 0 <= headroom <= MAX_HEADROOM:
            raise DecisionError(f"/headroom: from 0 to {MAX_HEADROOM:g} (0.2 is 20% spare capacity)")
        cands = data.get("candidates") or {}
        prices = data.get("prices") or {}
        if not isinstance(cands, Mapping) or not isinstance(prices, Mapping):
            raise DecisionError("/candidates and /prices are objects")
        criteria = tuple(data.get("criteria") or CRITERIA)
        bad = [c for c in criteria if c not in CRITERIA]
        if bad or not criteria:
            raise DecisionError(f"/criteria: choose among {', '.join(CRITERIA)} (got {', '.join(map(str, bad))})")
        hourly = _prices(prices.get("system_hour"), "/prices/system_hour")
        purchase: dict[str, tuple[float, float]] = {}
        raw_purchase = prices.get("purchase") or {}
        if not isinstance(raw_purchase, Mapping):
            raise DecisionError("/prices/purchase: {accelerator model: {price, lifetime_hours}}")
        for model, entry in raw_purchase.items():
            where = f"/prices/purchase/{_escape(model)}"
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
            purchase[str(model)] = (price, hours)
        energy = _number(prices, "energy_per_kwh", "/prices/energy_per_kwh", required=False)
        if energy is not None and not 0 <= energy <= MAX_ENERGY_PRICE_KWH:
            raise DecisionError(f"/prices/energy_per_kwh: from 0 to {MAX_ENERGY_PRICE_KWH:g}")
        currency = prices.get("currency", "USD")
        if not isinstance(currency, str) or not 1 <= len(currency) <= 8:
            raise DecisionError("/prices/currency: a currency code such as USD")
        return cls(
            phase=phase,
            workload=_text(data, "workload"),
            workload_version=_text(data, "workload_version", None),
            scenario=_text(data, "scenario"),
            objectives=tuple(objectives),
            quality_target_ratio=ratio,
            quality_metric=_text(quality, "metric", None, "/quality/metric"),
            demand=value,
            demand_unit=str(unit),
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


def _escape(key: Any) -> str:
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
        number = _number(value, key, f"{where}/{_escape(key)}")
        if number is None or not 0 <= number <= MAX_PRICE_PER_HOUR:
            raise DecisionError(f"{where}/{_escape(key)}: a price per system-hour from 0 to {MAX_PRICE_PER_HOUR:g}")
        out[str(key)] = number
    return out


# ------------------------------------------------------------------------------------------ evidence


@dataclass(frozen=True)
class Evidence:
    """A candidate run: its document and how the answer cites it ({"id", "digest", "url"} from the registry)."""

    document: Mapping[str, Any]
    ref: Mapping[str, Any]


def accelerator_model(doc: Mapping[str, Any]) -> str:
    accels = (doc.get("system") or {}).get("accelerators") or []
    return (
        str(accels[0].get("model"))
        if accels
        else str(((doc.get("system") or {}).get("host") or {}).get("cpu_model") or "host CPU")
    )


def _vendor(doc: Mapping[str, Any]) -> str:
    accels = (doc.get("system") or {}).get("accelerators") or []
    return str(accels[0].get("vendor") or "") if accels else ""


def _origin(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((doc.get("provenance") or {}).get("origin")) or {}


def out_of_question(q: Question, doc: Mapping[str, Any]) -> str | None:
    """Why this run does not answer the question (None: it does). Filters first, then the iso-quality rule."""
    workload = doc.get("workload") or {}
    if doc.get("phase") != q.phase or workload.get("name") != q.workload:
        return f"another workload or phase ({doc.get('phase')} {workload.get('name')})"
    if q.workload_version and workload.get("version") != q.workload_version:
        return f"workload version {workload.get('version')}, the question asks {q.workload_version}"
    if (doc.get("scenario") or {}).get("kind") != q.scenario:
        return f"scenario {(doc.get('scenario') or {}).get('kind')}, the question asks {q.scenario}"
    if q.accelerator_models and accelerator_model(doc) not in q.accelerator_models:
        return f"accelerator {accelerator_model(doc)} is not among the candidates asked for"
    if q.accelerator_vendors and _vendor(doc) not in q.accelerator_vendors:
        return f"vendor {_vendor(doc) or 'not stated'} is not among the candidates asked for"
    weights = (doc.get("precision") or {}).get("weights")
    if q.precisions and weights not in q.precisions:
        return f"precision {weights} is not among the candidates asked for"
    if q.exclude_preview and _origin(doc).get("availability") == "preview":
        return "a preview system, and the question excludes previews"
    quality = (doc.get("metrics") or {}).get("quality") or {}
    for req in cmp.contract().requirements_for("iso-quality"):
        if value_at(doc, req.pointer) is None:
            return f"refused from the iso-quality axis: no {req.label} ({req.reason})"
    if q.quality_target_ratio is not None and quality.get("target_ratio") != q.quality_target_ratio:
        held = quality.get("target_ratio")
        return (
            f"{'states no quality target' if held is None else f'held to a quality target of {held}'} "
            f"of the reference, the question asks {q.quality_target_ratio:g}"
        )
    if q.quality_metric and quality.get("metric") != q.quality_metric:
        return f"quality measured as {quality.get('metric')}, the question asks {q.quality_metric}"
    found = sizing.sustainable_rate(doc, q.demand_unit)
    if found is not None and (problem := sizing.rate_problem(found[1])) is not None:
        return f"{found[0]}: {problem}"
    return None


# ------------------------------------------------------------------------------------------ one candidate


@dataclass(frozen=True)
class Interval:
    """A point value with its 95% interval, or the reason there is none."""

    value: float | None
    low: float | None = None
    high: float | None = None
    values: tuple[float, ...] = ()
    evidence: str | None = None  # None: the interval is calibrated

    def as_dict(self, unit: str | None = None) -> dict[str, Any]:
        return {
            "value": rounded(self.value),
            "ci_low": rounded(self.low),
            "ci_high": rounded(self.high),
            "confidence": CONFIDENCE if self.low is not None else None,
            "unit": unit,
            "values": [rounded(v) for v in self.values],
            "enough_evidence": self.evidence is None,
            "evidence": self.evidence,
        }


def interval(values: Sequence[float], noun: str = "run") -> Interval:
    """Geometric mean of positive values with a Student t interval on their logs (>= MIN_VALUES values)."""
    x = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    if not x:
        return Interval(None, evidence="no measured value")
    with np.errstate(over="ignore", under="ignore"):
        point = float(np.exp(np.mean(np.log(x))))
    if len(x) < MIN_VALUES:
        return Interval(
            point,
            values=tuple(x),
            evidence=f"{len(x)} {noun}{'s' if len(x) > 1 else ''}; a calibrated interval needs at least {MIN_VALUES}",
        )
    with np.errstate(over="ignore", under="ignore"):
        mid, low, high = (float(v) for v in log_t_interval(np.asarray(x)))
    if not all(math.isfinite(v) and v > 0 for v in (mid, low, high)):
        return Interval(
            point if math.isfinite(point) else None,
            values=tuple(x),
            evidence=("the values span too many orders of magnitude for a representable interval"),
        )
    return Interval(mid, low, high, tuple(x))


def objective_verdict(measured: Interval, max_ms: float) -> str:
    """'meets', 'misses', 'uncertain' or 'not-enough-evidence' for one latency objective (lower is better)."""
    if measured.value is None:
        return "not-measured"
    if measured.low is None or measured.high is None:
        return "not-enough-evidence"
    if measured.high <= max_ms:
        return "meets"
    if measured.low > max_ms:
        return "misses"
    return "uncertain"


def systems_needed(demand: float, headroom: float, rate: Interval) -> dict[str, Any]:
    """ceil(demand × (1 + headroom) ÷ rate), with the interval the rate's interval gives (fewer at high rate)."""
    if rate.value is None:
        return {"value": None, "ci_low": None, "ci_high": None, "reason": rate.evidence}
    load = demand * (1.0 + headroom)
    value = sizing.count(load, rate.value)
    if value is None:
        return {
            "value": None,
            "ci_low": None,
            "ci_high": None,
            "reason": f"more than {sizing.MAX_SYSTEMS:,} systems: not a plausible deployment, so no count is "
            "claimed (check the demand and the measured rate)",
        }
    high = sizing.count(load, rate.low) if rate.low else None
    return {
        "value": value,
        "ci_low": sizing.count(load, rate.high) if rate.high else None,
        "ci_high": high,
        "reason": rate.evidence
        if rate.low is None or high is not None
        else (f"the interval's upper end is above {sizing.MAX_SYSTEMS:,} systems"),
        "formula": "ceil(demand × (1 + headroom) ÷ sustainable rate per system)",
    }


def _scaled(x: Interval, factor: float, *, inverse: bool = False) -> Interval:
    """factor × x (or factor ÷ x, which swaps the interval's ends)."""
    if x.value is None:
        return x
    fin = sizing.finite
    if not inverse:
        out = Interval(
            fin(factor * x.value),
            fin(factor * x.low) if x.low else None,
            fin(factor * x.high) if x.high else None,
            x.values,
            x.evidence,
        )
    else:
        out = Interval(
            fin(factor / x.value),
            fin(factor / x.high) if x.high else None,
            fin(factor / x.low) if x.low else None,
            x.values,
            x.evidence,
        )
    if out.value is None:
        return Interval(None, evidence="not representable: the figures give no finite result")
    if (x.low is not None and out.low is None) or (x.high is not None and out.high is None):
        return Interval(out.value, values=x.values, evidence="the interval is not representable")
    return out


def _hourly_price(q: Question, model: str) -> tuple[float | None, str]:
    if model in q.system_hour:
        return q.system_hour[model], f"{q.system_hour[model]:g} {q.currency} per system-hour as supplied"
    if model in q.purchase:
        price, hours = q.purchase[model]
        return price / hours, (
            f"purchase price {price:g} {q.currency} over a lifetime of {hours:g} hours "
            f"= {price / hours:g} {q.currency} per system-hour"
        )
    if "*" in q.system_hour:
        return q.system_hour["*"], f"{q.system_hour['*']:g} {q.currency} per system-hour (price for any system)"
    return None, f"no price supplied for {model}"


def gaps(docs: Sequence[Mapping[str, Any]], energy: Interval, has_price: bool, model: str) -> list[dict[str, str]]:
    """Missing or weak evidence for one candidate, each with a code and words."""
    out = []
    unsteady = [
        i
        for i, d in enumerate(docs)
        if ((d.get("conditions") or {}).get("steady_state") or {}).get("reached") is not True
    ]
    if unsteady:
        out.append(
            {
                "code": "no-steady-state",
                "message": f"{len(unsteady)} of {len(docs)} run(s) did not show "
                "steady state (not reached or not assessed): a transient may have been measured",
            }
        )
    if len(docs) < MIN_VALUES:
        out.append(
            {
                "code": "too-few-repetitions",
                "message": f"{len(docs)} run(s) of this configuration; "
                f"intervals and calibrated verdicts need at least {MIN_VALUES}",
            }
        )
    if energy.value is None:
        out.append(
            {"code": "no-energy", "message": "no run measured energy with a meter, so energy per output is unknown"}
        )
    if any(_origin(d).get("availability") == "preview" for d in docs):
        out.append({"code": "preview", "message": "a preview system: not yet generally available as tested"})
    if any(((d.get("conditions") or {}).get("validity") or {}).get("valid") is False for d in docs):
        out.append({"code": "invalid", "message": "a run is marked invalid by its harness's checks"})
    if any(((d.get("metrics") or {}).get("quality") or {}).get("passed") is False for d in docs):
        out.append({"code": "quality-not-met", "message": "a run's measured quality did not reach its target"})
    if not has_price:
        out.append({"code": "no-price", "message": f"no price supplied for {model}, so no cost per output"})
    return out


def candidate(q: Question, runs: Sequence[Evidence], label: str) -> dict[str, Any]:
    """The answer for one configuration (its runs repeat it)."""
    docs = [r.document for r in runs]
    first = docs[0]
    model = accelerator_model(first)
    noun = UNIT_NOUN.get(q.demand_unit, "output")
    objectives: list[dict[str, Any]] = []
    for obj in q.objectives:
        if (first.get("scenario") or {}).get("kind") not in sizing.SERVING_SCENARIOS:
            objectives.append(
                {
                    "objective": obj.words(),
                    "verdict": "not-applicable",
                    "measured": None,
                    "reason": "this scenario measures no latency under a steady offered load",
                }
            )
            continue
        values = [((d.get("metrics") or {}).get(obj.metric) or {}).get(obj.percentile) for d in docs]
        measured = interval([float(v) for v in values if isinstance(v, int | float)])
        verdict = objective_verdict(measured, obj.max_ms)
        objectives.append(
            {
                "objective": obj.words(),
                "metric": obj.metric,
                "percentile": obj.percentile,
                "max_ms": obj.max_ms,
                "measured": measured.as_dict("ms"),
                "verdict": verdict,
                "runs": [dict(r.ref) for r in runs],
            }
        )
    verdicts = {o["verdict"] for o in objectives}
    quality_failed = any(((d.get("metrics") or {}).get("quality") or {}).get("passed") is False for d in docs)
    if quality_failed or verdicts & {"misses", "not-applicable", "not-measured"}:
        meets = "misses"
    elif verdicts <= {"meets"}:
        meets = "meets" if objectives or len(docs) >= MIN_VALUES else "not-enough-evidence"
    elif "uncertain" in verdicts:
        meets = "uncertain"
    else:
        meets = "not-enough-evidence"
    rates = []
    rate_metric = None
    for d in docs:
        found = sizing.sustainable_rate(d, q.demand_unit)
        if found is not None:
            rate_metric, value = found
            rates.append(value)
    rate = (
        interval(rates)
        if len(rates) == len(docs)
        else Interval(None, evidence=(f"not every run measured a rate in {q.demand_unit}"))
    )
    systems: dict[str, Any] = (
        systems_needed(q.demand, q.headroom, rate)
        if meets != "misses"
        else {
            "value": None,
            "ci_low": None,
            "ci_high": None,
            "reason": "does not meet the objectives at the tested load, so no count of systems is claimed",
        }
    )
    per_run_energy = [sizing.energy_per_output(d).value for d in docs]
    energy = (
        interval([v for v in per_run_energy if v is not None])
        if all(v is not None for v in per_run_energy)
        else Interval(None, evidence="not every run measured energy")
    )
    hourly, price_words = _hourly_price(q, model)
    cost = (
        _scaled(rate, hourly * 1e6 / 3600.0, inverse=True)
        if hourly is not None
        else Interval(None, evidence=price_words)
    )
    energy_cost = (
        _scaled(energy, q.energy_price_kwh * 1e6 / 3.6e6)
        if (q.energy_price_kwh is not None and energy.value is not None)
        else Interval(None, evidence="no energy price" if q.energy_price_kwh is None else "no measured energy")
    )
    first_measured = objectives[0]["measured"] if objectives else None
    latency = first_measured["value"] if isinstance(first_measured, dict) else None
    return {
        "label": label,
        "accelerator_model": model,
        "configuration": cmp.configuration(first, "iso-quality"),
        "runs": [dict(r.ref) for r in runs],
        "beside": [cmp.beside(d, "iso-quality") for d in docs],
        "meets": meets,
        "objectives": objectives,
        "rate": {**rate.as_dict(q.demand_unit), "metric": rate_metric},
        "systems_needed": systems,
        "cost_per_million": {**cost.as_dict(f"{q.currency} per million {noun}s"), "price": price_words},
        "energy_cost_per_million": energy_cost.as_dict(f"{q.currency} per million {noun}s"),
        "energy_per_output": energy.as_dict(f"J/{noun}"),
        "fleet_cost_per_hour": rounded(sizing.finite(hourly * systems["value"]))
        if hourly is not None and systems["value"]
        else None,
        "latency_ms": rounded(latency),
        "gaps": gaps(docs, energy, hourly is not None, model),
    }


# ------------------------------------------------------------------------------------------ the answer

CRITERION_FIELD = {
    "cost": ("cost_per_million", "value"),
    "energy": ("energy_per_output", "value"),
    "latency": ("latency_ms", None),
}


def _criterion(cand: Mapping[str, Any], name: str) -> float | None:
    block, key = CRITERION_FIELD[name]
    value = cand[block] if key is None else (cand[block] or {}).get(key)
    return float(value) if isinstance(value, int | float) else None


def frontier(cands: Sequence[dict[str, Any]], criteria: Sequence[str]) -> dict[str, Any]:
    """Pareto frontier (lower is better on every criterion) of the eligible candidates' point values."""
    eligible = [i for i, c in enumerate(cands) if c["meets"] != "misses"]
    used = [k for k in criteria if eligible and all(_criterion(cands[i], k) is not None for i in eligible)]
    dropped = [
        {"criterion": k, "lacking": [cands[i]["label"] for i in eligible if _criterion(cands[i], k) is None]}
        for k in criteria
        if k not in used
    ]
    points = {i: [_criterion(cands[i], k) or 0.0 for k in used] for i in eligible}

    def dominated(i: int) -> bool:
        return any(
            all(a <= b for a, b in zip(points[j], points[i], strict=True)) and points[j] != points[i]
            for j in eligible
            if j != i
        )

    members = [i for i in eligible if used and not dominated(i)]
    return {
        "criteria": used,
        "dropped": dropped,
        "members": members,
        "labels": [cands[i]["label"] for i in members],
        "method": METHODS["frontier"],
    }


def answer(question: Question, evidence: Sequence[Evidence]) -> dict[str, Any]:
    """The whole answer as a JSON value: candidates, frontier, what is left out and why, every run cited."""
    left_out, chosen = [], []
    for ev in evidence:
        why = out_of_question(question, ev.document)
        if why is None:
            chosen.append(ev)
        else:
            left_out.append({"run": dict(ev.ref), "reason": why})
    groups: dict[str, list[Evidence]] = {}
    for ev in chosen:
        key = cmp.comparability_key(ev.document, "iso-quality") + digest(cmp.configuration(ev.document, "iso-quality"))
        groups.setdefault(key, []).append(ev)
    ordered = list(groups.values())
    labels = (
        cmp.arm_labels(
            [g[0].document for g in ordered],
            "iso-quality",
            [cmp.configuration(g[0].document, "iso-quality") for g in ordered],
        )
        if ordered
        else []
    )
    cands = [candidate(question, g, label) for g, label in zip(ordered, labels, strict=True)]
    rank = {"meets": 0, "uncertain": 1, "not-enough-evidence": 2, "misses": 3}
    cands.sort(key=lambda c: (rank.get(c["meets"], 4), c["systems_needed"]["value"] or math.inf, c["label"]))
    front = frontier(cands, question.criteria)
    cited = sorted({str(r.get("digest")) for c in cands for r in c["runs"]})
    out: dict[str, Any] = {
        "kind": KIND,
        "question": question.words(),
        "candidates": cands,
        "frontier": front,
        "left_out": left_out,
        "cited": cited,
        "methods": dict(METHODS),
        "contract": {"version": cmp.contract().version, "axis": "iso-quality"},
        "summary": summary(cands, front),
    }
    _representable(out)
    return out


SAFE_INTEGER = 2**53 - 1  # the largest integer every JSON reader keeps exactly (RFC 8785, I-JSON)


def _representable(value: Any, where: str = "") -> None:
    """DecisionError naming the first number in `value` that is not finite or not an integer JSON keeps exactly
    (a guard: each figure above is checked where it is computed, so this names a bug, never a stored run)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int) and abs(value) > SAFE_INTEGER:
        raise DecisionError(f"{where or '/'}: the answer's figure {value} is beyond what JSON keeps exactly")
    if isinstance(value, float) and not math.isfinite(value):
        raise DecisionError(f"{where or '/'}: the answer's figure is not a finite number")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _representable(v, f"{where}/{_escape(k)}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _representable(v, f"{where}/{i}")


def summary(cands: Sequence[Mapping[str, Any]], front: Mapping[str, Any]) -> list[str]:
    """One sentence per candidate, verdict first, the gaps that weaken it in the same sentence (never later)."""
    out = []
    for c in cands:
        systems = c["systems_needed"]
        count = (
            f"{systems['value']} system(s)"
            + (f" (95% CI {systems['ci_low']}–{systems['ci_high']})" if systems.get("ci_low") else " (no interval)")
            if systems["value"]
            else "no count of systems"
        )
        weak = "; ".join(g["message"] for g in c["gaps"] if g["code"] != "no-price")
        out.append(
            f"{c['label']}: {c['meets'].replace('-', ' ')}; {count}"
            + (" — on the frontier" if c["label"] in front["labels"] else "")
            + (f". Caveats: {weak}." if weak else ".")
        )
    return out
