"""What a reader must know before trusting a run's number: its conditions, its validity and the limits of its
statistics, each as a stable code with words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import rules
from ..derivation import derivation_of
from .estimates import Estimate, headline_estimate


@dataclass(frozen=True)
class Caveat:
    """Something a reader must know before trusting a run's number. `code` is stable; `message` is words."""

    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def caveats(doc: dict[str, Any], estimate: Estimate | None = None) -> list[Caveat]:
    """What a reader of this run's number must know: conditions, validity, and limits of the statistics."""
    out = _condition_caveats(doc)
    est = estimate or headline_estimate(doc)
    out.extend(_statistics_caveats(doc, est))
    return out


def _condition_caveats(doc: dict[str, Any]) -> list[Caveat]:
    cond = doc.get("conditions") or {}
    out: list[Caveat] = []
    if (derivation := derivation_of(doc)) is not None:
        message = f"not a measurement: {derivation.words()}; it counts as no independent evidence"
        out.append(Caveat("derived-result", message))
    if (steady := _steady_state_caveat(cond.get("steady_state") or {})) is not None:
        out.append(steady)
    thermal = cond.get("thermal") or {}
    if thermal.get("throttled"):
        why = ", ".join(thermal.get("throttle_reasons") or []) or "reason not recorded"
        out.append(Caveat("thermal-throttling", f"the accelerator throttled during the run ({why})"))
    if cond.get("isolation") == "shared":
        message = "the machine was shared with other work: noisy neighbours may have slowed it"
        out.append(Caveat("shared-machine", message))
    validity = cond.get("validity") or {}
    if validity.get("valid") is False:
        failed = [k for k, ok in (validity.get("checks") or {}).items() if not ok]
        message = "the result failed its validity checks" + (f": {', '.join(failed)}" if failed else "")
        out.append(Caveat("invalid-result", message))
    return out


def _steady_state_caveat(steady: dict[str, Any]) -> Caveat | None:
    if steady.get("reached") is False:
        reasons = "; ".join(steady.get("reasons") or []) or "no reason given"
        return Caveat("steady-state-not-reached", f"steady state was not reached: {reasons}")
    if steady.get("reached") is None:
        return Caveat("steady-state-not-assessed", "whether steady state was reached was not assessed")
    return None


def _statistics_caveats(doc: dict[str, Any], est: Estimate) -> list[Caveat]:
    out: list[Caveat] = []
    name, _, stat = est.metric.partition(".")
    if est.source != "raw samples":
        message = (
            f"no raw samples for {name}: no interval, since one summary value says nothing about run-to-run variation"
        )
        out.append(Caveat("no-raw-samples", message))
    if stat in rules.MIN_SAMPLES_FOR_PERCENTILE and est.value is None:
        message = f"{est.metric} needs at least {rules.MIN_SAMPLES_FOR_PERCENTILE[stat]} samples; this run has {est.n}"
        out.append(Caveat("too-few-samples-for-percentile", message))
    if (tail := _tail_caveat(doc, name)) is not None:
        out.append(tail)
    if est.evidence is not None and est.value is not None and est.source == "raw samples":
        # (a summary-only run is already told: "no raw samples … no interval")
        out.append(Caveat("not-enough-evidence", f"no calibrated interval: {est.evidence}"))
    return out


def _tail_caveat(doc: dict[str, Any], name: str) -> Caveat | None:
    """A distribution metric without its tail percentiles (too few samples to claim them)."""
    dist = (doc.get("metrics") or {}).get(name)
    if name in rules.DISTRIBUTION_METRICS and isinstance(dist, dict):
        missing = [k for k in ("p90", "p95", "p99") if dist.get(k) is None]
        if missing:
            message = f"{name} has no {', '.join(missing)}: {dist.get('count', 0)} samples are too few to claim them"
            return Caveat("tail-percentile-absent", message)
    return None
