"""What a decision report says, computed from its evidence alone (so the PDF shows exactly what it carries).

`report_context` turns the evidence document into plain values for the template; `recommendation` reads the
comparison's statistics and says what they support, and how firmly, without going beyond them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.decisions.training import BUDGET_WORDS
from protocol.numbers import Style, number
from protocol.summary import headline as summary_headline
from registry.presentation import answers
from registry.presentation.charts_report import decision_figures, report_figures
from registry.presentation.citations import citation_words
from registry.presentation.codepoints import spell_strings
from registry.presentation.sweeps import sweep_lines
from registry.presentation.words import (
    HEADLINE_STYLE,
    axis_words,
    caveat_rows,
    headline_text,
    interval,
    metric_label,
    outcome_words,
)
from registry.reports import CERTIFICATE_FILE
from registry.reports.glyphs import font_coverage
from registry.reports.plain import cover_words

AXIS_WORDS = {"system": "hardware system"}  # the others in the contract's words ("equal quality", never a code)


def report_context(evidence: Mapping[str, Any], *, certificate: Mapping[str, str]) -> dict[str, Any]:
    """Template context of the decision report. `certificate` describes the signing certificate in words."""
    comparison = json.loads(evidence["comparison"]["canonical"])
    result = comparison["result"]
    docs = [json.loads(r["canonical"]) for r in evidence["runs"]]
    runs = [_run_row(r, d, result) for r, d in zip(evidence["runs"], docs, strict=True)]
    ids = [r["id"] for r in evidence["runs"]]
    findings = _findings(result, ids, runs)
    section = evidence.get("decision")
    answer = json.loads(section["canonical"]) if section else None
    return {
        **_provenance(evidence, comparison),
        "result": result,
        "runs": runs,
        "runs_cited": any(r["citations"] for r in runs),
        **findings,
        "plain": cover_words(result, docs, ids, findings["conclusion"], answer),
        "protocol_versions": sorted({str(d.get("protocol")) for d in docs}),
        # every precision the runs span, for the cover: a mixed set is never named by its first run
        "run_precisions": list(dict.fromkeys(r["precision_words"] for r in runs)) or ["precision not stated"],
        # a chart's labels are drawn by the same fonts as the page: what they lack is spelled before drawing
        "charts": report_figures(spell_strings(result, font_coverage()), spell_strings(docs, font_coverage()), ids),
        "decision_answer": decision_answer(
            section, trust={r["id"]: r.get("trust") for r in evidence["runs"] if r.get("trust")}
        ),
        "certificate": certificate,
        "certificate_file": CERTIFICATE_FILE,
    }


def _provenance(evidence: Mapping[str, Any], comparison: Mapping[str, Any]) -> dict[str, Any]:
    """Where the report's numbers come from: report, registry, checkpoint, comparison and contract."""
    result = comparison["result"]
    contract = evidence["contract"]
    return {
        "report": evidence["report"],
        "registry": evidence["registry"],
        "checkpoint": evidence["checkpoint"],
        "comparison": {**evidence["comparison"], "inputs": comparison["inputs"], "axis": result.get("axis")},
        "contract": {
            "digest": contract["digest"],
            "id": contract["document"].get("$id"),
            "version": contract["document"].get("version"),
            "roles": contract_roles(contract["document"], result.get("axis") or "system"),
        },
        "axis_words": AXIS_WORDS.get(result.get("axis") or "") or axis_words(result.get("axis")),
    }


def _findings(result: Mapping[str, Any], ids: Sequence[int], runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the statistics say: configurations, verdict, points, pairwise statements, methods and caveats."""
    verdict = conclusion(result, ids)
    estimated = _estimated(result)
    return {
        "arms": [_arm_row(a, ids, verdict, runs) for a in result.get("arms") or []],
        "recommendation": recommendation(result),
        "conclusion": verdict,
        "decision_points": decision_points(result, verdict),
        "other_points": _derived_points(estimated) + _sizing_points(estimated),
        "pairwise": _pairwise_rows(result),
        "methods": [
            (name.replace("_", " ").capitalize(), words) for name, words in (result.get("methods") or {}).items()
        ],
        "caveats": caveat_rows(result.get("caveats") or [], ids),
        "sizing": [{"label": a["label"], **a["sizing"]} for a in result.get("arms") or [] if a.get("sizing")],
    }


def _pairwise_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            **p,
            "subject_label": _arm_label(result, p["subject"]),
            "outcome_words": outcome_words(p.get("verdict") or p.get("outcome")),
            "baseline_label": _arm_label(result, p["baseline"]),
        }
        for p in result.get("pairwise") or []
    ]


def decision_answer(section: Mapping[str, Any] | None, trust: Mapping[int, str] | None = None) -> dict[str, Any] | None:
    """A report issued from a decision: the answer it states (from the evidence's `decision` section), one row per
    candidate with its verdict, figures, runs with their trust, and gaps side by side, and the Pareto chart. None for
    other reports. `trust` (run id -> trust level, from the evidence's runs) names the trust of runs an answer cites
    without it (answers stored before their references carried trust)."""
    if not section:
        return None
    answer = json.loads(section["canonical"])
    members = set((answer.get("frontier") or {}).get("members") or [])
    candidates = answer.get("candidates") or []
    shared = answers.shared_gap_codes(candidates)
    rows = [_candidate_row(c, i in members, trust or {}, shared) for i, c in enumerate(candidates)]
    training = answer.get("phase") == "training"
    if training:
        rows = [{**row, **_training_cells(c)} for row, c in zip(rows, candidates, strict=True)]
    return {
        "training": training,
        "id": section.get("id"),
        "title": section.get("title"),
        "number": section.get("answer"),
        "digest": section.get("digest"),
        "question": answer.get("question"),
        "assumptions": answer.get("assumptions") or [],
        "rows": rows,
        "frontier": answer.get("frontier") or {},
        "frontier_lines": answers.frontier_lines(answer.get("frontier") or {}),
        # a gap every candidate has is said once, under the table, never in each row
        "shared_gaps": answers.shared_gap_titles(shared),
        "refused_inputs": [str(r.get("message")) for r in answer.get("refused_inputs") or []],
        "left_out": len(answer.get("left_out") or []),
        "units": _answer_units(answer),
        # "pareto" and "frontier_chart", each in the parts that fit a page
        **decision_figures(spell_strings(answer, font_coverage())),
        "sweeps": sweep_lines(answer),
    }


def _candidate_row(
    candidate: Mapping[str, Any], frontier: bool, trust: Mapping[int, str], shared: Sequence[str] = ()
) -> dict[str, Any]:
    """One candidate's table row; its cost names the price it came from, its own gaps are named briefly (the full
    words are in the answer's summary, attached; those every candidate has, `shared`, are said once under the
    table), and each cited run carries its trust."""
    c = candidate
    cost = c.get("cost_per_million") or {}
    return {
        "label": c["label"],
        "meets": c["meets"],
        "frontier": frontier,
        "systems": _figure(c.get("systems_needed")),
        "cost": _figure(c.get("cost_per_million")),
        "energy": _figure(c.get("energy_per_output")),
        "per_accelerator": per_accelerator_cell(c.get("per_accelerator")),
        "energy_measured": [m.get("words") for m in c.get("energy_measured") or []],
        "latency": number(c["latency_ms"], Style.GENERAL) if isinstance(c.get("latency_ms"), int | float) else "—",
        "runs": [r.get("id") for r in c.get("runs") or []],
        "price": cost.get("price") if cost.get("value") is not None else None,
        # each cited run with its trust: an edited copy of an example never stands on the frontier unmarked
        "members": [
            {"id": r.get("id"), "trust": r.get("trust") or trust.get(r.get("id")) or "trust not stated"}
            for r in c.get("runs") or []
        ],
        "gaps": answers.own_gap_titles(c, shared),
    }


def _training_cells(c: Mapping[str, Any]) -> dict[str, Any]:
    """A training candidate's cells (protocol.decisions.training): the budget verdict, time to train,
    accelerator-hours, cost and energy per run, scaling efficiency against the smallest size measured."""
    scaling = c.get("scaling") or {}
    cost = c.get("cost_per_run") or {}
    efficiency = (
        f"{_figure(scaling)} vs {scaling.get('against_devices')} device(s); {scaling.get('label')}"
        if scaling.get("value") is not None
        else "one size only"
    )
    return {
        # the verdict in a few words: the time and its interval are the next cell
        "budget": BUDGET_WORDS.get(str(c.get("meets")), str(c.get("meets"))),
        "time": _figure(c.get("time_to_train")),
        "accelerator_hours": _figure(c.get("accelerator_hours")),
        "cost": _figure(cost),
        "energy": _figure(c.get("energy_per_run")),
        "scaling": efficiency,
        "price": cost.get("price") if cost.get("value") is not None else None,
    }


def per_accelerator_cell(block: Any) -> dict[str, str]:
    """A candidate's figures per accelerator for the report's table: output tokens/s (or the throughput, in its
    unit), input+output tokens/s, the label ("derived", "derived, not an MLPerf metric"), or why absent."""
    if not isinstance(block, Mapping):
        return {"value": "—", "total": "", "label": "", "absent": "answered before figures per accelerator"}
    name = next((k for k in ("output_tokens", "throughput") if (block.get(k) or {}).get("value") is not None), "")
    main, total = block.get(name) or {}, block.get("total_tokens") or {}
    return {
        "value": f"{'output ' if name == 'output_tokens' else ''}{_figure(main)} {_unit_alone(main)}" if main else "—",
        "total": f"{_figure(total)} {_unit_alone(total)}" if total.get("value") is not None else "",
        "label": str(block.get("label") or "") if main else "",
        "absent": "" if main else str((block.get("throughput") or {}).get("absent") or ""),
    }


def _unit_alone(block: Mapping[str, Any]) -> str:
    """The figure's unit without "per accelerator": the column's head says it, and the long word overran the cell."""
    return str(block.get("unit") or "").removesuffix(" per accelerator")


def _figure(block: Any) -> str:
    if not isinstance(block, Mapping) or block.get("value") is None:
        return "—"
    low, high = block.get("ci_low"), block.get("ci_high")
    text = interval(low, high, Style.GENERAL)
    return number(block["value"], Style.GENERAL) + (f" ({text})" if text else "")


def _answer_units(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The units of cost and energy, as the first candidate states them."""
    first = (answer.get("candidates") or [{}])[0]
    return {
        "cost": (first.get("cost_per_million") or first.get("cost_per_run") or {}).get("unit"),
        "energy": (first.get("energy_per_output") or first.get("energy_per_run") or {}).get("unit"),
    }


# Caveats that block any verdict: the numbers of such a run do not measure what the comparison needs.
BLOCKING = frozenset({"steady-state-not-reached", "invalid-result", "overloaded", "server-overloaded", "withdrawn-run"})
TONES = {
    "distinguishable": "clear",
    "indistinguishable": "none",
    "single-configuration": "none",
    "not-enough-evidence": "tentative",
    "inconclusive": "tentative",
    "refused": "refused",
}


def conclusion(result: Mapping[str, Any], run_ids: Sequence[int]) -> dict[str, Any]:
    """What the cover and the summary say, with its blocking caveats beside it:
    {"outcome", "statement", "reasons": [str], "tone": clear|none|tentative|refused, "baseline", "focus"}.

    The comparison's own `conclusion` (protocol.comparability) when it has one; for results stored before
    conclusions existed, the recommendation's reading. Either way, a run whose caveats block a verdict (not steady,
    invalid, overloaded, withdrawn) makes it "inconclusive", named by run id: the cover never shows a verdict in
    green while its arms are unsteady.
    """
    if not result.get("comparable"):
        return _refused_conclusion()
    stored = result.get("conclusion") or {}
    reasons = [_reason_words(r, run_ids) for r in stored.get("reasons") or []]
    outcome, statement = _stated_outcome(result, stored)
    blocking = _blocking_caveats(result, run_ids, stored)
    unseen = [b for b in blocking if not any(b.split(": ", 1)[1] in r for r in reasons)]
    if unseen and outcome in ("distinguishable", "indistinguishable"):
        outcome, statement = "inconclusive", _inconclusive_statement(blocking, run_ids)
    reasons += unseen
    reasons = [r for r in reasons if r not in statement]  # a reason the statement already gives is said once
    return {
        "outcome": outcome,
        "outcome_words": outcome_words(outcome),
        "statement": statement,
        "reasons": reasons,
        "tone": TONES.get(outcome, "none"),
        "baseline": stored.get("baseline"),
        "focus": list(stored.get("focus") or []),
    }


def _refused_conclusion() -> dict[str, Any]:
    return {
        "outcome": "refused",
        "outcome_words": outcome_words("refused"),
        "statement": "These runs are not comparable: no conclusion.",
        "reasons": [],
        "tone": "refused",
        "baseline": None,
        "focus": [],
    }


def _stated_outcome(result: Mapping[str, Any], stored: Mapping[str, Any]) -> tuple[str, str]:
    """The stored conclusion's outcome and statement; without one, the recommendation's reading."""
    if stored:
        return str(stored.get("outcome")), str(stored.get("statement") or "")
    advice = recommendation(result)
    outcome = {"clear": "distinguishable", "tentative": "not-enough-evidence"}.get(
        advice["strength"], "single-configuration" if len(result.get("arms") or []) < 2 else "indistinguishable"
    )
    return outcome, advice["headline"]


def _blocking_caveats(result: Mapping[str, Any], run_ids: Sequence[int], stored: Mapping[str, Any]) -> list[str]:
    """ "run <id>: <message>" for each blocking caveat of a run the stored conclusion does not already name."""
    named = {r.get("run") for r in stored.get("reasons") or [] if isinstance(r.get("run"), int)}
    return [
        f"run {run_ids[c['run']]}: {c['message']}"
        for c in result.get("caveats") or []
        if c.get("code") in BLOCKING
        and isinstance(c.get("run"), int)
        and c["run"] < len(run_ids)
        and c["run"] not in named
    ]


def _inconclusive_statement(blocking: Sequence[str], run_ids: Sequence[int]) -> str:
    runs = sorted({b.split(":", 1)[0] for b in blocking}, key=lambda r: int(r.split()[1]))
    return (
        f"Inconclusive: {len(runs)} of the {len(run_ids)} runs ({', '.join(runs)}) carry a caveat "
        "that blocks any verdict, so these numbers cannot settle the decision."
    )


def decision_points(result: Mapping[str, Any], verdict: Mapping[str, Any]) -> list[str]:
    """The pairwise statements beside the conclusion: every other configuration against the baseline (the pair the
    conclusion states is in its box just above, so it is said once); without stored statements, the leader against
    each alternative."""
    pairs = result.get("pairwise") or []
    baseline, focus = verdict.get("baseline"), set(verdict.get("focus") or [])
    if baseline is not None and any(p.get("statement") for p in pairs):
        stated = focus - {baseline}
        chosen = [p for p in pairs if p.get("baseline") == baseline and p.get("subject") not in stated]
        # each statement ends in its verdict (protocol.comparability's _pair_verdict): said once
        return [p["statement"] for p in chosen]
    leader = recommendation(result).get("leader")
    return [
        p["words"]
        for p in pairs
        if leader in (_arm_label(result, p["subject"]), _arm_label(result, p["baseline"])) and p.get("words")
    ]


def _reason_words(reason: Mapping[str, Any], run_ids: Sequence[int]) -> str:
    run = reason.get("run")
    where = f"run {run_ids[run]}: " if isinstance(run, int) and 0 <= run < len(run_ids) else ""
    message = str(reason.get("message") or reason.get("code") or "")
    return message if message.startswith(where.strip(": ")) else where + message


def _estimated(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [a for a in result.get("arms") or [] if (a.get("estimate") or {}).get("value") is not None]


def recommendation(result: Mapping[str, Any]) -> dict[str, Any]:
    """What the numbers support: {"strength": clear|tentative|none|refused, "headline": str, "leader"?: label}.

    Read only for results stored before comparisons carried a conclusion, and for the leader's table row."""
    arms = _estimated(result)
    if not result.get("comparable"):
        return {"strength": "refused", "headline": "These runs are not comparable: no recommendation."}
    if len(arms) < 2:
        return {
            "strength": "none",
            "headline": "All runs repeat one configuration: there is nothing to choose between.",
        }
    est = arms[0]["estimate"]
    lower = bool(est.get("lower_is_better"))
    ranked = sorted(arms, key=lambda a: a["estimate"]["value"], reverse=not lower)
    leader, others = ranked[0], ranked[1:]
    outcomes = [_pair_outcome(result, leader["index"], o["index"]) for o in others]
    strength, headline = _advice(leader, others, outcomes, est)
    return {"strength": strength, "headline": headline, "leader": leader["label"]}


def _advice(
    leader: Mapping[str, Any], others: Sequence[Mapping[str, Any]], outcomes: Sequence[str], est: Mapping[str, Any]
) -> tuple[str, str]:
    """How firmly the pairwise outcomes of the leader against the others support it, and the headline that says so."""
    metric, best, value = _leader_words(leader, est)
    if all(o in ("better", "worse") for o in outcomes):
        return "clear", (
            f"The numbers support {leader['label']}: it has the {best}, {value}, and "
            "the difference from every alternative is distinguishable from noise at 95%."
        )
    if any(o == "indistinguishable" for o in outcomes):
        close = [o["label"] for o, x in zip(others, outcomes, strict=True) if x == "indistinguishable"]
        return "none", (
            f"The numbers do not separate {leader['label']} from {', '.join(close)} on "
            f"{metric}: the difference is {outcome_words('indistinguishable')}. Decide on other grounds "
            "(cost, energy, capacity, supply) shown below."
        )
    return "tentative", (
        f"{leader['label']} has the {best}, {value}, but the uncertainty of the difference is unknown "
        "(runs without raw samples): treat the ranking as indicative, not established."
    )


def _leader_words(leader: Mapping[str, Any], est: Mapping[str, Any]) -> tuple[str, str, str]:
    """The metric in words, "<lowest|highest> <metric>", and the leader's value with its interval."""
    lower = bool(est.get("lower_is_better"))
    metric = f"{metric_label(est.get('metric'))} ({est.get('unit') or 'no unit'})"
    best = f"{'lowest' if lower else 'highest'} {metric}"
    value = f"{number(leader['estimate']['value'], HEADLINE_STYLE)} {est.get('unit') or ''}{_ci(leader['estimate'])}"
    return metric, best, value


def contract_roles(contract: Mapping[str, Any], axis: str) -> dict[str, list[str]]:
    """Group labels of the contract by their role on `axis`: what was held equal, compared, disclosed."""
    roles: dict[str, list[str]] = {"controlled": [], "subject": [], "disclosed": []}
    for group in contract.get("groups") or []:
        role = (group.get("roles") or {}).get(axis)
        if role in roles:
            roles[role].append(group.get("label") or group.get("id"))
    roles["requirements"] = [
        f"{r.get('label')}: {r.get('reason')}"
        for r in ((contract.get("axes") or {}).get(axis) or {}).get("requirements") or []
    ]
    return roles


# ------------------------------------------------------------------------------------------ rows


def hardware_words(doc: Mapping[str, Any]) -> str:
    """The system by what computes: "1× NVIDIA H100 80GB HBM3", or the CPU model for CPU runs; never "?×"."""
    system = doc.get("system") or {}
    accels = [a for a in system.get("accelerators") or [] if isinstance(a, Mapping)]
    if accels:
        return " + ".join(_accelerator_words(a) for a in accels)
    host = system.get("host") or {}
    cpu = host.get("cpu_model")
    if cpu:
        sockets = host.get("sockets")
        return f"{sockets}× {cpu}" if isinstance(sockets, int) and sockets > 1 else str(cpu)
    return "hardware not stated"


def _accelerator_words(accel: Mapping[str, Any]) -> str:
    count = f"{accel['count']}×" if isinstance(accel.get("count"), int) else None
    return " ".join(str(x) for x in (count, accel.get("vendor"), accel.get("model")) if x)


def _run_row(run: Mapping[str, Any], doc: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    scenario, precision, workload = doc.get("scenario") or {}, doc.get("precision") or {}, doc.get("workload") or {}
    computed = (result.get("runs") or [{}] * (run["position"] + 1))[run["position"]]
    headline = computed.get("headline") or {}
    reported = summary_headline(dict(doc))
    return {
        **run,
        "label": f"Run {run['id']}",
        "citations": [citation_words(c) for c in run.get("citations") or []],
        "document": doc,
        "system": (doc.get("system") or {}).get("name"),
        "configuration": _arm_label(result, arm) if isinstance(arm := computed.get("arm"), int) else "",
        "accelerator": hardware_words(doc),
        "precision": "/".join(str(x) for x in (precision.get("weights"), precision.get("activations")) if x),
        "precision_words": answers.precision_words(precision.get("weights"), precision.get("activations"))
        or "precision not stated",
        "workload": f"{workload.get('name')} {workload.get('version')}",
        "scenario": " ".join(str(x) for x in (scenario.get("kind"), _rate(scenario)) if x),
        **_condition_words(doc.get("conditions") or {}),
        "driver": _join([((doc.get("software") or {}).get("driver") or {}).get(k) for k in ("name", "version")], " "),
        "headline": headline,
        # the run's headline as it reported it, as the catalogue and the run page print it
        "headline_text": headline_text(reported.value, reported.unit),
    }


def _condition_words(conditions: Mapping[str, Any]) -> dict[str, str]:
    window = conditions.get("window") or {}
    return {
        "window": _join(
            [
                f"{window['seconds']:g} s" if window.get("seconds") else None,
                f"{window['repetitions']} reps" if window.get("repetitions") else None,
            ]
        ),
        "warmup": _words((conditions.get("warmup") or {}).get("seconds"), "s warm-up"),
        "steady": _yes_no((conditions.get("steady_state") or {}).get("reached")),
        "power": _words((conditions.get("power") or {}).get("limit_w"), "W limit"),
        "clocks": "locked" if (conditions.get("clocks") or {}).get("locked") else "not locked",
        "throttled": _yes_no((conditions.get("thermal") or {}).get("throttled")),
        "ambient": _words(conditions.get("ambient_c"), "°C"),
        "isolation": conditions.get("isolation") or "not stated",
    }


def _arm_row(
    arm: Mapping[str, Any], run_ids: Sequence[int], verdict: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    derived = {d["name"]: d for d in arm.get("derived") or []}
    return {
        "index": arm["index"],
        "label": arm["label"],
        "runs": [run_ids[r] for r in arm.get("runs") or [] if r < len(run_ids)],
        # each run with its trust, so an example or a declared run never stands in a table unmarked
        "members": [
            {"id": runs[r]["id"], "trust": runs[r].get("trust") or "declared"}
            for r in arm.get("runs") or []
            if r < len(runs)
        ],
        "baseline": arm["index"] == verdict.get("baseline"),
        "focus": arm["index"] in (verdict.get("focus") or []),
        "estimate": arm.get("estimate") or {},
        "ci": _ci(arm.get("estimate") or {}, bare=True),
        "energy": derived.get("energy_per_output"),
        "cost": derived.get("cost_per_million_outputs"),
        "replicas": (arm.get("sizing") or {}).get("replicas"),
    }


# ------------------------------------------------------------------------------------------ words


def _pair_outcome(result: Mapping[str, Any], a: int, b: int) -> str:
    for pair in result.get("pairwise") or []:
        if {pair["subject"], pair["baseline"]} == {a, b}:
            return str(pair.get("outcome") or "unknown")
    return "unknown"


def _arm_label(result: Mapping[str, Any], index: int) -> str:
    return str(((result.get("arms") or [])[index] or {}).get("label", f"arm {index}"))


def _derived_points(arms: Sequence[Mapping[str, Any]]) -> list[str]:
    points = []
    for name, words in (
        ("cost_per_million_outputs", "Lowest cost per million outputs"),
        ("energy_per_output", "Lowest energy per output"),
    ):
        values = [
            (d["value"], d.get("unit") or "", a["label"], d.get("assumption"))
            for a in arms
            for d in a.get("derived") or []
            if d.get("name") == name and d.get("value") is not None
        ]
        if len(values) >= 2:
            value, unit, label, assumed = min(values, key=lambda v: v[0])
            basis = f"derived from the {assumed}" if assumed else "derived; see assumptions"
            points.append(f"{words}: {label}, {number(value, Style.CHART)} {unit} ({basis}).")
    return points


def _sizing_points(arms: Sequence[Mapping[str, Any]]) -> list[str]:
    sized = [(a["label"], a["sizing"]) for a in arms if (a.get("sizing") or {}).get("replicas") is not None]
    if not sized:
        return []
    first = sized[0][1]
    need = ", ".join(f"{label} {s['replicas']}" for label, s in sized)
    return [
        f"Replicas needed for {number(first.get('target_load'), Style.CHART)} {first.get('load_unit') or ''}: {need} "
        "(derived; assumes linear scaling)."
    ]


def _ci(estimate: Mapping[str, Any], *, bare: bool = False) -> str:
    low, high = estimate.get("ci_low"), estimate.get("ci_high")
    if low is None or high is None:
        return "no interval" if bare else " (no interval)"
    text = interval(low, high, HEADLINE_STYLE)
    return text if bare else f" (95% CI {text})"


def _rate(scenario: Mapping[str, Any]) -> str | None:
    qps = scenario.get("target_qps")
    return f"@ {qps:g} req/s" if isinstance(qps, int | float) else None


def _words(value: Any, unit: str) -> str:
    return f"{value:g} {unit}" if isinstance(value, int | float) and not isinstance(value, bool) else "not stated"


def _yes_no(value: Any) -> str:
    return "yes" if value is True else "no" if value is False else "not stated"


def _join(parts: Sequence[Any], sep: str = ", ") -> str:
    return sep.join(str(p) for p in parts if p) or "not stated"
