"""A comparison in sentences: its ratios against the chosen baseline ("+21% throughput vs H100 (95% CI +19% to
+22%)"), and what a run withdrawn since it was made does to its conclusion.

Read from the stored result (protocol.comparability's `pairwise`: subject ÷ baseline with its interval), so the
words never compute anything the comparison did not: they restate the ratio as a change in percent, say which way
is better for the metric, and keep the verdict (distinguishable or not, inconclusive, not enough evidence).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from protocol.comparability import metric_words
from registry.presentation.words import outcome_words, percent_change


@dataclass(frozen=True)
class Sentence:
    subject: str
    baseline: str
    change: str | None  # "+21%"
    text: str  # the whole sentence
    better: bool | None  # subject better than the baseline (None: no ratio, or not distinguishable)
    verdict: str
    head: str = ""  # the sentence's first part, "H200: +21% throughput vs H100"; text = head + " " + the rest

    @property
    def rest(self) -> str:
        return self.text[len(self.head) :].lstrip()


def ratio_sentences(result: Mapping[str, Any]) -> list[Sentence]:
    arms: Sequence[Mapping[str, Any]] = result.get("arms") or []
    out = []
    for pair in result.get("pairwise") or []:
        subject, baseline = arms[pair["subject"]], arms[pair["baseline"]]
        verdict = str(pair.get("verdict") or "")
        if pair.get("ratio") is None:
            text = f"{subject['label']}: no ratio against {baseline['label']} ({pair.get('method', '')})"
            out.append(Sentence(subject["label"], baseline["label"], None, text, None, verdict))
            continue
        out.append(_ratio_sentence(pair, subject, baseline, verdict))
    return out


def _ratio_sentence(
    pair: Mapping[str, Any], subject: Mapping[str, Any], baseline: Mapping[str, Any], verdict: str
) -> Sentence:
    """The sentence of a pair with a ratio: the change in percent, its interval, which way is better, the verdict."""
    estimate = subject.get("estimate") or {}
    lower = bool(estimate.get("lower_is_better"))
    what = metric_words(str(pair.get("metric") or estimate.get("metric") or "headline"))
    ratio = pair["ratio"]
    label = "simultaneous 95% CI" if pair.get("simultaneous") else "95% CI"
    ci = (
        f"{label} {percent_change(pair['ci_low'])} to {percent_change(pair['ci_high'])}"
        if pair.get("ci_low") is not None
        else "no interval"
    )
    change = percent_change(ratio)
    direction = "lower is better" if lower else "higher is better"
    tail, better = _verdict_words(verdict, (ratio < 1.0) if lower else (ratio > 1.0), subject, baseline)
    head = f"{subject['label']}: {change} {what} vs {baseline['label']}"
    text = f"{head} ({ci}; {direction}) — {tail}"
    return Sentence(subject["label"], baseline["label"], change, text, better, verdict, head)


def _verdict_words(
    verdict: str, improved: bool, subject: Mapping[str, Any], baseline: Mapping[str, Any]
) -> tuple[str, bool | None]:
    """The sentence's tail for `verdict` (in the words every page and report gives it: words.outcome_words), and
    whether the subject is better (None unless distinguishable)."""
    if verdict == "distinguishable":
        return f"{'better' if improved else 'worse'} than the baseline, {outcome_words(verdict)}", improved
    if verdict == "indistinguishable":
        return f"{outcome_words(verdict)} (the interval includes ±0%)", None
    if verdict == "inconclusive":
        return f"{outcome_words(verdict)}: {_reason(subject, baseline)}", None
    return f"{outcome_words('not-enough-evidence')} for a verdict", None


def _reason(subject: Mapping[str, Any], baseline: Mapping[str, Any]) -> str:
    reasons = [r.get("message", "") for r in (*subject.get("reasons", []), *baseline.get("reasons", []))]
    return "; ".join(r for r in reasons if r) or "a run blocks a verdict"


def withdrawn_run(run_id: int, withdrawn_at: datetime, withdrawn_by: str, reason: str) -> str:
    """Who withdrew a run of a comparison, when and why: "run 7 was withdrawn on 2026-11-24 by ana: bad cooling"."""
    return f"run {run_id} was withdrawn on {withdrawn_at:%Y-%m-%d} by {withdrawn_by}: {reason}"


def withdrawn_statement(messages: Sequence[str]) -> str:
    """A comparison's statement once runs of it are withdrawn (`messages` from withdrawn_run)."""
    return f"Inconclusive: {'; '.join(messages)}. This comparison was made before, and no longer stands."
