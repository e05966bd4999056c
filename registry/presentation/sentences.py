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
from registry.presentation.words import percent_change


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
        estimate = subject.get("estimate") or {}
        lower = bool(estimate.get("lower_is_better"))
        what = metric_words(str(pair.get("metric") or estimate.get("metric") or "headline"))
        verdict = str(pair.get("verdict") or "")
        ratio = pair.get("ratio")
        if ratio is None:
            out.append(
                Sentence(
                    subject["label"],
                    baseline["label"],
                    None,
                    f"{subject['label']}: no ratio against {baseline['label']} ({pair.get('method', '')})",
                    None,
                    verdict,
                )
            )
            continue
        label = "simultaneous 95% CI" if pair.get("simultaneous") else "95% CI"
        ci = (
            f"{label} {percent_change(pair['ci_low'])} to {percent_change(pair['ci_high'])}"
            if pair.get("ci_low") is not None
            else "no interval"
        )
        change = percent_change(ratio)
        direction = "lower is better" if lower else "higher is better"
        improved = (ratio < 1.0) if lower else (ratio > 1.0)
        if verdict == "distinguishable":
            tail, better = (
                ("better" if improved else "worse") + " than the baseline, distinguishable from noise",
                improved,
            )
        elif verdict == "indistinguishable":
            tail, better = "not distinguishable from noise (the interval includes ±0%)", None
        elif verdict == "inconclusive":
            tail, better = "inconclusive: " + _reason(subject, baseline), None
        else:
            tail, better = "not enough evidence for a verdict", None
        head = f"{subject['label']}: {change} {what} vs {baseline['label']}"
        text = f"{head} ({ci}; {direction}) — {tail}"
        out.append(Sentence(subject["label"], baseline["label"], change, text, better, verdict, head))
    return out


def _reason(subject: Mapping[str, Any], baseline: Mapping[str, Any]) -> str:
    reasons = [r.get("message", "") for r in (*subject.get("reasons", []), *baseline.get("reasons", []))]
    return "; ".join(r for r in reasons if r) or "a run blocks a verdict"


def withdrawn_run(run_id: int, withdrawn_at: datetime, withdrawn_by: str, reason: str) -> str:
    """Who withdrew a run of a comparison, when and why: "run 7 was withdrawn on 2026-11-24 by ana: bad cooling"."""
    return f"run {run_id} was withdrawn on {withdrawn_at:%Y-%m-%d} by {withdrawn_by}: {reason}"


def withdrawn_statement(messages: Sequence[str]) -> str:
    """A comparison's statement once runs of it are withdrawn (`messages` from withdrawn_run)."""
    return f"Inconclusive: {'; '.join(messages)}. This comparison was made before, and no longer stands."
