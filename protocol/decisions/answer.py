"""The whole answer to a question: candidates grouped by configuration, the Pareto frontier of the criteria, what
was left out and why, and a sentence per candidate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .. import comparability as cmp
from ..canonical import digest
from .candidate import candidate
from .evidence import Evidence, out_of_question
from .question import DecisionError, Question, escape_pointer

KIND = "benchreg.decision-answer/1"
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
    members = [i for i in eligible if used and not _dominated(i, points)]
    return {
        "criteria": used,
        "dropped": dropped,
        "members": members,
        "labels": [cands[i]["label"] for i in members],
        "method": METHODS["frontier"],
    }


def _dominated(i: int, points: Mapping[int, list[float]]) -> bool:
    """Whether another eligible candidate is no worse on every criterion and differs somewhere."""
    return any(
        all(a <= b for a, b in zip(points[j], points[i], strict=True)) and points[j] != points[i]
        for j in points
        if j != i
    )


def answer(question: Question, evidence: Sequence[Evidence]) -> dict[str, Any]:
    """The whole answer as a JSON value: candidates, frontier, what is left out and why, every run cited."""
    left_out, chosen = _sift(question, evidence)
    ordered = _configurations(chosen)
    cands = [candidate(question, g, label) for g, label in zip(ordered, _labels(ordered), strict=True)]
    rank = {"meets": 0, "uncertain": 1, "not-enough-evidence": 2, "misses": 3}
    cands.sort(key=lambda c: (rank.get(c["meets"], 4), c["systems_needed"]["value"] or math.inf, c["label"]))
    front = frontier(cands, question.criteria)
    out: dict[str, Any] = {
        "kind": KIND,
        "question": question.words(),
        "candidates": cands,
        "frontier": front,
        "left_out": left_out,
        "cited": sorted({str(r.get("digest")) for c in cands for r in c["runs"]}),
        "methods": dict(METHODS),
        "contract": {"version": cmp.contract().version, "axis": "iso-quality"},
        "summary": summary(cands, front),
    }
    _representable(out)
    return out


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


def _configurations(chosen: Sequence[Evidence]) -> list[list[Evidence]]:
    """The chosen runs grouped by comparability key and configuration, in order of first appearance."""
    groups: dict[str, list[Evidence]] = {}
    for ev in chosen:
        key = cmp.comparability_key(ev.document, "iso-quality") + digest(cmp.configuration(ev.document, "iso-quality"))
        groups.setdefault(key, []).append(ev)
    return list(groups.values())


def _labels(ordered: Sequence[Sequence[Evidence]]) -> list[str]:
    if not ordered:
        return []
    return cmp.arm_labels(
        [g[0].document for g in ordered],
        "iso-quality",
        [cmp.configuration(g[0].document, "iso-quality") for g in ordered],
    )


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
            _representable(v, f"{where}/{escape_pointer(k)}")
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
