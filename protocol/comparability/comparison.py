"""`compare`: the whole comparison as a JSON value. Runs are grouped into arms (repetitions of one
configuration), each arm gets its estimate and its blocking reasons, every other arm is set against the
baseline with a ratio and a verdict, and one conclusion is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import scaling as sizes
from .. import sizing as capacity
from .. import statistics as st
from ..canonical import digest
from ..derivation import is_derived
from ..errors import value_at
from .definition import ComparabilityError, contract
from .roles import configuration, field_name, known_axis, split_pointer
from .verdict import Verdict, check
from .words import blockers_in_brief, display, labels_for, ratio_words, single_configuration_words


def beside(doc: Mapping[str, Any], axis: str) -> list[dict[str, str]]:
    """What the contract shows beside this run's number on `axis`: [{pointer, field, value}] ('not stated')."""
    return [
        {"pointer": p, "field": field_name(split_pointer(p)), "value": display(value_at(doc, p))}
        for p in contract().beside_for(known_axis(axis))
    ]


def _arms(configs: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Runs grouped by identical configuration, in order of first appearance: repetitions of one setup."""
    groups: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(digest(config), []).append(i)
    return list(groups.values())


def blocking_reasons(doc: Mapping[str, Any], run: int, arm: int, name: str) -> list[dict[str, Any]]:
    """Why this run makes any verdict about its arm inconclusive: unsteady, overloaded or invalid."""
    cond = doc.get("conditions") or {}
    out = []
    steady = cond.get("steady_state") or {}
    if steady.get("reached") is False:
        why = "; ".join(steady.get("reasons") or []) or "no reason given"
        out.append(_reason("unsteady", f"{name} never reached steady state ({why})", run, arm, name))
    validity = cond.get("validity") or {}
    failed = [k for k, ok in (validity.get("checks") or {}).items() if ok is False]
    if "kept_up_with_arrivals" in failed:
        message = (
            f"{name} was overloaded: it completed fewer requests than arrived, so its latencies measure a growing queue"
        )
        out.append(_reason("overloaded", message, run, arm, name))
    other = [k for k in failed if k != "kept_up_with_arrivals"]
    if validity.get("valid") is False and (other or not failed):
        message = f"{name} failed its validity checks" + (f" ({', '.join(other)})" if other else "")
        out.append(_reason("invalid", message, run, arm, name))
    return out


def _reason(code: str, message: str, run: int, arm: int, name: str) -> dict[str, Any]:
    return {"code": code, "message": message, "run": run, "arm": arm, "name": name}


def _pair(
    j: int, b: int, arms: Sequence[dict[str, Any]], estimates: Sequence[st.Estimate], family: int
) -> dict[str, Any]:
    """Arm j (subject) against arm b (baseline): ratio, verdict and one sentence that carries its caveats.

    `family` is how many arms are set against the baseline: Bonferroni keeps the chance of any false
    "distinguishable" among them <= 5%, which matters because the summary picks the best of them.
    """
    est = estimates[j]
    r = st.ratio(est, estimates[b], confidence=1.0 - (1.0 - st.CONFIDENCE) / family)
    words = ratio_words(arms[j]["label"], arms[b]["label"], est.metric, est.lower_is_better, r, family)
    verdict, statement = _pair_verdict((arms[j], est), (arms[b], estimates[b]), r, words)
    return {
        "subject": j,
        "baseline": b,
        "metric": est.metric,
        **_ratio_fields(r, family, verdict),
        "verdict": verdict,
        "statement": statement,
        "face_value": words,
        "words": statement,
    }


def _pair_verdict(
    subject: tuple[dict[str, Any], st.Estimate], base: tuple[dict[str, Any], st.Estimate], r: st.Ratio, words: str
) -> tuple[str, str]:
    """The pair's verdict and its sentence, the blocking reasons first."""
    blockers = subject[0]["reasons"] + base[0]["reasons"]
    if blockers:
        return "inconclusive", f"Inconclusive: {blockers_in_brief(blockers)}. Taken at face value, {words}"
    if r.evidence is not None:
        why = "; ".join(f"{a['label']}: {e.evidence}" for a, e in (subject, base) if e.evidence is not None)
        return "not-enough-evidence", f"Not enough evidence: {why or r.evidence}. Taken at face value, {words}"
    if r.distinguishable:
        return "distinguishable", f"{words}; distinguishable from noise"
    return "indistinguishable", f"{words}; not distinguishable from noise (the interval includes 1)"


def _ratio_fields(r: st.Ratio, family: int, verdict: str) -> dict[str, Any]:
    return {
        "ratio": st.rounded(r.value),
        "ci_low": st.rounded(r.ci_low),
        "ci_high": st.rounded(r.ci_high),
        "confidence": r.confidence,
        "simultaneous": {"comparisons": family, "confidence": st.CONFIDENCE} if family > 1 else None,
        "distinguishable": r.distinguishable if verdict in ("distinguishable", "indistinguishable") else None,
        "outcome": r.outcome,
        "method": r.method,
        "evidence": r.evidence,
    }


def _comparison_caveats(docs: Sequence[Mapping[str, Any]], arms: list[list[int]]) -> list[dict[str, Any]]:
    out = []
    if _serving_throughput(docs[0]):
        out.append({"code": "offered-load-throughput", "message": _OFFERED_LOAD})
    energies = [(d.get("metrics") or {}).get("energy") for d in docs]
    meters = {f"{e.get('source')} ({e.get('scope') or 'scope not stated'})" for e in energies if isinstance(e, dict)}
    if len(meters) > 1:
        message = (
            "energy was measured with different meters "
            f"or scopes ({'; '.join(sorted(meters))}): energy per output is not like for like"
        )
        out.append({"code": "energy-measured-differently", "message": message})
    if len(arms) == 1:
        out.append({"code": "single-configuration", "message": _ONE_CONFIGURATION})
    return out


def _derived_caveats(docs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """The runs that were derived from another run, named: their values are shown but count as no evidence."""
    derived = [i for i, d in enumerate(docs) if is_derived(d)]
    if not derived:
        return []
    listed = ", ".join(names[i] for i in derived)
    message = (
        f"{listed} {'is a result' if len(derived) == 1 else 'are results'} derived from another run by the "
        "publisher's rule (MLPerf's inferred results), not measured: shown at face value, counted as no independent "
        "evidence, so no verdict rests on them"
    )
    return [{"code": "derived-results", "message": message, "runs": derived}]


_OFFERED_LOAD = (
    "in a server scenario the throughput follows the offered load; latency or goodput tell systems apart better"
)
_ONE_CONFIGURATION = (
    "all runs repeat one configuration: they are aggregated, and there is nothing to compare them against"
)


def _serving_throughput(doc: Mapping[str, Any]) -> bool:
    """Whether a serving scenario's headline is a throughput (which follows the offered load)."""
    head = (doc.get("metrics") or {}).get("primary", "")
    return (doc.get("scenario") or {}).get("kind") in capacity.SERVING_SCENARIOS and head.partition(".")[0] in (
        "throughput",
        "tokens_per_second",
        "request_rate",
    )


def compare(
    docs: Sequence[Mapping[str, Any]],
    axis: str | None = None,
    prices: Mapping[str, float] | None = None,
    sizing: Mapping[str, Any] | None = None,
    *,
    currency: str = "USD",
    resamples: int = st.RESAMPLES,
    baseline: int | None = None,
    names: Sequence[str] | None = None,
    digests: Sequence[str] | None = None,
    verdict: Verdict | None = None,
) -> dict[str, Any]:
    """The whole comparison as a JSON value (finite, rounded floats): what the registry stores and reports print.

    `prices` maps system.name to a price per system-hour (stated as an assumption); `sizing` is
    {"target_load", "load_unit", "latency_objectives"?: [{"metric", "percentile", "max_ms"}], "headroom"?}.
    `baseline` is the index of a run: its arm is the baseline every other arm is set against (default: the
    first arm). `names` are how messages name the runs (the registry passes "run 17"; default "run #1");
    `digests` are the runs' digests when the caller has them (canonicalizing raw samples is the slow part).
    `verdict` is `check(docs, axis)` when the caller has already asked it (it is not asked again).
    `resamples` is ignored (kept for old callers). When the verdict refuses, runs are listed without
    statistics and arms/pairwise are empty.
    """
    axis = known_axis(axis or contract().default_axis)
    runs = _runs(docs, baseline, names, digests)
    result = _skeleton(axis, verdict if verdict is not None else check(runs, axis, names), runs, digests)
    if result["comparable"]:
        _fill(result, runs, axis, (prices, sizing, currency), baseline, _names(runs, names))
    return result


def _runs(
    docs: Sequence[Mapping[str, Any]], baseline: int | None, names: Sequence[str] | None, digests: Sequence[str] | None
) -> list[dict[str, Any]]:
    """The compared runs as dicts, once the baseline, names and digests are checked against them."""
    runs = [dict(d) for d in docs]
    if baseline is not None and not 0 <= baseline < len(runs):
        raise ComparabilityError(f"the baseline must be one of the compared runs (0-{len(runs) - 1}), not {baseline}")
    if names is not None and len(names) != len(runs):
        raise ComparabilityError("one name per run")
    if digests is not None and len(digests) != len(runs):
        raise ComparabilityError("one digest per run")
    return runs


def _names(runs: Sequence[dict[str, Any]], names: Sequence[str] | None) -> list[str]:
    return list(names) if names is not None else [f"run #{i + 1}" for i in range(len(runs))]


def _skeleton(
    axis: str, verdict: Verdict, runs: Sequence[dict[str, Any]], digests: Sequence[str] | None
) -> dict[str, Any]:
    """The comparison as the refused verdict leaves it: the verdict, and each run with its digest."""
    c = contract()
    result: dict[str, Any] = {
        "kind": "benchreg.comparison/1",
        "contract": {"id": c.id, "version": c.version},
        "axis": axis,
        "comparable": verdict.comparable,
        "verdict": verdict.as_dict(),
        "disclosures": [d.as_dict() for d in verdict.disclosures],
        "runs": [],
        "arms": [],
        "pairwise": [],
        "caveats": [],
        "assumptions": [],
        "methods": dict(st.METHODS),
    }
    result["runs"] = _run_entries(runs, digests)
    return result


def _run_entries(runs: Sequence[dict[str, Any]], digests: Sequence[str] | None) -> list[dict[str, Any]]:
    known = list(digests) if digests is not None else [digest(d) for d in runs]
    return [
        {
            "index": i,
            "digest": known[i],
            "system": (d.get("system") or {}).get("name"),
            "headline": {"metric": (d.get("metrics") or {}).get("primary")},
        }
        for i, d in enumerate(runs)
    ]


_Assumed = tuple[Mapping[str, float] | None, Mapping[str, Any] | None, str]  # (prices, sizing, currency)


@dataclass(frozen=True)
class _Grouping:
    """The comparable runs in arms: each arm's members, configuration and label; each run's estimate and name."""

    docs: Sequence[dict[str, Any]]
    groups: list[list[int]]
    configs: list[dict[str, Any]]
    labels: list[str]
    run_estimates: list[st.Estimate]
    names: Sequence[str]


def _grouping(docs: Sequence[dict[str, Any]], axis: str, names: Sequence[str]) -> _Grouping:
    per_run = [configuration(d, axis) for d in docs]
    groups = _arms(per_run)
    configs = [per_run[m[0]] for m in groups]
    labels = labels_for([docs[m[0]] for m in groups], axis, configs)
    run_estimates = [st.headline_estimate(d) for d in docs]  # each run's, once: arms and runs both use them
    return _Grouping(docs, groups, configs, labels, run_estimates, names)


def _fill(
    result: dict[str, Any],
    docs: Sequence[dict[str, Any]],
    axis: str,
    assumed: _Assumed,
    baseline_run: int | None,
    names: Sequence[str],
) -> None:
    g = _grouping(docs, axis, names)
    arms, estimates = _arm_entries(g, [r["digest"] for r in result["runs"]], assumed)
    _place_runs(result, g, axis)
    result["caveats"] += _comparison_caveats(docs, g.groups) + _derived_caveats(docs, names)
    result["arms"] = arms
    base = next(a for a, m in enumerate(g.groups) if baseline_run in m) if baseline_run is not None else 0
    others = [j for j in range(len(arms)) if j != base]
    result["pairwise"] = [_pair(j, base, arms, estimates, max(1, len(others))) for j in others]
    result["conclusion"] = _conclusion(arms, estimates, result["pairwise"], base)
    result["assumptions"] += _assumptions(assumed)
    if axis == "scaling":
        result["scaling"] = _scaling_curve(docs)


def _scaling_curve(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """On the scaling axis, the sizes as a curve (protocol.scaling.curve), or why there is none, at its pointer."""
    try:
        return sizes.curve(docs)
    except sizes.ScalingError as exc:
        return {"error": str(exc), "pointer": exc.pointer, "sizes": []}


def _arm_entries(
    g: _Grouping, digests: Sequence[str], assumed: _Assumed
) -> tuple[list[dict[str, Any]], list[st.Estimate]]:
    """Each arm's entry and its estimate (aggregated from its runs' estimates)."""
    arms, estimates = [], []
    for a, members in enumerate(g.groups):
        est = st.aggregate(
            [g.docs[i] for i in members],
            estimates=[g.run_estimates[i] for i in members],
            keys=[digests[i] for i in members],
        )
        estimates.append(est)
        arms.append(_arm_entry(g, a, est, assumed))
    return arms, estimates


def _arm_entry(g: _Grouping, a: int, est: st.Estimate, assumed: _Assumed) -> dict[str, Any]:
    """Arm a's estimate, blocking reasons, derived figures and sizing."""
    prices, sizing, currency = assumed
    members = g.groups[a]
    reasons = [x for i in members for x in blocking_reasons(g.docs[i], i, a, f"{g.names[i]} ({g.labels[a]})")]
    arm: dict[str, Any] = {
        "index": a,
        "label": g.labels[a],
        "configuration": _plain(g.configs[a]),
        "runs": members,
        "estimate": est.as_dict(),
        "reasons": reasons,
        "derived": capacity.arm_derived([g.docs[i] for i in members], prices, currency),
    }
    if sizing is not None:
        arm["sizing"] = capacity.arm_sizing([g.docs[i] for i in members], sizing)
    return arm


def _place_runs(result: dict[str, Any], g: _Grouping, axis: str) -> None:
    """Each run's entry gets its arm, name, headline, quality, caveats and what is shown beside it."""
    for a, members in enumerate(g.groups):
        for i in members:
            est = g.run_estimates[i]
            found = [x.as_dict() for x in st.caveats(g.docs[i], est)]
            result["runs"][i].update(
                arm=a,
                name=g.names[i],
                headline=est.as_dict(),
                quality=(g.docs[i].get("metrics") or {}).get("quality"),
                caveats=found,
                beside=beside(g.docs[i], axis),
            )
            result["caveats"] += [{"run": i, **x} for x in found]


def _assumptions(assumed: _Assumed) -> list[dict[str, Any]]:
    prices, sizing, currency = assumed
    out: list[dict[str, Any]] = []
    if prices:
        words = "hourly prices supplied by the user, not measured"
        out.append({"kind": "price", "currency": currency, "per_system_hour": dict(prices), "words": words})
    if sizing is not None:
        words = "replica counts assume linear scaling of the tested system"
        out.append({"kind": "sizing", "request": _plain(sizing), "words": words})
    return out


def _conclusion(
    arms: Sequence[dict[str, Any]], estimates: Sequence[st.Estimate], pairwise: Sequence[dict[str, Any]], base: int
) -> dict[str, Any]:
    """The one sentence a reader takes away: the best arm against the baseline, with every blocking reason."""
    reasons = [x for arm in arms for x in arm["reasons"]]
    if len(arms) == 1:
        return _single_conclusion(arms[0], estimates[0], reasons)
    best = _best(arms, estimates, base)
    pair = next(p for p in pairwise if p["subject"] == best)
    common = {"baseline": base, "focus": [base, best]}
    if reasons:
        return _inconclusive(reasons, pair["face_value"], common)
    return {
        "outcome": pair["verdict"],
        "statement": pair["statement"],
        "reasons": _lacking(pair) if pair["verdict"] == "not-enough-evidence" else [],
        **common,
    }


def _single_conclusion(arm: dict[str, Any], estimate: st.Estimate, reasons: list[dict[str, Any]]) -> dict[str, Any]:
    words = single_configuration_words(arm["label"], estimate)
    if reasons:
        return _inconclusive(reasons, words, {"baseline": 0, "focus": [0]})
    return {
        "outcome": "single-configuration",
        "statement": words[0].upper() + words[1:],
        "reasons": [],
        "baseline": 0,
        "focus": [0],
    }


def _inconclusive(reasons: list[dict[str, Any]], face_value: str, common: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "outcome": "inconclusive",
        "statement": f"Inconclusive: {blockers_in_brief(reasons)}. Taken at face value, {face_value}",
        "reasons": reasons,
        **common,
    }


def _best(arms: Sequence[dict[str, Any]], estimates: Sequence[st.Estimate], base: int) -> int:
    """The arm with the best point value other than the baseline (the first other arm when none has one)."""
    ranked = sorted(
        (j for j in range(len(arms)) if j != base and estimates[j].value is not None),
        key=lambda j: (estimates[j].value or 0.0) * (1 if estimates[j].lower_is_better else -1),
    )
    return ranked[0] if ranked else next(j for j in range(len(arms)) if j != base)


def _lacking(pair: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pair's "not enough evidence" sentence as the conclusion's one reason."""
    message = pair["statement"].split(". Taken at face value", 1)[0].removeprefix("Not enough evidence: ")
    return [{"code": "not-enough-evidence", "message": message, "run": None, "arm": None}]


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))
