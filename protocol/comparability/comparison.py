"""`compare`: the whole comparison as a JSON value. Runs are grouped into arms (repetitions of one
configuration), each arm gets its estimate and its blocking reasons, every other arm is set against the
baseline with a ratio and a verdict, and one conclusion is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .. import sizing as capacity
from .. import statistics as st
from ..canonical import digest
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
        out.append(
            {
                "code": "unsteady",
                "message": f"{name} never reached steady state ({why})",
                "run": run,
                "arm": arm,
                "name": name,
            }
        )
    validity = cond.get("validity") or {}
    failed = [k for k, ok in (validity.get("checks") or {}).items() if ok is False]
    if "kept_up_with_arrivals" in failed:
        out.append(
            {
                "code": "overloaded",
                "message": f"{name} was overloaded: it completed fewer requests than "
                "arrived, so its latencies measure a growing queue",
                "run": run,
                "arm": arm,
                "name": name,
            }
        )
    other = [k for k in failed if k != "kept_up_with_arrivals"]
    if validity.get("valid") is False and (other or not failed):
        out.append(
            {
                "code": "invalid",
                "message": f"{name} failed its validity checks" + (f" ({', '.join(other)})" if other else ""),
                "run": run,
                "arm": arm,
                "name": name,
            }
        )
    return out


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
    blockers = arms[j]["reasons"] + arms[b]["reasons"]
    if blockers:
        verdict = "inconclusive"
        statement = f"Inconclusive: {blockers_in_brief(blockers)}. Taken at face value, {words}"
    elif r.evidence is not None:
        verdict = "not-enough-evidence"
        why = (
            "; ".join(
                f"{a['label']}: {e.evidence}"
                for a, e in ((arms[j], est), (arms[b], estimates[b]))
                if e.evidence is not None
            )
            or r.evidence
        )
        statement = f"Not enough evidence: {why}. Taken at face value, {words}"
    elif r.distinguishable:
        verdict = "distinguishable"
        statement = f"{words}; distinguishable from noise"
    else:
        verdict = "indistinguishable"
        statement = f"{words}; not distinguishable from noise (the interval includes 1)"
    return {
        "subject": j,
        "baseline": b,
        "metric": est.metric,
        "ratio": st.rounded(r.value),
        "ci_low": st.rounded(r.ci_low),
        "ci_high": st.rounded(r.ci_high),
        "confidence": r.confidence,
        "simultaneous": {"comparisons": family, "confidence": st.CONFIDENCE} if family > 1 else None,
        "distinguishable": r.distinguishable if verdict in ("distinguishable", "indistinguishable") else None,
        "outcome": r.outcome,
        "method": r.method,
        "evidence": r.evidence,
        "verdict": verdict,
        "statement": statement,
        "face_value": words,
        "words": statement,
    }


def _comparison_caveats(docs: Sequence[Mapping[str, Any]], arms: list[list[int]]) -> list[dict[str, Any]]:
    out = []
    head = (docs[0].get("metrics") or {}).get("primary", "")
    if (docs[0].get("scenario") or {}).get("kind") in capacity.SERVING_SCENARIOS and head.partition(".")[0] in (
        "throughput",
        "tokens_per_second",
        "request_rate",
    ):
        out.append(
            {
                "code": "offered-load-throughput",
                "message": "in a server scenario the throughput follows "
                "the offered load; latency or goodput tell systems apart better",
            }
        )
    energies = [(d.get("metrics") or {}).get("energy") for d in docs]
    meters = {f"{e.get('source')} ({e.get('scope') or 'scope not stated'})" for e in energies if isinstance(e, dict)}
    if len(meters) > 1:
        out.append(
            {
                "code": "energy-measured-differently",
                "message": "energy was measured with different meters "
                f"or scopes ({'; '.join(sorted(meters))}): energy per output is not like for like",
            }
        )
    if len(arms) == 1:
        out.append(
            {
                "code": "single-configuration",
                "message": "all runs repeat one configuration: they are "
                "aggregated, and there is nothing to compare them against",
            }
        )
    return out


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
    runs = [dict(d) for d in docs]
    if baseline is not None and not 0 <= baseline < len(runs):
        raise ComparabilityError(f"the baseline must be one of the compared runs (0-{len(runs) - 1}), not {baseline}")
    if names is not None and len(names) != len(runs):
        raise ComparabilityError("one name per run")
    if digests is not None and len(digests) != len(runs):
        raise ComparabilityError("one digest per run")
    verdict = verdict if verdict is not None else check(runs, axis)
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
    known = list(digests) if digests is not None else [digest(d) for d in runs]
    result["runs"] = [
        {
            "index": i,
            "digest": known[i],
            "system": (d.get("system") or {}).get("name"),
            "headline": {"metric": (d.get("metrics") or {}).get("primary")},
        }
        for i, d in enumerate(runs)
    ]
    if not verdict.comparable:
        return result
    _fill(
        result,
        runs,
        axis,
        prices,
        sizing,
        currency,
        baseline,
        list(names) if names is not None else [f"run #{i + 1}" for i in range(len(runs))],
    )
    return result


def _fill(
    result: dict[str, Any],
    docs: Sequence[dict[str, Any]],
    axis: str,
    prices: Mapping[str, float] | None,
    sizing: Mapping[str, Any] | None,
    currency: str,
    baseline_run: int | None,
    names: Sequence[str],
) -> None:
    per_run = [configuration(d, axis) for d in docs]
    groups = _arms(per_run)
    configs = [per_run[m[0]] for m in groups]
    labels = labels_for([docs[m[0]] for m in groups], axis, configs)
    run_estimates = [st.headline_estimate(d) for d in docs]  # each run's, once: arms and runs both use them
    digests = [r["digest"] for r in result["runs"]]
    arms, estimates = [], []
    for a, members in enumerate(groups):
        est = st.aggregate(
            [docs[i] for i in members],
            estimates=[run_estimates[i] for i in members],
            keys=[digests[i] for i in members],
        )
        estimates.append(est)
        reasons = [x for i in members for x in blocking_reasons(docs[i], i, a, f"{names[i]} ({labels[a]})")]
        arm: dict[str, Any] = {
            "index": a,
            "label": labels[a],
            "configuration": _plain(configs[a]),
            "runs": members,
            "estimate": est.as_dict(),
            "reasons": reasons,
            "derived": capacity.arm_derived([docs[i] for i in members], prices, currency),
        }
        if sizing is not None:
            arm["sizing"] = capacity.arm_sizing([docs[i] for i in members], sizing)
        arms.append(arm)
    for a, members in enumerate(groups):
        for i in members:
            est = run_estimates[i]
            quality = (docs[i].get("metrics") or {}).get("quality")
            found = [x.as_dict() for x in st.caveats(docs[i], est)]
            result["runs"][i].update(
                arm=a,
                name=names[i],
                headline=est.as_dict(),
                quality=quality,
                caveats=found,
                beside=beside(docs[i], axis),
            )
            result["caveats"] += [{"run": i, **x} for x in found]
    result["caveats"] += _comparison_caveats(docs, groups)
    result["arms"] = arms
    base = next(a for a, m in enumerate(groups) if baseline_run in m) if baseline_run is not None else 0
    others = [j for j in range(len(arms)) if j != base]
    result["pairwise"] = [_pair(j, base, arms, estimates, max(1, len(others))) for j in others]
    result["conclusion"] = _conclusion(arms, estimates, result["pairwise"], base)
    if prices:
        result["assumptions"].append(
            {
                "kind": "price",
                "currency": currency,
                "per_system_hour": dict(prices),
                "words": "hourly prices supplied by the user, not measured",
            }
        )
    if sizing is not None:
        result["assumptions"].append(
            {
                "kind": "sizing",
                "request": _plain(sizing),
                "words": "replica counts assume linear scaling of the tested system",
            }
        )


def _conclusion(
    arms: Sequence[dict[str, Any]], estimates: Sequence[st.Estimate], pairwise: Sequence[dict[str, Any]], base: int
) -> dict[str, Any]:
    """The one sentence a reader takes away: the best arm against the baseline, with every blocking reason."""
    reasons = [x for arm in arms for x in arm["reasons"]]
    if len(arms) == 1:
        words = single_configuration_words(arms[0]["label"], estimates[0])
        if reasons:
            return {
                "outcome": "inconclusive",
                "statement": f"Inconclusive: {blockers_in_brief(reasons)}. Taken at face value, {words}",
                "reasons": reasons,
                "baseline": 0,
                "focus": [0],
            }
        return {
            "outcome": "single-configuration",
            "statement": words[0].upper() + words[1:],
            "reasons": [],
            "baseline": 0,
            "focus": [0],
        }
    ranked = sorted(
        (j for j in range(len(arms)) if j != base and estimates[j].value is not None),
        key=lambda j: (estimates[j].value or 0.0) * (1 if estimates[j].lower_is_better else -1),
    )
    best = ranked[0] if ranked else next(j for j in range(len(arms)) if j != base)
    pair = next(p for p in pairwise if p["subject"] == best)
    common = {"baseline": base, "focus": [base, best]}
    if reasons:
        return {
            "outcome": "inconclusive",
            "statement": f"Inconclusive: {blockers_in_brief(reasons)}. Taken at face value, {pair['face_value']}",
            "reasons": reasons,
            **common,
        }
    why = [
        {
            "code": "not-enough-evidence",
            "message": pair["statement"].split(". Taken at face value", 1)[0].removeprefix("Not enough evidence: "),
            "run": None,
            "arm": None,
        }
    ]
    return {
        "outcome": pair["verdict"],
        "statement": pair["statement"],
        "reasons": why if pair["verdict"] == "not-enough-evidence" else [],
        **common,
    }


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))
