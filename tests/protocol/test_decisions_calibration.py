"""Calibration of what a decision claims, on simulated runs whose truth is known.

A configuration's true p99 TTFT and true sustainable rate are fixed; each simulated run measures them with
log-normal run-to-run variation (sigma 5-20%, as between MLPerf-style repetitions). The product's own
functions (`protocol.decisions.interval`, `objective_verdict`, `systems_needed`) then decide. "meets" when the
truth misses the objective (and "misses" when it meets) must stay at or under the 2.5% a one-sided end of a
95% interval allows, with a margin of 1 point for simulation error (2000 draws: standard error 0.35 points);
the interval on the number of systems must contain the true number at least 93% of the time. Seeded.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocol import decisions as dec

SIMULATIONS = 2000
OBJECTIVE_MS = 2000.0


def _verdicts(true_p99: float, runs: int, sigma: float, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    draws = true_p99 * rng.lognormal(0.0, sigma, (SIMULATIONS, runs))
    return [dec.objective_verdict(dec.interval(list(row)), OBJECTIVE_MS) for row in draws]


@pytest.mark.slow
@pytest.mark.parametrize("runs", [3, 5, 10])
@pytest.mark.parametrize("sigma", [0.05, 0.2])
def test_meets_is_rarely_said_of_a_system_that_truly_misses(runs: int, sigma: float) -> None:
    # The truth is the geometric mean over runs (docs/statistics.md); just over and just under the objective.
    over = _verdicts(OBJECTIVE_MS * 1.01, runs, sigma, seed=runs * 100 + int(sigma * 100))
    under = _verdicts(OBJECTIVE_MS * 0.99, runs, sigma, seed=runs * 1000 + int(sigma * 100))
    assert over.count("meets") / SIMULATIONS <= 0.035
    assert under.count("misses") / SIMULATIONS <= 0.035
    clear = _verdicts(OBJECTIVE_MS * math.exp(-6 * sigma), runs, sigma, seed=runs + int(sigma * 100))
    assert clear.count("meets") / SIMULATIONS >= 0.5  # the claim is not so timid it never says anything


@pytest.mark.slow
@pytest.mark.parametrize("runs", [3, 5, 10])
def test_the_interval_on_systems_contains_the_true_number_at_least_93_percent(runs: int) -> None:
    rng = np.random.default_rng(7 + runs)
    true_rate, demand = 1234.0, 20000.0
    truth = math.ceil(demand / true_rate)
    hits = 0
    for row in true_rate * rng.lognormal(0.0, 0.1, (SIMULATIONS, runs)):
        systems = dec.systems_needed(demand, 0.0, dec.interval(list(row)))
        hits += systems["ci_low"] <= truth <= systems["ci_high"]
    assert hits / SIMULATIONS >= 0.93


def test_two_runs_never_give_a_verdict() -> None:
    assert set(_verdicts(OBJECTIVE_MS * 0.5, 2, 0.1, seed=1)) == {"not-enough-evidence"}
