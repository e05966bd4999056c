"""Change detection on a series of runs of one configuration: has the newest run's headline moved?

Method (docs/statistics.md, "Series and change points"), built on protocol/statistics/:
- Each run contributes ONE value: the log of its headline estimate, i.e. the mean of the logs of its
  per-repetition values (`Estimate.values`), or the log of its reported value when it has none. Runs, not
  repetitions, are the unit: run-to-run variation (placement, clocks, a neighbour) is exactly the noise a
  change must exceed, and repetitions inside one run do not show it.
- The *reference* of a new run is the runs since the series' last change point, at most WINDOW of them.
  With fewer than MIN_HISTORY runs there is no verdict (as with MIN_VALUES in comparisons).
- Test: a Student t *prediction* test. With reference log values x₁…xₙ (mean x̄, sd s) and the new run's y,
  t = (y − x̄) / (s·√(1 + 1/n)) has a t distribution with n − 1 degrees of freedom when nothing changed and
  run effects are log-normal. The run is a change point when |t| exceeds the two-sided 1 − ALPHA quantile
  AND the change is at least MIN_RELATIVE_CHANGE in size (a floor for series with almost no noise).
- Stated false-alarm rate: at most ALPHA (0.1%) per new run of an unchanged series; checked by the seeded
  simulation in tests/protocol/test_changepoints.py, which also reports the power for injected shifts.
- The size of a change is new ÷ reference geometric mean with a 95% interval for the shift:
  exp((y − x̄) ± t₀.₉₇₅,ₙ₋₁ · s · √(1 + 1/n)).
- A series is scanned in order with the same test, so the change points the history page marks are exactly
  the runs that raised (or would have raised) an alert; after a change point the reference starts anew.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .canonical import digest
from .comparability import controlled_projection
from .statistics import CONFIDENCE, Estimate, geometric_mean, t_quantile

ALPHA = 0.001  # false alarms per new run of an unchanged series, at most
MIN_HISTORY = 5  # reference runs needed before a run can be called a change
WINDOW = 20  # most recent reference runs used
MIN_RELATIVE_CHANGE = 0.03  # a change smaller than 3% is never called one, however quiet the series

METHOD = (
    f"Student t prediction test on the log of each run's headline (the mean log of its per-repetition "
    f"values): the newest run against the runs since the last change point (at least {MIN_HISTORY}, the "
    f"latest {WINDOW}); a change point when two-sided p < {ALPHA} and the change is at least "
    f"{MIN_RELATIVE_CHANGE:.0%}; false-alarm rate at most {ALPHA:.1%} per run of an unchanged series "
    f"(seeded simulation)"
)


@dataclass(frozen=True)
class Change:
    """The verdict on one new run against its reference runs.

    `ratio` is new ÷ reference (geometric means), `ci_low`/`ci_high` its 95% interval; `changed` is None
    when there is no verdict (too little history, or a value that is not positive), with the reason in
    `evidence`. `direction` says "better", "worse" or "none" given the headline's direction.
    """

    changed: bool | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    reference: int  # reference runs used
    evidence: str | None
    direction: str = "none"

    def as_dict(self) -> dict[str, object]:
        return {
            "changed": self.changed,
            "ratio": _r(self.ratio),
            "ci_low": _r(self.ci_low),
            "ci_high": _r(self.ci_high),
            "p_value": _r(self.p_value),
            "reference_runs": self.reference,
            "evidence": self.evidence,
            "direction": self.direction,
            "confidence": CONFIDENCE,
            "method": METHOD,
        }


def _r(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.6g}")


def series_key(doc: Mapping[str, Any]) -> str:
    """What makes two runs the same configuration for a series: the controlled fields on the software axis
    (software may move), without the run's conditions (whether steady state was reached is an outcome of the
    run, not part of its configuration)."""
    fields = {k: v for k, v in controlled_projection(doc, "software").items() if not k.startswith("/conditions/")}
    return digest({"series": 1, "controlled": fields})


def run_value(estimate: Estimate) -> float | None:
    """One run's value for the series: its headline estimate's geometric mean (None when not positive)."""
    if estimate.values is not None and len(estimate.values) and bool(np.all(estimate.values > 0)):
        return geometric_mean(estimate.values)
    if estimate.value is not None and estimate.value > 0 and math.isfinite(estimate.value):
        return float(estimate.value)
    return None


def prediction_test(
    reference: Sequence[float], new: float, *, lower_is_better: bool = False, alpha: float = ALPHA
) -> Change:
    """Is `new` a change against `reference` (positive run values, oldest first)? See the module doc."""
    ref = [float(v) for v in reference[-WINDOW:]]
    if not new > 0 or not all(v > 0 for v in ref):
        return Change(None, None, None, None, None, len(ref), "a value is zero or negative")
    if len(ref) < MIN_HISTORY:
        why = f"{len(ref)} reference run{'s' if len(ref) != 1 else ''}; a verdict needs {MIN_HISTORY}"
        return Change(None, None, None, None, None, len(ref), why)
    logs = np.log(np.asarray(ref, dtype=np.float64))
    n = len(logs)
    delta, half, p = _log_prediction(logs, new)
    changed = p < alpha and abs(math.expm1(delta)) >= MIN_RELATIVE_CHANGE
    direction = "none"
    if changed:
        direction = "better" if (delta < 0) == lower_is_better else "worse"
    bounds = [_exp(delta), _exp(delta - half), _exp(delta + half)]
    if not all(math.isfinite(b) for b in bounds) or not math.isfinite(p):
        return Change(None, None, None, None, None, n, UNREPRESENTABLE)
    return Change(changed, bounds[0], bounds[1], bounds[2], p, n, None, direction)


def _log_prediction(logs: np.ndarray, new: float) -> tuple[float, float, float]:
    """(log of new ÷ the reference's geometric mean, the prediction interval's half width, two-sided p)."""
    from scipy import stats as sps  # on first use: importing scipy.stats costs ~1 s of every process's start

    n = len(logs)
    delta = math.log(new) - float(logs.mean())
    scale = float(logs.std(ddof=1)) * math.sqrt(1.0 + 1.0 / n)
    half = t_quantile(n - 1) * scale
    quiet = 0.0 if delta != 0 else 1.0  # no noise at all: any difference is beyond it
    p = float(2 * sps.t.sf(abs(delta) / scale, n - 1)) if scale > 0 else quiet
    return delta, half, p


UNREPRESENTABLE = "the run's ratio to its reference runs is beyond any number a double holds"


def _exp(x: float) -> float:
    """e**x, or infinity where it overflows (a run of 1e308 against runs near 1e3: the caller says why)."""
    return math.exp(x) if x < _LOG_MAX else math.inf


_LOG_MAX = math.log(sys.float_info.max)


def scan(values: Sequence[float | None], *, lower_is_better: bool = False, alpha: float = ALPHA) -> list[Change]:
    """The verdict on every run of a series in order (oldest first), each against the runs before it since
    the last change point. A run with no usable value gets a no-verdict Change and is left out of references.
    """
    out: list[Change] = []
    reference: list[float] = []
    for value in values:
        if value is None or not value > 0:
            out.append(Change(None, None, None, None, None, len(reference), "the run has no positive headline"))
            continue
        verdict = prediction_test(reference, value, lower_is_better=lower_is_better, alpha=alpha)
        out.append(verdict)
        if verdict.evidence == UNREPRESENTABLE:
            continue  # kept out of the reference: it would make every later verdict unrepresentable too
        reference = [value] if verdict.changed else [*reference, value][-WINDOW:]
    return out


def change_points(values: Sequence[float | None], *, lower_is_better: bool = False) -> list[int]:
    """Indices of the runs that are change points."""
    return [i for i, c in enumerate(scan(values, lower_is_better=lower_is_better)) if c.changed]
