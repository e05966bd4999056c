"""Two configurations' sweeps at one target: each one's best measured throughput per accelerator, and their ratio
with Welch's interval (protocol.statistics) where both levels have the runs for one, said in words."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import comparability as cmp
from ..comparability import display
from ..numbers import Style, number
from ..statistics import CONFIDENCE, Ratio, ratio
from .frontier import Best, Target, best_at, frontier, knee
from .levels import PER_USER_WORDS, THROUGHPUT_WORDS, Level, level_neutral, shape_words

METHOD = (
    "Each configuration's levels are its runs grouped by offered load; a level's figure is the geometric mean of one "
    "value per run (Student t interval on the logs from 3 runs). At the target, only measured levels qualify, judged "
    "on their point values; the one with the highest throughput per accelerator is used, and nothing between "
    "measured loads is interpolated. The ratio's interval is Welch's t interval on the difference of mean logs of "
    "the two chosen levels' runs; with fewer than 3 runs at either level there is no interval."
)


@dataclass(frozen=True)
class Comparison:
    """subject ÷ baseline throughput per accelerator at one target, and the sentence that says it."""

    target: Target
    subject: str
    baseline: str
    subject_best: Best
    baseline_best: Best
    ratio: Ratio | None
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        r = self.ratio
        return {
            "target": self.target.as_dict(),
            "subject": {"label": self.subject, **self.subject_best.as_dict()},
            "baseline": {"label": self.baseline, **self.baseline_best.as_dict()},
            "ratio": None
            if r is None
            else {
                "value": r.value,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "confidence": r.confidence,
                "outcome": r.outcome,
                "method": r.method,
                "evidence": r.evidence,
            },
            "sentence": self.sentence,
            "method": METHOD,
            "x": PER_USER_WORDS,
            "y": THROUGHPUT_WORDS,
        }


def compare_at(
    subject: Sequence[Level], subject_label: str, baseline: Sequence[Level], baseline_label: str, target: Target
) -> Comparison:
    """Subject against baseline at `target`: "at 50 tok/s per user, A delivers 1.30× B's output tokens per second
    per accelerator (95% CI 1.21–1.40)", with the levels used and what was not measured."""
    a, b = best_at(subject, target), best_at(baseline, target)
    if a.level is None or b.level is None:
        missing = "; ".join(
            f"{who}: {best.reason}" for who, best in ((subject_label, a), (baseline_label, b)) if best.reason
        )
        sentence = f"At {target.short()}, no ratio: {missing}."
        return Comparison(target, subject_label, baseline_label, a, b, None, sentence)
    r = ratio(a.level.per_accelerator, b.level.per_accelerator)
    return Comparison(
        target, subject_label, baseline_label, a, b, r, _sentence(target, subject_label, baseline_label, a, b, r)
    )


def _sentence(target: Target, subject: str, baseline: str, a: Best, b: Best, r: Ratio) -> str:
    assert a.level is not None and b.level is not None  # checked by the caller
    if r.ci_low is not None and r.ci_high is not None:
        ci = f"{CONFIDENCE:.0%} CI {number(r.ci_low, Style.RATIO)}–{number(r.ci_high, Style.RATIO)}" + (
            "" if r.distinguishable else ": not distinguishable from 1"
        )
    else:
        ci = f"no interval: {r.evidence or 'not enough runs'}"
    each = (
        f"{subject} {number(a.level.per_accelerator.value, Style.SIGNIFICANT)} tok/s per accelerator at "
        f"{a.level.words}, {baseline} {number(b.level.per_accelerator.value, Style.SIGNIFICANT)} at {b.level.words}"
    )
    return (
        f"At {target.short()}, {subject} delivers {number(r.value, Style.RATIO)}× {baseline}'s output tokens per "
        f"second per accelerator ({ci}). Measured levels only ({each}); throughput between measured loads was not "
        "measured and is not interpolated."
    )


def _shape(doc: Mapping[str, Any]) -> str:
    return shape_words((doc.get("workload") or {}).get("request_shape"))


def _served_model(doc: Mapping[str, Any]) -> str:
    return display(((doc.get("software") or {}).get("serving") or {}).get("model"))


# Groups whose values are said as a whole in a refusal, not field by field: {group: (noun, the value's words)}.
_SAID_WHOLE: dict[str, tuple[str, Callable[[Mapping[str, Any]], str]]] = {
    "request_shape": ("request shape", _shape),
    "served_model": ("served model", _served_model),
}


# What was measured is said before how (precision, system, settings): a reader learns first that the sweeps served
# other models or requests. The rest follow in the contract's order.
_SAID_FIRST = ("served_model", "request_shape", "model", "workload", "dataset", "shape", "scenario", "sweep_mode")


def not_like_for_like(docs: Sequence[Mapping[str, Any]], labels: Sequence[str], axis: str = "system") -> str | None:
    """None when sweeps (one level of each, `docs`, named by `labels`) measured the same thing, so their frontiers
    may be set against each other on `axis`; else the sentence that says why not, each differing field with its
    value per sweep ("request shape differs: 1000/200 fixed (8×B200, sweep a) vs agentic multi-turn (…)"). The
    comparability contract decides, with the load of each level left out: a sweep's levels differ only in it."""
    verdict = cmp.check([level_neutral(d) for d in docs], axis, names=list(labels))
    if verdict.comparable:
        return None
    parts: list[str] = []
    for diff in sorted(verdict.offending, key=lambda d: _SAID_FIRST.index(d.group) if d.group in _SAID_FIRST else 99):
        if diff.group in _SAID_WHOLE:
            noun, words = _SAID_WHOLE[diff.group]
            part = f"{noun} differs: " + _each([words(d) for d in docs], labels)
        elif diff.role == "required":
            part = diff.words
        else:
            part = f"{diff.field}: " + _each(diff.values, labels)
        if part not in parts:
            parts.append(part)
    return (
        f"Not like for like on the {cmp.axis_label(axis)} axis: {'; '.join(parts)}. No ratio is given: each sweep's "
        "frontier is shown as measured, not set against the other."
    )


def _each(values: Sequence[str], labels: Sequence[str]) -> str:
    """'a (first) vs b (second)': each sweep's value, the sweep named."""
    return " vs ".join(f"{v} ({label})" for v, label in zip(values, labels, strict=True))


def sweep_summary(levels: Sequence[Level], target: Target | None = None) -> dict[str, Any]:
    """One configuration's sweep as JSON: its levels, the frontier, and (with a target) its best level and knee.
    What pages, charts, decisions and reports read."""
    out: dict[str, Any] = {
        "levels": [lv.as_dict() for lv in levels],
        "frontier": frontier(levels),
        "x": PER_USER_WORDS,
        "y": THROUGHPUT_WORDS,
        "method": METHOD,
    }
    if target is not None:
        out["target"] = target.as_dict()
        out["best"] = best_at(levels, target).as_dict()
        out["knee"] = knee(levels, target).as_dict()
    return out
