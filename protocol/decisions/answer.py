"""The whole answer to a question: candidates grouped by configuration, the Pareto frontier of the criteria, what
was left out and why, and a sentence per candidate.
"""

from __future__ import annotations

import copy
import json
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .. import comparability as cmp
from .. import serving
from ..canonical import digest
from ..statistics import MIN_VALUES
from .candidate import candidate, normal_key
from .evidence import (
    Evidence,
    accelerator_model,
    configuration_key,
    out_of_question,
    request_shape,
    served_model,
    shape_key,
)
from .question import DecisionError, Question, escape_pointer

KIND = "benchreg.decision-answer/1"
METHODS = {
    "meets": "per objective, one value of the measured percentile per run; 95% Student t interval on their "
    "logs; 'meets' when the interval's upper end is at or under the objective, 'misses' when its "
    "lower end is above it, else 'uncertain'; fewer than 3 runs: 'not enough evidence'",
    "systems": "systems = ceil(peak demand × (1 + headroom) ÷ sustainable rate per system) + spare systems (N+k); "
    "the interval uses the rate's 95% interval (Student t on the logs of one rate per run); linear scaling across "
    "systems is an assumption",
    "cost": "fleet cost per hour (systems × price per system-hour) ÷ (sustained demand × 3600) × 1,000,000; a "
    "purchase price is spread over its lifetime hours; a price per accelerator-hour is multiplied by the "
    "configuration's accelerators; a configuration with no stated price has no cost; energy cost = energy per "
    "output × energy price, stated apart",
    "energy": "measured average power ÷ the run's measured rate in the demand's unit (its throughput, or its "
    "tokens or requests per second: every output, not goodput; protocol.sizing.energy_per_output), geometric mean "
    "over runs, only from a meter (a served run's from its DCGM exporter over the level)",
    "capacity": "a configuration measured at several offered loads of one sweep (scenario.sweep) is read at its "
    "knee: walking the loads upwards, the highest load measured before a latency objective or the interactivity "
    "target failed, judged on the level's point values (geometric mean over its runs); the capacity, the verdicts, "
    "the count of systems and the cost per output are that level's. Only measured levels count: nothing is "
    "interpolated between loads. When no load failed, the highest load measured is a lower bound (gap 'no-knee')",
    "provisioned": "outputs per second per provisioned MW = capacity per system ÷ (nameplate kW × PUE ÷ 1000), "
    "both stated by the requester; a rating, never a measurement, shown as its own figure and absent without them",
    "frontier": "Pareto frontier over the criteria that matter (lower is better): a candidate is dominated only "
    "when another is better on every criterion beyond both 95% intervals; otherwise they are tied within noise. "
    "A candidate that misses an objective is not eligible; one lacking a criterion's value is not placed, and "
    "the answer says which and why; a criterion no eligible candidate has is left out",
}


# A candidate's verdict as a reader reads it (the codes stay in the JSON answer).
VERDICT_WORDS = {
    "meets": "meets the objectives",
    "misses": "misses the objectives",
    "uncertain": "uncertain: the interval straddles an objective",
    "not-enough-evidence": "not enough evidence (fewer than 3 runs)",
}


CRITERION_FIELD = {
    "cost": ("cost_per_million", "value"),
    "energy": ("energy_per_output", "value"),
    "latency": ("latency_ms", None),
}


Fields = Mapping[str, tuple[str, str | None]]


def _criterion(cand: Mapping[str, Any], name: str, fields: Fields = CRITERION_FIELD) -> float | None:
    block, key = fields[name]
    value = cand[block] if key is None else (cand[block] or {}).get(key)
    return float(value) if isinstance(value, int | float) else None


def _bounds(cand: Mapping[str, Any], name: str, fields: Fields = CRITERION_FIELD) -> tuple[float, float] | None:
    """The criterion's 95% interval (low, high), None when it has none."""
    if name == "latency" and fields is CRITERION_FIELD:
        measured = (cand["objectives"][0].get("measured") if cand.get("objectives") else None) or {}
    else:
        measured = cand[fields[name][0]] or {}
    low, high = measured.get("ci_low"), measured.get("ci_high")
    return (float(low), float(high)) if isinstance(low, int | float) and isinstance(high, int | float) else None


def frontier(
    cands: Sequence[dict[str, Any]], criteria: Sequence[str], fields: Fields = CRITERION_FIELD
) -> dict[str, Any]:
    """Pareto frontier (lower is better on every criterion, beyond the intervals) of the eligible candidates.
    `fields` says where each criterion's value is in a candidate (a training answer's differ from inference's)."""
    eligible = [i for i, c in enumerate(cands) if c["meets"] != "misses"]
    used = [k for k in criteria if any(_criterion(cands[i], k, fields) is not None for i in eligible)]
    dropped = [{"criterion": k, "lacking": [cands[i]["label"] for i in eligible]} for k in criteria if k not in used]
    unplaced = [
        {"label": cands[i]["label"], "lacking": lacking}
        for i in eligible
        if (lacking := [k for k in used if _criterion(cands[i], k, fields) is None])
    ]
    placed = [i for i in eligible if all(_criterion(cands[i], k, fields) is not None for k in used)]
    members = [
        i for i in placed if used and not any(_dominates(cands[j], cands[i], used, fields) for j in placed if j != i)
    ]
    return {
        "criteria": used,
        "dropped": dropped,
        "unplaced": unplaced,
        "members": members,
        "labels": [cands[i]["label"] for i in members],
        **_pairs(cands, members, used, fields),
        "method": METHODS["frontier"],
    }


def _dominates(a: Mapping[str, Any], b: Mapping[str, Any], used: Sequence[str], fields: Fields) -> bool:
    """Whether `a` is better than `b` on every criterion beyond both intervals (DECISIONS.md, Trade-offs)."""
    for k in used:
        ea, eb = _bounds(a, k, fields), _bounds(b, k, fields)
        if ea is None or eb is None or not ea[1] < eb[0]:
            return False
    return True


def _ordered_pairs(
    cands: Sequence[Mapping[str, Any]], members: Sequence[int], used: Sequence[str], fields: Fields
) -> list[tuple[int, int]]:
    """Pairs of frontier members whose point values order them on every criterion (neither dominates beyond the
    intervals, or both would not be members)."""
    out = []
    for n, i in enumerate(members):
        for j in members[n + 1 :]:
            points = [(_criterion(cands[i], k, fields), _criterion(cands[j], k, fields)) for k in used]
            if all(a is not None and b is not None and a <= b for a, b in points) or all(
                a is not None and b is not None and b <= a for a, b in points
            ):
                out.append((i, j))
    return out


def _has_intervals(cand: Mapping[str, Any], used: Sequence[str], fields: Fields) -> bool:
    return all(_bounds(cand, k, fields) is not None for k in used)


def _pairs(
    cands: Sequence[Mapping[str, Any]], members: Sequence[int], used: Sequence[str], fields: Fields
) -> dict[str, Any]:
    """The frontier's ordered pairs, read once (20 members make 190 pairs): "tied" and "cannot_tell"."""
    ordered = _ordered_pairs(cands, members, used, fields)
    bare = {i for i in members if not _has_intervals(cands[i], used, fields)}
    return {"tied": _tied(cands, ordered, bare), "cannot_tell": _cannot_tell(cands, ordered, bare)}


def _tied(cands: Sequence[Mapping[str, Any]], ordered: Sequence[tuple[int, int]], bare: set[int]) -> list[list[str]]:
    """Ordered pairs whose 95% intervals overlap on a criterion: tied within noise. Only candidates with an
    interval on every criterion (not in `bare`) can be within noise (DECISIONS.md, Trade-offs)."""
    return [[cands[i]["label"], cands[j]["label"]] for i, j in ordered if i not in bare and j not in bare]


def _cannot_tell(
    cands: Sequence[Mapping[str, Any]], ordered: Sequence[tuple[int, int]], bare: set[int]
) -> list[dict[str, Any]]:
    """Ordered pairs of which one or both have no interval (one run each, in `bare`): nothing is within noise, so
    the answer says they cannot be told apart, and why (DECISIONS.md, Trade-offs)."""
    out = []
    for i, j in ordered:
        without = [cands[n]["label"] for n in (i, j) if n in bare]
        if not without:
            continue
        out.append(
            {
                "labels": [cands[i]["label"], cands[j]["label"]],
                "without_interval": without,
                "why": (
                    f"{' and '.join(without)} {'has' if len(without) == 1 else 'have'} no 95% interval (fewer than "
                    f"{MIN_VALUES} runs), so the difference cannot be weighed against run-to-run noise; "
                    "repeat the runs to decide between them"
                ),
            }
        )
    return out


def answer(question: Question, evidence: Sequence[Evidence], *, digests_name_documents: bool = False) -> dict[str, Any]:
    """The whole answer as a JSON value: candidates, frontier, what is left out and why, every run cited.

    `digests_name_documents`: each evidence's ref["digest"] is its document's digest (the registry's runs). Each
    run's grouping is then remembered by that digest across answers (see `_grouping`); otherwise it is worked out
    for this answer alone.
    """
    left_out, chosen = _sift(question, evidence)
    model = one_model(question, chosen)
    one_shape(question, chosen)
    tuned = serving.tuned_settings([ev.document for ev in chosen])
    configurations = _configurations(chosen, tuned, digests_name_documents)
    ordered = [runs for runs, *_ in configurations]
    cands = [
        candidate(question, g, label, (doc, config))
        for (g, doc, config), label in zip(configurations, _labels(configurations), strict=True)
    ]
    rank = {"meets": 0, "uncertain": 1, "not-enough-evidence": 2, "misses": 3}
    cands.sort(key=lambda c: (rank.get(c["meets"], 4), c["systems_needed"]["value"] or math.inf, c["label"]))
    front = frontier(cands, question.criteria)
    refused = refused_inputs(question, ordered)
    out: dict[str, Any] = {
        "kind": KIND,
        "question": question.words(),
        "assumptions": _model_assumption(question, model)
        + question.assumptions(frozenset(r["pointer"] for r in refused)),
        "served_model": model,
        "refused_inputs": refused,
        "candidates": cands,
        "frontier": front,
        "left_out": left_out,
        "cited": sorted({str(r.get("digest")) for c in cands for r in _every_run(c)}),
        "methods": dict(METHODS),
        "contract": {"version": cmp.contract().version, "axis": "iso-quality"},
        "summary": summary(cands, front),
    }
    representable(out)
    return out


def one_model(question: Question, chosen: Sequence[Evidence]) -> str | None:
    """The model every chosen run serves (None: no run serves one), or DecisionError when the question names no
    model and the runs serve several: a decision never weighs one model's runs against another's (DECISIONS.md,
    "Which runs answer it"), and choosing one for the requester would answer another question than asked. The
    message lists the models stored, each with its runs and configurations, so the requester can name one."""
    models: dict[str, list[Evidence]] = {}
    for ev in chosen:
        name = served_model(ev.document)
        if name is not None:
            models.setdefault(name, []).append(ev)
    if question.served_model is not None or len(models) < 2:
        return question.served_model or next(iter(models), None)
    listed = "; ".join(
        f"{name!r} ({len(runs)} run(s) on {', '.join(sorted({configuration_key(r.document) for r in runs}))})"
        for name, runs in sorted(models.items())
    )
    raise DecisionError(
        f"/served_model: the runs that answer this question serve {len(models)} models, and a decision never weighs "
        "one model's runs against another's: name the model to size for in served_model (e.g. "
        f'{{"name": {json.dumps(min(models))}}}); the models stored are {listed}'
    )


def one_shape(question: Question, chosen: Sequence[Evidence]) -> None:
    """DecisionError when the question names no request shape and the runs that answer it have several: requests of
    another shape are another load (the shape is controlled on the iso-quality axis: DECISIONS.md, "same workload,
    scenario and constraints"), so their capacities never share one frontier. The message lists the shapes stored,
    each with its runs and configurations, and the first as the question would name it."""
    if question.request_shape is not None:
        return  # the runs of other shapes were left out, each with its reason (evidence.other_shape)
    shapes: dict[str, list[Evidence]] = {}
    for ev in chosen:
        shapes.setdefault(shape_key(request_shape(ev.document)), []).append(ev)
    if len(shapes) < 2:
        return
    listed = "; ".join(
        f"{serving.shape_words(request_shape(runs[0].document)) if key else 'not stated'} ({len(runs)} run(s) on "
        f"{', '.join(sorted({configuration_key(r.document) for r in runs}))})"
        for key, runs in sorted(shapes.items())
    )
    # the first stated shape as a requester would paste it (spaced, so a page can wrap it)
    first = next(runs[0].document for key, runs in sorted(shapes.items()) if key)
    example = json.dumps(request_shape(first), ensure_ascii=False, sort_keys=True)
    raise DecisionError(
        f"/request_shape: the runs that answer this question have {len(shapes)} request shapes, and a decision never "
        "weighs one load against another: name the shape to size for in request_shape (as the runs state it, "
        f"workload.request_shape, e.g. {example}); the shapes stored are {listed}"
    )


def _model_assumption(question: Question, model: str | None) -> list[str]:
    """The model served, said first among the assumptions when the question did not name it (one model only)."""
    if model is None or question.served_model is not None:
        return []
    return [f"the model served: {model} (every run that answers the question serves it; the question names none)"]


def refused_inputs(question: Question, groups: Sequence[Sequence[Evidence]]) -> list[dict[str, str]]:
    """Every stated price or nameplate keyed by a configuration (or accelerator model) that no candidate has:
    DECISIONS.md, "every stated input is used or refused". Each is refused with its pointer and the keys that
    would match; '*' (any system) always applies. With no candidate yet nothing can be matched, so nothing is
    refused."""
    if not groups:
        return []
    keys = sorted({configuration_key(group[0].document) for group in groups})
    models = sorted({accelerator_model(group[0].document) for group in groups})
    known = {normal_key(k) for k in keys}
    stated = [
        ("/prices/system_hour", question.system_hour, "price per system-hour"),
        ("/prices/purchase", question.purchase, "purchase price"),
        ("/provisioning/nameplate_kw", question.nameplate_kw, "nameplate power"),
    ]
    out = [
        _refused(f"{where}/{escape_pointer(key)}", f"{what} for {key!r}", keys, "configuration")
        for where, given, what in stated
        for key in given
        if key != "*" and normal_key(key) not in known
    ]
    out += [
        _refused(
            f"/prices/accelerator_hour/{escape_pointer(model)}",
            f"price per accelerator-hour for {model!r}",
            models,
            "accelerator model",
        )
        for model in question.accelerator_hour
        if model not in models
    ]
    return out


def _refused(pointer: str, what: str, keys: Sequence[str], kind: str) -> dict[str, str]:
    would = ", ".join(repr(k) for k in keys)
    return {
        "pointer": pointer,
        "message": f"the {what} matches no candidate, so it is not used; the candidates' {kind} keys are {would}",
    }


def _every_run(cand: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The runs a candidate rests on: those it is read at, and every level of its sweep (the knee is found from
    them)."""
    levels = (cand.get("sweep") or {}).get("levels") or []
    return [*cand["runs"], *(r for lv in levels for r in lv["runs"])]


def _sift(question: Question, evidence: Sequence[Evidence]) -> tuple[list[dict[str, Any]], list[Evidence]]:
    """The runs left out (each with its reason) and the runs that answer the question."""
    left_out, chosen = [], []
    for ev in evidence:
        why = out_of_question(question, ev.document)
        if why is None:
            chosen.append(ev)
        else:
            left_out.append({"run": dict(ev.ref), "reason": why})
    return left_out, chosen


def _neutral(ev: Evidence, tuned: Mapping[str, Sequence[str]]) -> Mapping[str, Any]:
    """The run without what differs between the levels of its sweep: the load, and the engine settings tuned with it.
    A run outside any sweep is its document as it is (only read here: no copy)."""
    sweep = serving.sweep_id(ev.document)
    if sweep is None:
        return ev.document
    return serving.level_neutral(ev.document, tuned.get(sweep, ()))


# One configuration: its runs, and the first run's level-neutral document and configuration (what labels it).
Configuration = tuple[list[Evidence], Mapping[str, Any], dict[str, Any]]


def _configurations(
    chosen: Sequence[Evidence], tuned: Mapping[str, Sequence[str]], digests_name_documents: bool = False
) -> list[Configuration]:
    """The chosen runs grouped by comparability key and configuration, in order of first appearance. Engine
    settings that change capacity (software.settings, software.serving's parallelism and speculative decoding) are
    part of the configuration: two sweeps differing in one are two candidates. Each run is read once for both."""
    groups: dict[str, Configuration] = {}
    for ev in chosen:
        # The levels of a sweep differ only in their offered load (and the settings tuned with it): they are one
        # configuration, read at its knee.
        doc = _neutral(ev, tuned)
        run_digest = ev.ref.get("digest")
        if digests_name_documents and isinstance(run_digest, str):
            sweep = serving.sweep_id(ev.document)
            settings = tuple(sorted(tuned.get(sweep, ()))) if sweep is not None else None
            group, config = _grouping((run_digest, settings, cmp.contract().version), doc)
        else:
            group, config = _group_of(doc)
        if group not in groups:  # the answer cites this configuration: its own copy, not the remembered one
            groups[group] = ([], doc, copy.deepcopy(config))
        groups[group][0].append(ev)
    return list(groups.values())


def _group_of(doc: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A level-neutral document's group (its comparability key and its configuration's digest) and configuration."""
    key, config = cmp.key_and_configuration(doc, "iso-quality")
    return key + digest(config), config


# Classifying a run's ~150 fields for its key and configuration is the dearest step of an answer (about a third
# of its CPU), and the same runs answer many decisions: every decision on a question re-answered when a run is
# submitted, each request for the same question. A run's digest names its document, so its grouping is
# remembered by (digest, the sweep settings it was made neutral of, the contract's version): the latest
# MAX_GROUPINGS runs', a few KB each (the documents themselves are not kept). Never handed out to be changed: the
# answer copies the configurations it cites.
MAX_GROUPINGS = 4096
_groupings: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}
_groupings_lock = threading.Lock()  # a server answers on several threads


def forget_groupings() -> None:
    """Forget every remembered grouping (a bench timing answers as for runs no answer has read yet)."""
    with _groupings_lock:
        _groupings.clear()


def _grouping(name: tuple[Any, ...], doc: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    with _groupings_lock:
        found = _groupings.get(name)
    if found is None:
        found = _group_of(doc)
        with _groupings_lock:
            if len(_groupings) >= MAX_GROUPINGS:
                del _groupings[next(iter(_groupings))]  # the oldest remembered
            _groupings[name] = found
    return found


def _labels(ordered: Sequence[Configuration]) -> list[str]:
    """One label per candidate; where candidates differ in a setting, the label says it ('max_num_seqs=256')."""
    if not ordered:
        return []
    return cmp.arm_labels([doc for _, doc, _ in ordered], "iso-quality", [config for *_, config in ordered])


SAFE_INTEGER = 2**53 - 1  # the largest integer every JSON reader keeps exactly (RFC 8785, I-JSON)


def representable(value: Any, where: str = "") -> None:
    """DecisionError naming the first number in `value` that is not finite or not an integer JSON keeps exactly
    (a guard: each figure above is checked where it is computed, so this names a bug, never a stored run)."""
    if not where and _all_representable(value):
        return  # every answer: one flat walk; the pointers are built only to name a problem
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int) and abs(value) > SAFE_INTEGER:
        raise DecisionError(f"{where or '/'}: the answer's figure {value} is beyond what JSON keeps exactly")
    if isinstance(value, float) and not math.isfinite(value):
        raise DecisionError(f"{where or '/'}: the answer's figure is not a finite number")
    if isinstance(value, Mapping):
        for k, v in value.items():
            representable(v, f"{where}/{escape_pointer(k)}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            representable(v, f"{where}/{i}")


def _all_representable(value: Any) -> bool:
    """Whether `representable` would find nothing: a stack, no pointers built (the common types tried first)."""
    stack = [value]
    while stack:
        item = stack.pop()
        # An answer is ~40,000 plain values: their exact types first, isinstance only for anything else.
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict:
            stack.extend(item.values())
            continue
        if kind is list:
            stack.extend(item)
            continue
        if kind is float:
            if not math.isfinite(item):
                return False
            continue
        if isinstance(item, str | bool):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, int):
            if abs(item) > SAFE_INTEGER:
                return False
        elif isinstance(item, dict | Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def systems_words(systems: Mapping[str, Any]) -> str:
    """'3 system(s) (95% CI 2–4)', '3 system(s) (no interval)' or 'no count of systems': a candidate's count of
    systems as the one-line answers say it (inference and training alike)."""
    if not systems["value"]:
        return "no count of systems"
    spread = f" (95% CI {systems['ci_low']}–{systems['ci_high']})" if systems.get("ci_low") else " (no interval)"
    return f"{systems['value']} system(s){spread}"


def summary(cands: Sequence[Mapping[str, Any]], front: Mapping[str, Any]) -> list[str]:
    """One sentence per candidate, verdict first, the gaps that weaken it in the same sentence (never later)."""
    out = []
    for c in cands:
        count = systems_words(c["systems_needed"])
        weak = "; ".join(g["message"] for g in c["gaps"])
        out.append(
            f"{c['label']}: {VERDICT_WORDS.get(c['meets'], c['meets'])}; {count}"
            + (f", read at {c['read_at']}" if c.get("sweep") and c.get("read_at") else "")
            + (" — on the frontier" if c["label"] in front["labels"] else "")
            + (f"; capacity is {c['capacity_basis']}" if c.get("capacity_published") else "")
            + (f". Caveats: {weak}." if weak else ".")
        )
    return out
