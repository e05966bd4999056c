"""Change detection against known truth: seeded series of runs, unchanged or with an injected shift.

Each simulated run has a run effect (between-run variation, log-normal, or Student t₃ for heavy tails) and
REPS repetitions with within-run noise; its value for the series goes through the product's own code
(`statistics.from_values` builds the run's Estimate from its per-repetition values, `changepoints.run_value`
and `changepoints.scan`). The stated false-alarm rate (ALPHA per new run) is asserted on unchanged series;
injected shifts are detected with the power printed (`python -m tests.protocol.test_changepoints`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocol import changepoints as cp
from protocol import statistics as st

SERIES = 400
RUNS = 60
REPS = 3
SHIFT_AT = 30
BETWEEN, WITHIN = 0.05, 0.05  # log sds: run to run, and of one repetition's value within a run

BASE = st.Estimate(
    metric="throughput",
    value=None,
    unit="samples/s",
    lower_is_better=False,
    method="",
    interval_method="none",
    n=1,
    source="raw samples",
)


def _run_values(rng: np.random.Generator, shifts: np.ndarray, heavy: bool = False) -> list[float | None]:
    """One series: per run, REPS repetition values around 1000·shift, through the product's estimate."""
    runs = len(shifts)
    effect = (rng.standard_t(3, runs) * BETWEEN / math.sqrt(3)) if heavy else rng.normal(0, BETWEEN, runs)
    reps = 1000.0 * shifts[:, None] * np.exp(effect[:, None] + rng.normal(0, WITHIN, (runs, REPS)))
    return [cp.run_value(st.from_values(BASE, list(r), "per-repetition values")) for r in reps]


def false_alarm_rate(seed: int, heavy: bool = False, series: int = SERIES) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    alarms = tests = 0
    for _ in range(series):
        verdicts = cp.scan(_run_values(rng, np.ones(RUNS), heavy))
        alarms += sum(1 for v in verdicts if v.changed)
        tests += sum(1 for v in verdicts if v.changed is not None)
    return alarms / tests, tests


def power(seed: int, factor: float, series: int = 200, within: int = 1) -> float:
    """Share of series in which a shift by `factor` at run SHIFT_AT is flagged within `within` runs of it."""
    rng = np.random.default_rng(seed)
    shifts = np.where(np.arange(RUNS) >= SHIFT_AT, factor, 1.0)
    hit = 0
    for _ in range(series):
        points = cp.change_points(_run_values(rng, shifts)[: SHIFT_AT + within])
        hit += any(p >= SHIFT_AT for p in points)
    return hit / series


def coverage(seed: int, factor: float, series: int = 300) -> float:
    """How often the change's 95% interval covers the true factor, at the first shifted run."""
    rng = np.random.default_rng(seed)
    shifts = np.where(np.arange(SHIFT_AT + 1) >= SHIFT_AT, factor, 1.0)
    covered = 0
    for _ in range(series):
        values = _run_values(rng, shifts)
        change = cp.prediction_test([v for v in values[SHIFT_AT - cp.WINDOW : SHIFT_AT] if v], values[SHIFT_AT] or 0)
        assert change.ci_low is not None and change.ci_high is not None
        covered += change.ci_low <= factor <= change.ci_high
    return covered / series


@pytest.mark.slow
def test_unchanged_series_false_alarms_stay_within_the_stated_rate() -> None:
    rate, tests = false_alarm_rate(seed=19)
    # 400 series x 55 verdicts = 22,000 tests: the standard error of a 0.1% rate is 0.02 points.
    assert tests > 20_000
    assert rate <= cp.ALPHA + 3 * math.sqrt(cp.ALPHA / tests), rate


@pytest.mark.slow
def test_injected_shifts_are_detected() -> None:
    assert power(seed=7, factor=0.5) >= 0.99  # throughput halved: always caught, at the run itself
    assert power(seed=8, factor=1.5) >= 0.99
    assert power(seed=9, factor=0.8, within=3) >= 0.4  # 20% at 7% run-level noise: about half the time
    assert power(seed=10, factor=0.98, within=1) <= 0.01  # under the 3% floor: never called a change


@pytest.mark.slow
def test_the_change_interval_is_calibrated() -> None:
    assert 0.92 <= coverage(seed=11, factor=0.8) <= 0.98  # 300 draws: standard error 1.3 points


def test_no_verdict_without_enough_history() -> None:
    change = cp.prediction_test([100.0] * (cp.MIN_HISTORY - 1), 50.0)
    assert change.changed is None and change.evidence and str(cp.MIN_HISTORY) in change.evidence
    assert cp.prediction_test([100, 101, 99, 100, 102], -1.0).changed is None


def test_a_halving_is_a_worse_change_and_resets_the_reference() -> None:
    values = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 50.0, 50.5, 49.8]
    verdicts = cp.scan(values)
    assert [i for i, v in enumerate(verdicts) if v.changed] == [6]
    six = verdicts[6]
    assert six.direction == "worse" and six.ratio is not None and 0.49 < six.ratio < 0.51
    assert six.ci_low is not None and six.ci_high is not None and six.ci_low < six.ratio < six.ci_high
    assert verdicts[7].changed is None and verdicts[7].reference == 1  # after a change the reference restarts
    latency = cp.scan([10.0, 10.1, 9.9, 10.05, 9.95, 10.0, 5.0], lower_is_better=True)
    assert latency[-1].changed and latency[-1].direction == "better"


if __name__ == "__main__":
    print(f"method: {cp.METHOD}")
    for heavy in (False, True):
        rate, tests = false_alarm_rate(19, heavy)
        print(f"unchanged, {'t3' if heavy else 'log-normal'} run effects: false alarms {rate:.4%} of {tests} runs")
    for factor in (0.5, 0.8, 0.9, 0.95, 1.1, 1.5):
        at, soon = power(7, factor), power(7, factor, within=3)
        print(f"shift x{factor}: power at the run {at:.3f}, within 3 runs {soon:.3f}")
    print(f"interval coverage at x0.8: {coverage(11, 0.8):.3f}")


def test_a_ratio_no_double_holds_is_no_verdict_and_stays_out_of_the_reference() -> None:
    """Runs near 1300 with 1e308 and the largest double among them: the interval's upper end, exp(log ratio + half
    width), overflowed (OverflowError: a 500 on every history page of the configuration)."""
    verdicts = cp.scan([1300.0, 1310.0, 1320.0, 1e308, 1.7976931348623157e308, 1e300, 5e-324, 1305.0])
    unrepresentable = [i for i, v in enumerate(verdicts) if v.evidence == cp.UNREPRESENTABLE]
    assert unrepresentable == [5, 7]
    for i in unrepresentable:
        assert verdicts[i].changed is None and verdicts[i].ratio is None
        assert verdicts[i].as_dict()["evidence"] == cp.UNREPRESENTABLE
    assert verdicts[7].reference == 6  # 1e300 (no verdict) stayed out of the reference
