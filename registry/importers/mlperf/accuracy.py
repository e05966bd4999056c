"""MLPerf's accuracy verdict on one accuracy.txt, computed as its submission checker computes it.

The checker (mlcommons/inference tools/submission/.../accuracy_check.py, `accuracy_result_check`) reads the
file line by line; for each line and each metric of the round's accuracy-target it applies ACC_PATTERN[metric]
with `re.match` and takes group 1: a value below the lower bound fails the run, and every metric must have
been seen passing. accuracy-upper-limit metrics fail the run when a value is above the limit, and are not
required. It stops reading once every metric has passed and the `hash=` line was seen. `judge` does the same
on the lines `logs.read_accuracy` prepared (numpy reprs and '(Passed)' suffixes removed), so the values and
the verdict are MLCommons' own; `quality_section` turns them into metrics.quality.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .plan import Build
from .rules import Metric


@dataclass
class Verdict:
    """What the checker's loop found: the last value of each metric, and whether any bound was broken."""

    values: dict[str, float] = field(default_factory=dict)
    below: list[str] = field(default_factory=list)  # metrics with a value under the lower bound
    above: list[str] = field(default_factory=list)  # metrics with a value over the upper limit
    unreadable: list[str] = field(default_factory=list)  # pattern matched, group 1 is not a number

    def passed(self, metrics: list[Metric]) -> bool | None:
        """The checker's verdict; None when a required metric was never found (it would fail the run, but
        a line the normaliser did not reach is as likely as a missing figure, so no verdict is made)."""
        if any(m.required and m.name not in self.values for m in metrics):
            return None
        return not self.below and not self.above


def judge(lines: list[str], metrics: list[Metric]) -> Verdict:
    """Run the checker's loop over the lines: every match recorded (the last one kept), bounds applied."""
    verdict = Verdict()
    passing: set[str] = set()
    required = {m.name for m in metrics if m.required}
    hash_seen = False
    for line in lines:
        hash_seen = hash_seen or line.strip().startswith("hash=")
        for metric in metrics:
            value = _match(metric, line, verdict)
            if value is None:
                continue
            verdict.values[metric.name] = value
            if metric.min is not None:
                if value >= metric.min:
                    passing.add(metric.name)
                else:
                    verdict.below.append(metric.name)
            if metric.max is not None and value > metric.max:
                verdict.above.append(metric.name)
        if required <= passing and hash_seen:
            break
    return verdict


def _match(metric: Metric, line: str, verdict: Verdict) -> float | None:
    found = re.match(metric.pattern, line)
    if not found:
        return None
    try:
        return float(found[1])
    except (TypeError, ValueError, IndexError):
        verdict.unreadable.append(f"{metric.name}: {line.strip()[:80]!r}")
        return None


def quality_section(accuracy: dict[str, Any], metrics: list[Metric], model: str, build: Build) -> dict[str, Any] | None:
    """metrics.quality: every metric the rules name that accuracy.txt states (the checker's names, the
    headline first), its bounds in build.targets, and the checker's verdict (null when one is missing).
    None when the file states none of them (flagged): the run is imported either way."""
    verdict = judge(accuracy["lines"], metrics)
    _warn(accuracy, verdict, metrics, model, build)
    if not verdict.values:
        return None
    build.targets.update({m.name: {"min": m.min, "max": m.max} for m in metrics})
    if accuracy.get("hash"):
        build.unparsed["accuracy.hash"] = accuracy["hash"]
    head = metrics[0]
    values = {m.name: verdict.values[m.name] for m in metrics if m.name in verdict.values}
    return {
        "metric": head.name,
        "value": values.get(head.name),
        "target_ratio": head.ratio,
        "reference_value": head.reference,
        "reference_precision": None,  # the checker's tables do not state the reference's precision
        "passed": verdict.passed(metrics),
        "values": values,
    }


def _warn(accuracy: dict[str, Any], verdict: Verdict, metrics: list[Metric], model: str, build: Build) -> None:
    for metric in metrics:
        if metric.required and metric.name not in verdict.values:
            build.warnings.append(
                f"accuracy.txt has no {metric.name} value for {model} (pattern {metric.pattern!r}): "
                "the accuracy verdict is left null"
            )
    build.warnings.extend(f"accuracy.txt value not a number: {text}" for text in verdict.unreadable)
    if not accuracy.get("hash"):
        build.warnings.append("accuracy.txt has no hash= line (MLPerf's checker requires one)")
    if accuracy.get("normalised"):
        build.warnings.append(
            f"accuracy.txt: {accuracy['normalised']} line(s) read after removing numpy reprs or a (Passed) suffix"
        )
