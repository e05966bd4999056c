"""subject ÷ baseline between two estimates, with Welch's t interval and the verdict it supports."""

from __future__ import annotations

from dataclasses import dataclass

from .estimates import Estimate
from .intervals import CONFIDENCE, log_ratio_interval


@dataclass(frozen=True)
class Ratio:
    """subject ÷ baseline with its interval. `distinguishable` is None when no interval could be formed.

    `evidence` is None when the interval is calibrated, else why there is no verdict.
    """

    value: float | None
    ci_low: float | None
    ci_high: float | None
    distinguishable: bool | None
    outcome: str  # "better", "worse", "indistinguishable" (from noise) or "unknown"
    method: str
    confidence: float | None = None
    evidence: str | None = None


def ratio(subject: Estimate, baseline: Estimate, *, confidence: float = CONFIDENCE) -> Ratio:
    """subject ÷ baseline, with Welch's t interval on the logs of both arms' independent values.

    `distinguishable` is True when the interval excludes 1.0; None, with the reason in `evidence`, when an
    arm has too little evidence. Better/worse follow the metric's direction (lower-is-better: below 1).
    """
    if subject.value is None or baseline.value is None or baseline.value <= 0:
        missing = "a headline value is missing or zero"
        return Ratio(None, None, None, None, "unknown", f"no ratio: {missing}", evidence=missing)
    value = subject.value / baseline.value
    why = "; ".join(
        f"{who}: {e.evidence}" for who, e in (("subject", subject), ("baseline", baseline)) if e.evidence is not None
    )
    if why or subject.values is None or baseline.values is None:
        method = "ratio of point values; no interval: not enough evidence"
        return Ratio(value, None, None, None, "unknown", method, evidence=why or "no independent values")
    point, low, high = (float(v) for v in log_ratio_interval(subject.values, baseline.values, confidence))
    distinguishable = low > 1.0 or high < 1.0
    improved = point < 1.0 if subject.lower_is_better else point > 1.0
    outcome = ("better" if improved else "worse") if distinguishable else "indistinguishable"
    method = (
        f"Welch t interval on the difference of mean logs ({len(subject.values)} and "
        f"{len(baseline.values)} independent values), {confidence:.4g} confidence"
    )
    return Ratio(point, low, high, distinguishable, outcome, method, confidence)
