"""A training decision (DECISIONS.md, Training): R runs of a workload per period under a time budget per run,
answered per size of each configuration with the time to train, whether it meets the budget, the systems needed,
accelerator-hours, cost and energy per run, and the scaling efficiency at that size.

The size (accelerators, or devices of a distributed run, and nodes) is part of the configuration: each size of a
configuration is one candidate, and the sizes of one configuration form its *family*, against whose smallest
measured size the scaling efficiency is read. A size never measured is never extrapolated; a family measured at one
size has the gap `one-size`.

- **Time to train**: MLPerf Training's own score where imported (`metrics.time_to_quality.seconds`, with an interval
  from the runs MLPerf averaged, each × its scaling factor), else the runners' time to quality, one value per run.
  A run that measured throughput over fixed steps gives no time to train (gap `no-time-to-train`).
- **Meets the budget** only when the 95% interval's upper end is at or under the budget; **misses** when its lower
  end is above it; otherwise, or without an interval, **cannot tell** (the point value in words).
- **Systems needed** = ceil(R × time to train ÷ (period hours × availability)) + k, its interval from the time's.
- **Accelerator-hours per run** = time to train × accelerators; **cost per run** = the fleet's cost over the period
  ÷ R (systems × price per system-hour × period hours ÷ R), with the compute cost of one run (price × time) beside it;
  **energy per run** only from a meter over the run (`metrics.energy.joules`).
- **Scaling efficiency** at n against the family's smallest size b: for a benchreg scaling plan with 1-device runs,
  protocol.scaling's (throughput-based, weak or strong named); otherwise from time to train,
  E = T(b)·b ÷ (T(n)·n), or from throughput, E = X(n)·b ÷ (X(b)·n), with Welch's interval on the mean logs (3 values
  a side). For MLPerf results it is labelled "derived, not an MLPerf metric".
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import comparability as cmp
from .. import scaling as scaling_plans
from ..canonical import digest
from ..statistics import CONFIDENCE, MIN_VALUES, geometric_mean, log_ratio_interval, rounded
from .answer import KIND, frontier, refused_inputs, representable, systems_words
from .candidate import Interval, hourly_price, interval, objective_verdict
from .evidence import (
    Evidence,
    accelerator_count,
    accelerator_model,
    configuration_key,
    not_a_candidate,
    not_measured,
    off_quality,
    origin,
)
from .question import (
    DecisionError,
    price_assumptions,
    read_currency,
    read_energy_price,
    read_number,
    read_prices,
    read_purchase,
    read_quality,
    read_redundancy,
    read_sections,
    read_text,
    read_texts,
    refuse_unknown_fields,
)

PHASE = "training"
# objective_verdict's codes as a training answer states them (docs/decisions.md, "Training decisions")
BUDGET_CODES = {"not-measured": "no-time-to-train", "not-enough-evidence": "cannot-tell", "uncertain": "cannot-tell"}
SCENARIO = "time-to-quality"  # the decision's question key: time to train is what it answers
TRAINING_SCENARIOS = ("time-to-quality", "fixed-steps")
CRITERIA = ("cost", "time", "energy", "scaling")

MAX_RUNS = 1e6  # training runs to complete per period
PERIOD_HOURS = (1.0, 1e5)  # an hour to about 11 years
MAX_BUDGET_HOURS = 1e5
AVAILABILITY = (0.0, 1.0)  # above 0, at most 1: the share of the period a system trains

FIELDS = {
    "": (
        "phase",
        "workload",
        "workload_version",
        "quality",
        "demand",
        "time_budget_hours",
        "availability",
        "redundancy",
        "candidates",
        "prices",
        "criteria",
    ),
    "/quality": ("metric", "target_ratio"),
    "/demand": ("runs", "period_hours"),
    "/candidates": ("accelerator_models", "accelerator_vendors", "precisions", "exclude_preview"),
    "/prices": ("currency", "system_hour", "accelerator_hour", "purchase", "energy_per_kwh"),
}
RANGES = {
    "/demand/runs": (1, MAX_RUNS),
    "/demand/period_hours": PERIOD_HOURS,
    "/time_budget_hours": (0.0, MAX_BUDGET_HOURS),
    "/availability": AVAILABILITY,
}

METHODS = {
    "time": "MLPerf Training's published score where imported (olympic mean × scaling factor; the interval from the "
    "runs MLPerf averaged, each × the factor, Student t on their logs); otherwise the runner's time to quality, one "
    "value per run, geometric mean with a 95% Student t interval on the logs from 3 runs",
    "budget": "'meets' when the 95% interval's upper end is at or under the time budget, 'misses' when its lower end "
    "is above it; otherwise, or with no interval, 'cannot tell'",
    "systems": "systems = ceil(R × time to train ÷ (period hours × availability)) + spare systems (N+k); the interval "
    "from the time's interval; a system's training hours are pooled over the period (runs back to back)",
    "cost": "cost per run = systems × price per system-hour × period hours ÷ R (the fleet paid for the period, spares "
    "and idle hours included); compute cost per run = price per system-hour × time to train, beside it",
    "energy": "measured energy of a run (metrics.energy.joules, a meter over the run), in kWh; never from TDP",
    "scaling": "scaling efficiency at n devices against the smallest measured size b of the same configuration: a "
    "benchreg scaling plan with 1-device runs by protocol.scaling (throughput, weak or strong as the plan names it); "
    "otherwise E = T(b)·b ÷ (T(n)·n) on time to train, or X(n)·b ÷ (X(b)·n) on throughput; 95% Welch t interval on "
    "the mean logs from 3 values a side; never extrapolated to a size not measured. As a frontier criterion it is "
    "1 ÷ E (lower is better)",
}

GAP_TITLES = {
    "no-time-to-train": "no time to train measured",
    "one-size": "measured at one size only",
    "too-few-repetitions": "fewer than 3 runs",
    "no-energy": "no measured energy",
    "no-price": "no price stated",
    "quality-not-met": "quality target not met",
    "preview": "preview system",
}

BUDGET_WORDS = {
    "meets": "meets the time budget",
    "misses": "misses the time budget",
    "cannot-tell": "cannot tell whether it meets the time budget",
    "no-time-to-train": "no time to train measured",
}


@dataclass(frozen=True)
class TrainingQuestion:
    """A validated training question (see `from_dict` for the JSON form)."""

    workload: str
    workload_version: str | None
    runs: int
    period_hours: float
    time_budget_hours: float
    availability: float = 1.0
    redundancy: int = 0
    quality_target_ratio: float | None = None
    quality_metric: str | None = None
    accelerator_models: tuple[str, ...] = ()
    accelerator_vendors: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ()
    exclude_preview: bool = False
    currency: str = "USD"
    system_hour: Mapping[str, float] = field(default_factory=dict)
    accelerator_hour: Mapping[str, float] = field(default_factory=dict)
    purchase: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    energy_price_kwh: float | None = None
    criteria: tuple[str, ...] = CRITERIA
    phase: str = PHASE
    scenario: str = SCENARIO
    # read by the shared filters and pricing (evidence.py, candidate.py): a training question names none of these
    served_model: None = None
    nameplate_kw: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingQuestion:
        """Reads the JSON form; raises DecisionError naming the wrong field by JSON pointer."""
        refuse_unknown_fields(data, FIELDS)
        quality, ratio = read_quality(data)
        cands, prices = read_sections(data)
        runs, period = _demand(data)
        return cls(
            workload=read_text(data, "workload"),
            workload_version=read_text(data, "workload_version", None),
            runs=runs,
            period_hours=period,
            time_budget_hours=_ranged(data, "time_budget_hours", (0.0, MAX_BUDGET_HOURS), "hours", required=True),
            availability=_ranged(data, "availability", AVAILABILITY, "the share of the period a system trains")
            if data.get("availability") is not None
            else 1.0,
            redundancy=read_redundancy(data),
            quality_target_ratio=ratio,
            quality_metric=read_text(quality, "metric", None, "/quality/metric"),
            accelerator_models=read_texts(cands, "accelerator_models"),
            accelerator_vendors=read_texts(cands, "accelerator_vendors"),
            precisions=read_texts(cands, "precisions"),
            exclude_preview=bool(cands.get("exclude_preview", False)),
            currency=read_currency(prices),
            system_hour=read_prices(prices.get("system_hour"), "/prices/system_hour"),
            accelerator_hour=read_prices(
                prices.get("accelerator_hour"), "/prices/accelerator_hour", configuration=False
            ),
            purchase=read_purchase(prices),
            energy_price_kwh=read_energy_price(prices),
            criteria=_criteria(data),
        )

    def words(self) -> str:
        """The question in one sentence, as on a report's cover."""
        version = f" {self.workload_version}" if self.workload_version else ""
        if self.quality_target_ratio is not None:
            target = f"quality at least {self.quality_target_ratio:g} of the reference"
        else:
            target = "each run held to its benchmark's own quality target"
        spare = f" plus {self.redundancy} spare system{'s' if self.redundancy > 1 else ''}" if self.redundancy else ""
        return (
            f"Which systems train {self.workload}{version} {self.runs} time(s) every {self.period_hours:g} hours"
            f" ({self.availability:.0%} of the period available){spare}, each run within {self.time_budget_hours:g}"
            f" hours, with {target}; at what size, how many systems, accelerator-hours, cost and energy per run?"
        )

    def assumptions(self, refused: frozenset[str] = frozenset()) -> list[str]:
        """Every input the figures rest on, in words."""
        out = [
            f"{self.runs} training run(s) to complete every {self.period_hours:g} hours",
            f"each run within {self.time_budget_hours:g} hours (the time budget)",
            f"a system trains {self.availability:.0%} of the period; {self.redundancy} spare system(s) "
            f"(N+{self.redundancy})",
            "a run trains on one system of the candidate's size; a system's training hours are pooled over the period "
            "(runs back to back, one after another)",
            "a size never measured is never extrapolated: each size answers only from its own runs",
        ]
        out += price_assumptions(self, refused)
        return out


def _ranged(data: Mapping[str, Any], key: str, bounds: tuple[float, float], what: str, required: bool = False) -> float:
    value = read_number(data, key, f"/{key}", required=required)
    low, high = bounds
    if value is None or not low < value <= high:
        raise DecisionError(f"/{key}: {what}, above {low:g} and at most {high:g}")
    return value


def _demand(data: Mapping[str, Any]) -> tuple[int, float]:
    demand = data.get("demand")
    if not isinstance(demand, Mapping):
        raise DecisionError('/demand: required, e.g. {"runs": 12, "period_hours": 720} (12 training runs a month)')
    runs = demand.get("runs")
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        raise DecisionError(f"/demand/runs: a whole number of training runs per period, 1 to {MAX_RUNS:g}")
    period = read_number(demand, "period_hours", "/demand/period_hours")
    if period is None or not PERIOD_HOURS[0] <= period <= PERIOD_HOURS[1]:
        raise DecisionError(f"/demand/period_hours: the period in hours, {PERIOD_HOURS[0]:g} to {PERIOD_HOURS[1]:g}")
    return runs, period


def _criteria(data: Mapping[str, Any]) -> tuple[str, ...]:
    criteria = tuple(data.get("criteria") or CRITERIA)
    bad = [c for c in criteria if c not in CRITERIA]
    if bad or not criteria:
        raise DecisionError(
            f"/criteria: for a training decision choose among {', '.join(CRITERIA)} (got {', '.join(map(str, bad))})"
        )
    return criteria


# --- the runs ----------------------------------------------------------------------------------------------------


def out_of_training(q: TrainingQuestion, doc: Mapping[str, Any]) -> str | None:
    """Why a run does not answer the training question (None: it does)."""
    workload = doc.get("workload") or {}
    if doc.get("phase") != PHASE or workload.get("name") != q.workload:
        return f"another workload or phase ({doc.get('phase')} {workload.get('name')})"
    if q.workload_version and workload.get("version") != q.workload_version:
        return f"workload version {workload.get('version')}, the question asks {q.workload_version}"
    kind = (doc.get("scenario") or {}).get("kind")
    if kind not in TRAINING_SCENARIOS:
        return f"scenario {kind}: neither a time to quality nor a training throughput"
    return (
        not_a_candidate(q, doc)  # type: ignore[arg-type]
        or not_measured(doc)
        or off_quality(q, doc)  # type: ignore[arg-type]
    )


def devices(doc: Mapping[str, Any]) -> int:
    """The size: the distributed run's world size, else the accelerators of the tested system, else 1 device."""
    world = ((doc.get("scenario") or {}).get("distributed") or {}).get("world_size")
    if isinstance(world, int) and not isinstance(world, bool) and world > 0:
        return world
    return accelerator_count(doc) or 1


def nodes(doc: Mapping[str, Any]) -> int:
    value = (doc.get("system") or {}).get("nodes")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def _size_neutral(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The run without what its size changes: accelerator counts, nodes, world size and the batch that grows with
    them, the CPU threads a rank gets, the measured step count. What is left is its configuration family."""
    out = copy.deepcopy(dict(doc))
    system = out.get("system") or {}
    for acc in system.get("accelerators") or []:
        acc.pop("count", None)
    system.pop("nodes", None)
    system.pop("name", None)  # MLPerf names a system by its size ("..._n448_...")
    shape = (out.get("workload") or {}).get("shape") or {}
    for key in ("batch_size", "micro_batch_size"):
        shape.pop(key, None)
    scenario = out.get("scenario") or {}
    scenario.pop("steps", None)
    distributed = scenario.get("distributed") or {}
    for key in ("world_size", "nodes", "processes_per_node", "per_device_batch", "global_batch"):
        distributed.pop(key, None)
    plan = distributed.get("scaling") or {}
    for key in ("index", "repeat", "sizes"):
        plan.pop(key, None)
    settings = (out.get("software") or {}).get("settings") or {}
    for key in ("torch.num_threads", "torch.num_interop_threads", "process.cpu_affinity_count"):
        settings.pop(key, None)
    return out


@dataclass
class _Size:
    devices: int
    nodes: int
    batch: Any
    runs: list[Evidence]


@dataclass
class _Family:
    doc: Mapping[str, Any]
    config: dict[str, Any]
    sizes: dict[tuple[int, int, Any], _Size]


def families(chosen: Sequence[Evidence]) -> list[_Family]:
    """The runs grouped by size-neutral configuration (a family), then by size (devices, nodes, global batch)."""
    found: dict[str, _Family] = {}
    for ev in chosen:
        neutral = _size_neutral(ev.document)
        # The scaling axis (comparability contract 1.3) is the contract's own answer to "the same configuration at
        # another size": it controls all but the size, and only shows what a size changes in how a result is
        # stated (MLPerf's per-size scaling factor in the time-to-train method).
        key, family = cmp.key_and_configuration(neutral, "scaling")
        # Named as the iso-quality axis names a configuration (hardware, software, precision): what the labels say.
        config = cmp.key_and_configuration(neutral, "iso-quality")[1]
        fam = found.setdefault(key + digest(family), _Family(neutral, config, {}))
        batch = ((ev.document.get("workload") or {}).get("shape") or {}).get("batch_size")
        size = (devices(ev.document), nodes(ev.document), batch)
        fam.sizes.setdefault(size, _Size(size[0], size[1], batch, [])).runs.append(ev)
    return list(found.values())


# --- figures of one size ---------------------------------------------------------------------------------------


def _mlperf(doc: Mapping[str, Any]) -> bool:
    return origin(doc).get("kind") == "mlperf-training"


def time_to_train(docs: Sequence[Mapping[str, Any]]) -> tuple[Interval, str]:
    """The time to train in hours with its interval, and where it comes from; Interval(None) when a run has none."""
    seconds = [((d.get("metrics") or {}).get("time_to_quality") or {}).get("seconds") for d in docs]
    if not all(isinstance(s, int | float) and s > 0 for s in seconds):
        return Interval(None, evidence="no time to train measured"), "none"
    hours = [float(s) / 3600.0 for s in seconds if isinstance(s, int | float)]
    if len(docs) == 1 and _mlperf(docs[0]):
        return _published(docs[0], hours[0])
    return interval(hours), "the runner's time to quality, one value per run"


def _published(doc: Mapping[str, Any], hours: float) -> tuple[Interval, str]:
    """MLPerf's score as published, with the interval of the runs it averaged (each × the scaling factor)."""
    ttq = (doc.get("metrics") or {}).get("time_to_quality") or {}
    factor = float(ttq.get("scaling_factor") or 1.0)
    used = [
        float(r["seconds"]) * factor / 3600.0
        for r in origin(doc).get("runs") or []
        if r.get("used") and isinstance(r.get("seconds"), int | float) and r["seconds"] > 0
    ]
    basis = (
        f"MLPerf Training {origin(doc).get('round')} published score (olympic mean × scaling factor {factor:g}); "
        f"the interval from the {len(used)} runs MLPerf averaged"
    )
    spread = interval(used, "averaged run")
    return Interval(hours, spread.low, spread.high, tuple(used), spread.evidence), basis


def budget_verdict(time: Interval, budget: float) -> str:
    """'meets' only when the interval's upper end is at or under the budget; 'misses' when its lower end is above."""
    verdict = objective_verdict(time, budget)  # the same reading of an interval against a maximum
    return BUDGET_CODES.get(verdict, verdict)


def systems_for(q: TrainingQuestion, hours: float | None) -> int | None:
    """ceil(R × hours ÷ (period × availability)), at least 1; None beyond 1e9 systems."""
    if hours is None:
        return None
    need = q.runs * hours / (q.period_hours * q.availability)
    if not math.isfinite(need) or need > 1e9:
        return None
    return max(1, math.ceil(need - 1e-9))


def systems_needed(q: TrainingQuestion, time: Interval) -> dict[str, Any]:
    formula = "ceil(R × time to train ÷ (period hours × availability)) + spare systems (N+k)"
    value = systems_for(q, time.value)
    if value is None:
        reason = time.evidence if time.value is None else "more than 1e9 systems: not a plausible fleet"
        return {"value": None, "ci_low": None, "ci_high": None, "reason": reason, "formula": formula}
    low, high = systems_for(q, time.low), systems_for(q, time.high)
    k = q.redundancy
    return {
        "value": value + k,
        "ci_low": low + k if low is not None else None,
        "ci_high": high + k if high is not None else None,
        "training": value,
        "spare": k,
        "reason": time.evidence,
        "formula": formula,
    }


def _scale(x: Interval, factor: float, unit: str) -> dict[str, Any]:
    if x.value is None:
        return Interval(None, evidence=x.evidence).as_dict(unit)
    low = x.low * factor if x.low is not None else None
    high = x.high * factor if x.high is not None else None
    return Interval(x.value * factor, low, high, evidence=x.evidence).as_dict(unit)


def _energy_kwh(docs: Sequence[Mapping[str, Any]]) -> Interval:
    joules = [((d.get("metrics") or {}).get("energy") or {}).get("joules") for d in docs]
    if not all(isinstance(j, int | float) and j > 0 for j in joules):
        return Interval(None, evidence="no run measured its energy with a meter")
    return interval([float(j) / 3.6e6 for j in joules if isinstance(j, int | float)])


def _fleet_cost(q: TrainingQuestion, hourly: float | None, words: str, systems: Mapping[str, Any]) -> dict[str, Any]:
    unit = f"{q.currency} per run"
    if hourly is None:
        return {**Interval(None, evidence=words).as_dict(unit), "price": words}
    if not systems.get("value"):
        return {**Interval(None, evidence="no count of systems").as_dict(unit), "price": words}
    per = hourly * q.period_hours / q.runs
    low, high = systems.get("ci_low"), systems.get("ci_high")
    out = Interval(
        systems["value"] * per,
        low * per if low is not None else None,
        high * per if high is not None else None,
        evidence=None if low is not None and high is not None else "the count of systems has no interval",
    )
    return {**out.as_dict(unit), "price": words}


# --- scaling efficiency ------------------------------------------------------------------------------------------


def _values(size: _Size, by: str) -> list[float]:
    """One time to train (hours) per run, or the runs' independent throughputs (samples/s)."""
    docs = [r.document for r in size.runs]
    if by == "time":
        time, _ = time_to_train(docs)
        return list(time.values) if time.values else ([time.value] if time.value else [])
    out: list[float] = []
    for d in docs:
        try:
            out += scaling_plans.throughput_values(dict(d))
        except scaling_plans.ScalingError:
            return []
    return out


SizeKey = tuple[int, int, str]


def size_key(size: _Size) -> SizeKey:
    """A size of a family: devices, nodes and global batch (two batches at one device count are two candidates)."""
    return size.devices, size.nodes, str(size.batch)


def family_efficiency(fam: _Family) -> dict[SizeKey, dict[str, Any]]:
    """Scaling efficiency per size of one family; empty for a family measured at one device count."""
    sizes = sorted(fam.sizes.values(), key=lambda s: (s.devices, s.nodes))
    mlperf = all(_mlperf(r.document) for s in sizes for r in s.runs)
    label = "derived, not an MLPerf metric" if mlperf else "derived"
    if len({s.devices for s in sizes}) < 2:
        return {}
    plan = _plan_efficiency(sizes)
    if plan is not None:
        return {size_key(s): {**plan[s.devices], "label": label} for s in sizes if s.devices in plan}
    base = sizes[0]
    by = "time" if all(_values(s, "time") for s in sizes) else "throughput"
    return {size_key(s): {**_ratio_efficiency(base, s, by), "label": label} for s in sizes}


def _plan_efficiency(sizes: Sequence[_Size]) -> dict[int, dict[str, Any]] | None:
    """protocol.scaling's figures where every run belongs to one plan with 1-device runs."""
    docs = [dict(r.document) for s in sizes for r in s.runs]
    ids = {((d.get("scenario") or {}).get("distributed") or {}).get("scaling", {}).get("id") for d in docs}
    if len(ids) != 1 or None in ids or not any(s.devices == 1 for s in sizes):
        return None
    try:
        (plan,) = scaling_plans.points(docs)
        rows = scaling_plans.efficiency(plan)
    except (scaling_plans.ScalingError, ValueError):
        return None
    return {
        r.devices: {
            "value": rounded(r.efficiency),
            "ci_low": rounded(r.low),
            "ci_high": rounded(r.high),
            "against_devices": 1,
            "basis": f"protocol.scaling, {plan.mode} scaling plan {plan.id}, on throughput: {r.evidence}",
        }
        for r in rows
    }


def _ratio_efficiency(base: _Size, size: _Size, by: str) -> dict[str, Any]:
    b, n = base.devices, size.devices
    if size is base:
        return {
            "value": 1.0,
            "ci_low": None,
            "ci_high": None,
            "against_devices": b,
            "basis": "the smallest size measured: 1 by definition",
        }
    x, y = np.asarray(_values(base, by)), np.asarray(_values(size, by))
    if not x.size or not y.size:
        return {"value": None, "ci_low": None, "ci_high": None, "against_devices": b, "basis": "no figure"}
    # time: E = T(b)·b ÷ (T(n)·n) = (T(b) ÷ T(n)) · b ÷ n; throughput: E = (X(n) ÷ X(b)) · b ÷ n
    subject, baseline = (x, y) if by == "time" else (y, x)
    formula = "T(b)·b ÷ (T(n)·n) on time to train" if by == "time" else "X(n)·b ÷ (X(b)·n) on throughput"
    if min(x.size, y.size) < MIN_VALUES:
        ratio = geometric_mean(subject) / geometric_mean(baseline)
        return {
            "value": rounded(ratio * b / n),
            "ci_low": None,
            "ci_high": None,
            "against_devices": b,
            "basis": f"{formula} against {b} device(s); fewer than {MIN_VALUES} values a side: no interval",
        }
    ratio, low, high = (float(v) for v in log_ratio_interval(subject, baseline, CONFIDENCE))
    return {
        "value": rounded(ratio * b / n),
        "ci_low": rounded(low * b / n),
        "ci_high": rounded(high * b / n),
        "against_devices": b,
        "basis": f"{formula} against {b} device(s); {CONFIDENCE:.0%} Welch t interval on mean logs, "
        f"{y.size} and {x.size} values",
    }


# --- one candidate -----------------------------------------------------------------------------------------------


def _label(fam_label: str, size: _Size, doc: Mapping[str, Any]) -> str:
    """'16x H100, 2 nodes, global batch 512', then what sets its configuration apart from the others' (the
    accelerator model, which the size already names, and an unspecified precision left out of that part)."""
    where = f", {size.nodes} nodes" if size.nodes > 1 else ""
    batch = f", global batch {size.batch}" if size.batch is not None else ""
    model = accelerator_model(doc)
    apart = ", ".join(part for part in fam_label.split(", ") if part and part not in (model, "unspecified"))
    head = configuration_key(doc) if accelerator_count(doc) else f"{size.devices}x {model}"
    return f"{head}{where}{batch}" + (f" — {apart}" if apart else "")


def candidate(
    q: TrainingQuestion,
    size: _Size,
    label: str,
    family_label: str,
    efficiency: Mapping[str, Any] | None,
    sizes_measured: Sequence[int],
) -> dict[str, Any]:
    runs = size.runs
    docs = [r.document for r in runs]
    doc = docs[0]
    time, basis = time_to_train(docs)
    verdict = budget_verdict(time, q.time_budget_hours)
    if _quality_failed(docs):
        verdict = "misses"
    systems = (
        systems_needed(q, time)
        if verdict != "misses"
        else {"value": None, "ci_low": None, "ci_high": None, "reason": "misses the time budget or quality"}
    )
    accelerators = accelerator_count(doc) or size.devices
    hourly, price_words = hourly_price(q, doc)  # type: ignore[arg-type]
    energy = _energy_kwh(docs)
    scaling = _scaling_block(efficiency, sizes_measured)
    out = {
        "label": label,
        "family": family_label,
        "accelerator_model": accelerator_model(doc),
        "configuration": cmp.configuration(doc, "iso-quality"),
        "size": {
            "devices": size.devices,
            "accelerators": accelerators,
            "nodes": size.nodes,
            "global_batch": size.batch,
        },
        "runs": [dict(r.ref) for r in runs],
        "beside": [cmp.beside(d, "iso-quality") for d in docs],
        "meets": verdict,
        "budget": {
            "hours": q.time_budget_hours,
            "verdict": verdict,
            "words": BUDGET_WORDS[verdict] + _budget_detail(time, q.time_budget_hours, verdict),
        },
        "time_to_train": {**time.as_dict("hours"), "basis": basis},
        "accelerator_hours": _scale(time, float(accelerators), "accelerator-hours per run"),
        "systems_needed": systems,
        "cost_per_run": _fleet_cost(q, hourly, price_words, systems),
        "compute_cost_per_run": {**_scale(time, hourly, f"{q.currency} per run"), "price": price_words}
        if hourly is not None
        else {**Interval(None, evidence=price_words).as_dict(f"{q.currency} per run"), "price": price_words},
        "energy_per_run": energy.as_dict("kWh per run"),
        "energy_cost_per_run": _scale(energy, q.energy_price_kwh, f"{q.currency} per run")
        if q.energy_price_kwh is not None
        else Interval(None, evidence="no energy price").as_dict(f"{q.currency} per run"),
        "scaling": scaling,
        "scaling_criterion": _inverse(scaling),
        "gaps": _gaps(docs, time, energy, hourly is not None, configuration_key(doc), sizes_measured, runs),
        "all_runs": len(runs),
    }
    return out


def _quality_failed(docs: Sequence[Mapping[str, Any]]) -> bool:
    return any(((d.get("metrics") or {}).get("quality") or {}).get("passed") is False for d in docs)


def _budget_detail(time: Interval, budget: float, verdict: str) -> str:
    if time.value is None:
        return " (the runs measured training throughput over fixed steps, not the time to reach a quality target)"
    ci = f", 95% CI {time.low:.4g}–{time.high:.4g} h" if time.low is not None and time.high is not None else ""
    why = "" if verdict != "cannot-tell" or time.low is not None else f" ({time.evidence})"
    return f": {time.value:.4g} h{ci} against {budget:g} h{why}"


def _scaling_block(efficiency: Mapping[str, Any] | None, sizes_measured: Sequence[int]) -> dict[str, Any]:
    if efficiency is None:
        return {
            "value": None,
            "ci_low": None,
            "ci_high": None,
            "sizes_measured": list(sizes_measured),
            "basis": f"measured at one size only ({sizes_measured[0]} devices): no scaling efficiency",
        }
    return {**efficiency, "sizes_measured": list(sizes_measured)}


def _inverse(scaling: Mapping[str, Any]) -> dict[str, Any]:
    """1 ÷ E, the frontier's reading of scaling efficiency (lower is better), its interval's ends swapped."""
    e, low, high = scaling.get("value"), scaling.get("ci_low"), scaling.get("ci_high")
    return {
        "value": rounded(1.0 / e) if e else None,
        "ci_low": rounded(1.0 / high) if high else None,
        "ci_high": rounded(1.0 / low) if low else None,
        "unit": "1 ÷ scaling efficiency",
    }


def _gaps(
    docs: Sequence[Mapping[str, Any]],
    time: Interval,
    energy: Interval,
    has_price: bool,
    key: str,
    sizes_measured: Sequence[int],
    runs: Sequence[Evidence],
) -> list[dict[str, str]]:
    out = []
    if time.value is None:
        out.append(
            {
                "code": "no-time-to-train",
                "message": "no time to train measured: the runs measured training throughput over fixed steps, so "
                "there is no time to train, count of systems, accelerator-hours or cost per run",
            }
        )
    if len(sizes_measured) < 2:
        out.append(
            {
                "code": "one-size",
                "message": f"measured at one size only ({sizes_measured[0]} devices): no scaling efficiency, and no "
                "other size is extrapolated",
            }
        )
    if time.value is not None and time.low is None:
        out.append(
            {"code": "too-few-repetitions", "message": f"no 95% interval of the time to train ({time.evidence})"}
        )
    if energy.value is None:
        out.append({"code": "no-energy", "message": "no run measured its energy with a meter: no energy per run"})
    if not has_price:
        out.append({"code": "no-price", "message": f"no price stated for {key}, so no cost per run"})
    if _quality_failed(docs):
        out.append({"code": "quality-not-met", "message": "a run's measured quality did not reach its target"})
    if any(origin(d).get("availability") == "preview" for d in docs):
        out.append({"code": "preview", "message": "a preview system: not yet generally available as tested"})
    return out


# --- the whole answer --------------------------------------------------------------------------------------------

CRITERION_FIELD = {
    "cost": ("cost_per_run", "value"),
    "time": ("time_to_train", "value"),
    "energy": ("energy_per_run", "value"),
    "scaling": ("scaling_criterion", "value"),
}


def answer(q: TrainingQuestion, evidence: Sequence[Evidence]) -> dict[str, Any]:
    """The training answer as a JSON value: one candidate per size of each configuration, the frontier, what is
    left out and why, every run cited."""
    left_out, chosen = [], []
    for ev in evidence:
        why = out_of_training(q, ev.document)
        if why is None:
            chosen.append(ev)
        else:
            left_out.append({"run": dict(ev.ref), "reason": why})
    fams = families(chosen)
    fam_labels = _family_labels(fams)
    cands = []
    for fam, fam_label in zip(fams, fam_labels, strict=True):
        eff = family_efficiency(fam)
        measured = sorted({s.devices for s in fam.sizes.values()})
        for size in sorted(fam.sizes.values(), key=lambda s: (s.devices, s.nodes, str(s.batch))):
            label = _label(fam_label, size, size.runs[0].document)
            cands.append(candidate(q, size, label, fam_label, eff.get(size_key(size)) if eff else None, measured))
    rank = {"meets": 0, "cannot-tell": 1, "no-time-to-train": 2, "misses": 3}
    cands.sort(key=lambda c: (rank[c["meets"]], c["time_to_train"]["value"] or math.inf, c["label"]))
    front = frontier(cands, q.criteria, CRITERION_FIELD)
    refused = refused_inputs(q, [s.runs for f in fams for s in f.sizes.values()])  # type: ignore[arg-type]
    out: dict[str, Any] = {
        "kind": KIND,
        "phase": PHASE,
        "question": q.words(),
        "assumptions": q.assumptions(frozenset(r["pointer"] for r in refused)),
        "served_model": None,
        "refused_inputs": refused,
        "candidates": cands,
        "frontier": front,
        "left_out": left_out,
        "cited": sorted({str(r.get("digest")) for c in cands for r in c["runs"]}),
        "methods": dict(METHODS),
        "contract": {"version": cmp.contract().version, "axis": "iso-quality"},
        "summary": summary(cands, front),
    }
    representable(out)
    return out


def _family_labels(fams: Sequence[_Family]) -> list[str]:
    """Where configurations differ beyond their size, what tells them apart ('mxnet nvidia release=23.04')."""
    if len(fams) < 2:
        return ["" for _ in fams]
    return cmp.arm_labels([f.doc for f in fams], "iso-quality", [f.config for f in fams])


def summary(cands: Sequence[Mapping[str, Any]], front: Mapping[str, Any]) -> list[str]:
    """One sentence per candidate: the budget verdict, systems, accelerator-hours, with its gaps in the sentence."""
    out = []
    for c in cands:
        count = systems_words(c["systems_needed"])
        acc = c["accelerator_hours"]["value"]
        hours = f", {acc:.4g} accelerator-hours per run" if acc is not None else ""
        eff = c["scaling"].get("value")
        scaled = (
            f", scaling efficiency {eff:.3g} against {c['scaling']['against_devices']} device(s)"
            if eff is not None and c["size"]["devices"] != c["scaling"].get("against_devices")
            else ""
        )
        weak = "; ".join(g["message"] for g in c["gaps"])
        out.append(
            f"{c['label']}: {c['budget']['words']}; {count}{hours}{scaled}"
            + (" — on the frontier" if c["label"] in front["labels"] else "")
            + (f". Caveats: {weak}." if weak else ".")
        )
    return out
