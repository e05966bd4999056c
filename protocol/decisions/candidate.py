"""The answer for one candidate configuration: latency verdicts, systems needed, cost and energy per output, each
with its interval (protocol.statistics' t interval on logs, one value per run), and the evidence that is missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import comparability as cmp
from .. import serving, sizing
from ..statistics import CONFIDENCE, MIN_VALUES, UNIT_NOUN, geometric_mean, log_t_interval, rounded
from .evidence import (
    Evidence,
    accelerator_count,
    accelerator_model,
    configuration_key,
    measured_quality,
    origin,
    served_model,
)
from .per_accelerator import candidate_per_accelerator, no_per_accelerator
from .question import CONFIGURATION_KEY, Question
from .tuned import tuned_gap


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
        point = geometric_mean(x)
    if len(x) < MIN_VALUES:
        many = f"{len(x)} {noun}{'s' if len(x) > 1 else ''}"
        return Interval(point, values=tuple(x), evidence=f"{many}; a calibrated interval needs at least {MIN_VALUES}")
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


def systems_needed(demand: float, headroom: float, rate: Interval, redundancy: int = 0) -> dict[str, Any]:
    """ceil(peak demand × (1 + headroom) ÷ rate) + k spare systems, with the interval the rate's interval gives
    (fewer systems at the high end of the rate)."""
    if rate.value is None:
        return {"value": None, "ci_low": None, "ci_high": None, "reason": rate.evidence}
    load = demand * (1.0 + headroom)
    value = sizing.count(load, rate.value)
    if value is None:
        return _no_count(
            f"more than {sizing.MAX_SYSTEMS:,} systems: not a plausible deployment, so no count is "
            "claimed (check the demand and the measured rate)"
        )
    high = sizing.count(load, rate.low) if rate.low else None
    low = sizing.count(load, rate.high) if rate.high else None
    return {
        "value": value + redundancy,
        "ci_low": low + redundancy if low is not None else None,
        "ci_high": high + redundancy if high is not None else None,
        "serving": value,
        "spare": redundancy,
        "reason": rate.evidence
        if rate.low is None or high is not None
        else (f"the interval's upper end is above {sizing.MAX_SYSTEMS:,} systems"),
        "formula": "ceil(peak demand × (1 + headroom) ÷ sustainable rate per system) + spare systems (N+k)",
    }


def _no_count(reason: str) -> dict[str, Any]:
    return {"value": None, "ci_low": None, "ci_high": None, "reason": reason}


def _scaled(x: Interval, factor: float, *, inverse: bool = False) -> Interval:
    """factor × x (or factor ÷ x, which swaps the interval's ends)."""
    if x.value is None:
        return x
    out = Interval(*_scaled_ends(x.value, x.low, x.high, factor, inverse), x.values, x.evidence)
    if out.value is None:
        return Interval(None, evidence="not representable: the figures give no finite result")
    if (x.low is not None and out.low is None) or (x.high is not None and out.high is None):
        return Interval(out.value, values=x.values, evidence="the interval is not representable")
    return out


def _scaled_ends(
    value: float, low: float | None, high: float | None, factor: float, inverse: bool
) -> tuple[float | None, float | None, float | None]:
    fin = sizing.finite
    if not inverse:
        return fin(factor * value), fin(factor * low) if low else None, fin(factor * high) if high else None
    return fin(factor / value), fin(factor / high) if high else None, fin(factor / low) if low else None


def hourly_price(q: Question, doc: Mapping[str, Any]) -> tuple[float | None, str]:
    """The stated price per system-hour of this configuration, and where it came from; None when none was stated."""
    key, model, count = configuration_key(doc), accelerator_model(doc), accelerator_count(doc)
    stated = {normal_key(k): v for k, v in q.system_hour.items()}
    if normal_key(key) in stated:
        price = stated[normal_key(key)]
        return price, f"{price:g} {q.currency} per system-hour for {key}, as supplied"
    purchases = {normal_key(k): v for k, v in q.purchase.items()}
    if normal_key(key) in purchases:
        price, hours = purchases[normal_key(key)]
        return price / hours, (
            f"purchase price {price:g} {q.currency} for {key} over a lifetime of {hours:g} hours "
            f"= {price / hours:g} {q.currency} per system-hour"
        )
    if model in q.accelerator_hour and count:
        each = q.accelerator_hour[model]
        return each * count, (
            f"{each:g} {q.currency} per accelerator-hour as supplied × {count} accelerators "
            f"= {each * count:g} {q.currency} per system-hour"
        )
    if "*" in q.system_hour:
        return q.system_hour["*"], f"{q.system_hour['*']:g} {q.currency} per system-hour (price for any system)"
    return None, f"no price stated for {key}"


def normal_key(key: str) -> str:
    """'8 × NVIDIA H100' and '8x NVIDIA H100' name the same configuration."""
    match = CONFIGURATION_KEY.match(key)
    return f"{int(match[1])}x {match[2].casefold()}" if match else key


# Each gap's short name, for tables; the full message is in the candidate's summary sentence.
GAP_TITLES = {
    "no-load-sweep": "one offered load only (no sweep)",
    "no-knee": "no load failed: capacity is a lower bound",
    "no-steady-state": "steady state not shown",
    "too-few-repetitions": "fewer than 3 runs",
    "no-energy": "no measured energy",
    "preview": "preview system",
    "invalid": "a run failed its validity checks",
    "quality-not-met": "quality target not met",
    "no-measured-quality": "quality not measured",
    "no-price": "no price stated",
    "tuned-per-level": "engine tuned at each load",
}


def gaps(
    docs: Sequence[Mapping[str, Any]],
    energy: Interval,
    has_price: bool,
    configuration: str,
    sweep: Mapping[str, Any] | None = None,
    refs: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, str]]:
    """Missing or weak evidence for one candidate, each with a code and words. With a sweep, `docs` are the runs
    of the level the capacity was read from (its knee), and the sweep's knee says whether a load failed. `refs`
    cite the runs (refs[i] is docs[i]'s, as the registry passes them): a gap of some runs names them by id."""
    out = []
    loads = _offered_loads(docs)
    knee = (sweep or {}).get("knee") or {}
    if sweep is not None and knee.get("level") is not None and not knee.get("reached"):
        out.append(
            {
                "code": "no-knee",
                "message": f"no measured load failed the objectives: the capacity is read at {knee['words']}",
            }
        )
    elif sweep is None and loads is not None and len(loads) < 2 and not published_capacity(docs):
        at = f" ({_load_words(docs[0])})" if loads else ""
        message = (
            f"no load sweep: every run was measured at one offered load{at}, so the capacity used is that load's "
            "rate, a lower bound: no higher load was measured"
        )
        out.append({"code": "no-load-sweep", "message": message})
    unsteady = [i for i, d in enumerate(docs) if not _steady(d)]
    if unsteady:
        message = (
            f"{_some_runs(unsteady, len(docs), refs)} did not show "
            "steady state (not reached or not assessed): a transient may have been measured"
        )
        out.append({"code": "no-steady-state", "message": message})
    if len(docs) < MIN_VALUES:
        message = (
            f"{len(docs)} run(s) of this configuration; intervals and calibrated verdicts need at least {MIN_VALUES}"
        )
        out.append({"code": "too-few-repetitions", "message": message})
    if energy.value is None:
        out.append({"code": "no-energy", "message": _NO_ENERGY})
    out += [{"code": code, "message": message} for code, message, test in _RUN_GAPS if any(map(test, docs))]
    if not has_price:
        out.append({"code": "no-price", "message": f"no price stated for {configuration}, so no cost per output"})
    return out


def _some_runs(some: Sequence[int], total: int, refs: Sequence[Mapping[str, Any]]) -> str:
    """Runs `some` (positions among `total`) by their ids where the refs give them ("run 17 (1 of 2)"), else by
    count alone ("1 of 2 run(s)"): a reader looks a run up by its id, never by where it stood in a list."""
    ids = [refs[i].get("id") for i in some] if len(refs) == total else []
    if not ids or any(i is None for i in ids):
        return f"{len(some)} of {total} run(s)"
    named = f"run {ids[0]}" if len(ids) == 1 else "runs " + ", ".join(map(str, ids[:-1])) + f" and {ids[-1]}"
    return named if len(some) == total else f"{named} ({len(some)} of {total})"


# Published benchmarks whose Server and Interactive results are the highest load the submitter found within the
# benchmark's own latency bounds (LoadGen searches for it; MLCommons publishes only a VALID one).
PUBLISHED_CAPACITY_KINDS = frozenset({"mlperf-inference"})
PUBLISHED_CAPACITY_SCENARIOS = frozenset({"server", "interactive"})


def published_capacity(docs: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every run is a published benchmark result read at its capacity (DECISIONS.md, Inference: 'a
    published benchmark result at the highest load its submitter found within the benchmark's own latency bounds
    is C for objectives no tighter than those bounds'): there is no higher load for a buyer to re-measure."""
    return bool(docs) and all(
        origin(d).get("kind") in PUBLISHED_CAPACITY_KINDS
        and (d.get("scenario") or {}).get("kind") in PUBLISHED_CAPACITY_SCENARIOS
        for d in docs
    )


def capacity_basis(docs: Sequence[Mapping[str, Any]], sweep: Mapping[str, Any] | None) -> str:
    """Where the capacity C of a candidate comes from, in words."""
    if sweep is not None:
        return f"read at the knee of its load sweep ({((sweep.get('knee') or {}).get('words')) or 'no knee'})"
    if published_capacity(docs):
        rounds = sorted({str(origin(d).get("round") or "?") for d in docs})
        return (
            f"the published MLPerf Inference {', '.join(rounds)} result: the highest load its submitter found within "
            "the benchmark's own latency bounds, so it is the capacity for objectives no tighter than those bounds "
            "(nothing for a buyer to re-measure; a tighter objective is judged on its measured percentiles)"
        )
    loads = _offered_loads(docs)
    if loads is not None and len(loads) < 2:
        return "the rate at the one offered load measured (no higher load was measured)"
    return "the measured rate of its runs"


def read_at(docs: Sequence[Mapping[str, Any]], sweep: Mapping[str, Any] | None) -> str | None:
    """The one load level every figure of the candidate (C, systems, cost, per provisioned MW) is read at, in words
    ('concurrency 16'); None when the runs are not serving levels or no level of the sweep holds."""
    if sweep is not None:
        level = (sweep.get("knee") or {}).get("level")
        return str(level["words"]) if level else None
    loads = _offered_loads(docs)
    return _load_words(docs[0]) if loads is not None and len(loads) == 1 else None


def _offered_loads(docs: Sequence[Mapping[str, Any]]) -> set[float] | None:
    """The distinct offered loads (target queries/s, else concurrency) of serving runs; None for other scenarios."""
    if (docs[0].get("scenario") or {}).get("kind") not in sizing.SERVING_SCENARIOS:
        return None
    loads = set()
    for d in docs:
        scenario = d.get("scenario") or {}
        load = scenario.get("target_qps") if scenario.get("target_qps") is not None else scenario.get("concurrency")
        if isinstance(load, int | float) and not isinstance(load, bool):
            loads.add(float(load))
    return loads


def _load_words(doc: Mapping[str, Any]) -> str:
    scenario = doc.get("scenario") or {}
    if scenario.get("target_qps") is not None:
        return f"{scenario['target_qps']:g} queries/s offered"
    return f"{scenario.get('concurrency')} concurrent streams"


def _steady(doc: Mapping[str, Any]) -> bool:
    return ((doc.get("conditions") or {}).get("steady_state") or {}).get("reached") is True


def _quality_failed(docs: Sequence[Mapping[str, Any]]) -> bool:
    return any(map(_quality_failed_in, docs))


def _quality_failed_in(doc: Mapping[str, Any]) -> bool:
    return ((doc.get("metrics") or {}).get("quality") or {}).get("passed") is False


_NO_ENERGY = "no run measured energy with a meter, so energy per output is unknown"
# Gaps any one run shows: (code, message, test on a run), in the order they are listed.
_RUN_GAPS: tuple[tuple[str, str, Callable[[Mapping[str, Any]], bool]], ...] = (
    (
        "preview",
        "a preview system: not yet generally available as tested",
        lambda d: origin(d).get("availability") == "preview",
    ),
    (
        "invalid",
        "a run is marked invalid by its harness's checks",
        lambda d: ((d.get("conditions") or {}).get("validity") or {}).get("valid") is False,
    ),
    ("quality-not-met", "a run's measured quality did not reach its target", _quality_failed_in),
    (
        "no-measured-quality",
        "no measured quality: nothing shows the outputs are as good as a reference's (the question states no "
        "quality target, so these runs answer it as measured)",
        lambda d: not measured_quality(d),
    ),
)


def _objective(
    obj: sizing.LatencyObjective, docs: Sequence[Mapping[str, Any]], runs: Sequence[Evidence]
) -> dict[str, Any]:
    if (docs[0].get("scenario") or {}).get("kind") not in sizing.SERVING_SCENARIOS:
        reason = "this scenario measures no latency under a steady offered load"
        return {"objective": obj.words(), "verdict": "not-applicable", "measured": None, "reason": reason}
    values = [((d.get("metrics") or {}).get(obj.metric) or {}).get(obj.percentile) for d in docs]
    measured = interval([float(v) for v in values if isinstance(v, int | float)])
    verdict = objective_verdict(measured, obj.max_ms)
    return {
        "objective": obj.words(),
        "metric": obj.metric,
        "percentile": obj.percentile,
        "max_ms": obj.max_ms,
        "measured": measured.as_dict("ms"),
        "verdict": verdict,
        "runs": [dict(r.ref) for r in runs],
    }


def _meets(objectives: Sequence[Mapping[str, Any]], docs: Sequence[Mapping[str, Any]]) -> str:
    verdicts = {o["verdict"] for o in objectives}
    if _quality_failed(docs) or verdicts & {"misses", "not-applicable", "not-measured"}:
        return "misses"
    if verdicts <= {"meets"}:
        return "meets" if objectives or len(docs) >= MIN_VALUES else "not-enough-evidence"
    if "uncertain" in verdicts:
        return "uncertain"
    return "not-enough-evidence"


def _rate(q: Question, docs: Sequence[Mapping[str, Any]]) -> tuple[Interval, str | None]:
    """The sustainable rate's interval, and the metric it was read from (the last run's that has one)."""
    rates = []
    rate_metric = None
    for d in docs:
        found = sizing.sustainable_rate(d, q.demand_unit)
        if found is not None:
            rate_metric, value = found
            rates.append(value)
    if len(rates) == len(docs):
        return interval(rates), rate_metric
    return Interval(None, evidence=(f"not every run measured a rate in {q.demand_unit}")), rate_metric


def _systems(q: Question, rate: Interval, meets: str) -> dict[str, Any]:
    if meets != "misses":
        return systems_needed(q.demand, q.headroom, rate, q.redundancy)
    return _no_count("does not meet the objectives at the tested load, so no count of systems is claimed")


def _energy(docs: Sequence[Mapping[str, Any]], unit: str) -> Interval:
    """Energy per output in the demand's unit (per request for a demand in requests/s, though the run's throughput
    is in tokens/s): the figure is labelled, and priced, per the demand's output."""
    per_run_energy = [sizing.energy_per_output(d, unit).value for d in docs]
    if all(v is not None for v in per_run_energy):
        return interval([v for v in per_run_energy if v is not None])
    return Interval(None, evidence="not every run measured energy")


def _energy_cost(q: Question, energy: Interval) -> Interval:
    if q.energy_price_kwh is not None and energy.value is not None:
        return _scaled(energy, q.energy_price_kwh * 1e6 / 3.6e6)
    return Interval(None, evidence="no energy price" if q.energy_price_kwh is None else "no measured energy")


def _costs(
    q: Question, rate: Interval, energy: Interval, price: tuple[float | None, str], systems: Mapping[str, Any]
) -> dict[str, Any]:
    """Cost per million outputs of the fleet that meets the demand, energy per output and the fleet's hourly cost."""
    hourly, price_words = price
    noun = UNIT_NOUN.get(q.demand_unit, "output")
    cost = _fleet_cost(q, hourly, price_words, systems)
    return {
        "cost_per_million": {**cost.as_dict(f"{q.currency} per million {noun}s"), "price": price_words},
        "energy_cost_per_million": _energy_cost(q, energy).as_dict(f"{q.currency} per million {noun}s"),
        "energy_per_output": energy.as_dict(f"J/{noun}"),
        "fleet_cost_per_hour": rounded(sizing.finite(hourly * systems["value"]))
        if hourly is not None and systems["value"]
        else None,
    }


def _fleet_cost(q: Question, hourly: float | None, price_words: str, systems: Mapping[str, Any]) -> Interval:
    """Fleet cost per hour ÷ (sustained demand × 3600) × 10⁶: the fleet sized for the peak (with headroom and spare
    systems) is paid for every hour, while it serves the sustained demand. Its interval is the systems' interval."""
    if hourly is None:
        return Interval(None, evidence=price_words)
    if not systems.get("value"):
        return Interval(None, evidence=f"no count of systems, so no fleet cost ({systems.get('reason')})")
    per_system = hourly * 1e6 / (q.sustained_demand * 3600.0)
    fin = sizing.finite
    low, high = systems.get("ci_low"), systems.get("ci_high")
    return Interval(
        fin(systems["value"] * per_system),
        fin(low * per_system) if low is not None else None,
        fin(high * per_system) if high is not None else None,
        evidence=None if low is not None and high is not None else "the count of systems has no interval",
    )


def _first_latency(objectives: Sequence[Mapping[str, Any]]) -> Any:
    first_measured = objectives[0]["measured"] if objectives else None
    return first_measured["value"] if isinstance(first_measured, dict) else None


def _cited(label: str, model: str, runs: Sequence[Evidence], known: Known | None) -> dict[str, Any]:
    docs = [r.document for r in runs]
    return {
        "label": label,
        "accelerator_model": model,
        "served_model": served_model(docs[0]),
        "configuration": known[1] if known and known[0] is docs[0] else cmp.configuration(docs[0], "iso-quality"),
        "runs": [dict(r.ref) for r in runs],
        "beside": [cmp.beside(d, "iso-quality") for d in docs],
    }


# A document and its configuration on the iso-quality axis, as the caller already read it (classifying a run's ~150
# fields is the dearest step of an answer; it is done once per run).
Known = tuple[Mapping[str, Any], dict[str, Any]]


def candidate(q: Question, runs: Sequence[Evidence], label: str, known: Known | None = None) -> dict[str, Any]:
    """The answer for one configuration (its runs repeat it; a sweep's levels are read at its knee). `known`: a
    document with its configuration, used when it is the document the candidate is labelled by."""
    every = [r.document for r in runs]
    runs, sweep = _at_knee(q, runs)
    docs = [r.document for r in runs]
    model = accelerator_model(docs[0])
    objectives = [_objective(obj, docs, runs) for obj in q.objectives]
    interactivity = _interactivity(q, docs)
    meets = _meets(objectives + ([interactivity] if interactivity else []), docs)
    rate, rate_metric = _rate(q, docs)
    energy = measured_energy = _energy(docs, q.demand_unit)
    per_acc = candidate_per_accelerator(docs, interval)
    if sweep is not None and sweep["knee"]["level"] is None:
        meets, systems, rate, energy = _no_knee(sweep["knee"])
        per_acc = no_per_accelerator(systems["reason"])
    else:
        systems = _systems(q, rate, meets)
    price = hourly_price(q, docs[0])
    return {
        **_cited(label, model, runs, known),
        "meets": meets,
        "objectives": objectives,
        "interactivity": interactivity,
        "rate": {**rate.as_dict(q.demand_unit), "metric": rate_metric},
        "systems_needed": systems,
        "capacity_basis": capacity_basis(docs, sweep),
        "read_at": read_at(docs, sweep),
        "capacity_published": sweep is None and published_capacity(docs),
        **_costs(q, rate, energy, price, systems),
        "per_provisioned_mw": _per_provisioned_mw(q, rate, docs[0]),
        "per_accelerator": per_acc,
        "latency_ms": rounded(_first_latency(objectives)),
        "gaps": gaps(
            docs,
            measured_energy,
            price[0] is not None,
            configuration_key(docs[0]),
            sweep,
            [r.ref for r in runs],
        )
        + tuned_gap(every, docs, sweep),
        "energy_measured": energy_measured(docs),
        "sweep": sweep,
        "all_runs": len(every),
    }


def _no_knee(knee: Mapping[str, Any]) -> tuple[str, dict[str, Any], Interval, Interval]:
    """No judged load is shown to meet the target: a miss, or, when no load could be judged (too few requests for
    the objective's percentile at every level), not enough evidence. No capacity either way, so no figure is derived
    from the level shown (DECISIONS.md: every figure comes from the level C is read at)."""
    none = f"no load of the sweep is shown to meet the target ({knee['words']})"
    meets = "not-enough-evidence" if knee["unjudged"] else "misses"
    return meets, _no_count(none), Interval(None, evidence=none), Interval(None, evidence=none)


def _at_knee(q: Question, runs: Sequence[Evidence]) -> tuple[list[Evidence], dict[str, Any] | None]:
    """A sweep's runs at its knee (DECISIONS.md, Inference: the highest load measured before an objective or the
    interactivity target failed), with the sweep's summary; the runs unchanged and None for a single load. Where
    the lowest load already failed, that level's runs are returned, so its verdicts show the miss."""
    docs = [r.document for r in runs]
    if not serving.sweep_ids(docs):
        return list(runs), None
    levels = serving.levels(docs, [r.ref for r in runs])
    if len(levels) < 2:
        return list(runs), None
    knee = serving.knee(levels, q.target)
    at = knee.level or knee.failed or levels[0]
    return [Evidence(p.document, p.ref) for p in at.points], serving.sweep_summary(levels, q.target)


def _interactivity(q: Question, docs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The interactivity target's verdict (higher is better): 'meets' when the 95% interval of the median
    request's tokens/s per user lies wholly at or above the target, 'misses' wholly below, as latency objectives."""
    if q.min_per_user is None:
        return None
    values = [serving.per_user_rate(d) for d in docs]
    measured = interval([v for v in values if v is not None]) if all(v is not None for v in values) else Interval(None)
    if measured.value is None:
        verdict = "not-measured"
    elif measured.low is None or measured.high is None:
        verdict = "not-enough-evidence"
    else:
        verdict = (
            "meets" if measured.low >= q.min_per_user else "misses" if measured.high < q.min_per_user else "uncertain"
        )
    return {
        "objective": f"tokens_per_second_per_user.p50 >= {q.min_per_user:g} tokens/s",
        "metric": "tokens_per_second_per_user",
        "percentile": serving.PER_USER_STATISTIC,
        "min": q.min_per_user,
        "measured": measured.as_dict("tokens/s"),
        "verdict": verdict,
    }


def _per_provisioned_mw(q: Question, rate: Interval, doc: Mapping[str, Any]) -> dict[str, Any]:
    """Outputs per second per provisioned MW: capacity per system ÷ (nameplate kW × PUE ÷ 1000). Provisioned power
    is a rating, not a measurement (DECISIONS.md): its own labelled figure, absent unless both are stated."""
    unit = f"{q.demand_unit} per provisioned MW"
    label = "per provisioned MW (nameplate power × PUE as stated, not measured power)"
    stated = {normal_key(k): v for k, v in q.nameplate_kw.items()}
    kw = stated.get(normal_key(configuration_key(doc)), q.nameplate_kw.get("*"))
    if kw is None or q.pue is None:
        missing = "no nameplate power stated for this configuration" if kw is None else "no PUE stated"
        return {**Interval(None, evidence=missing).as_dict(unit), "label": label, "assumption": None}
    scaled = _scaled(rate, 1000.0 / (kw * q.pue))
    assumption = f"{kw:g} kW nameplate per system × PUE {q.pue:g} = {kw * q.pue:g} kW provisioned per system"
    return {**scaled.as_dict(unit), "label": label, "assumption": assumption}


def energy_measured(docs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """How the runs' energy was measured (meter, scope, window, method as each run states it), each way once, with
    the words shown beside the energy figure wherever it appears."""
    found: list[dict[str, Any]] = []
    for doc in docs:
        inputs = sizing.energy_per_output(doc).inputs
        stated = {k: inputs[k] for k in ("source", "scope", "window_s", "method") if inputs.get(k) is not None}
        if stated and stated not in [{k: v for k, v in f.items() if k != "words"} for f in found]:
            window = f" over {stated['window_s']:g} s" if "window_s" in stated else ""
            found.append(
                {**stated, "words": f"{stated['source']}{window}: {stated.get('method') or 'method not stated'}"}
            )
    return found
