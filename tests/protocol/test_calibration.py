"""Calibration against known truth: every interval and verdict the comparisons print, on simulated runs.

Each scenario is a configuration whose runs we can draw as often as we like: a run effect (between-run
variation, in logs) and within-run samples (noise, drift, heavy tails, an intermittent slow path). The truth
of a statistic (docs/statistics.md) is its population value for the configuration: the geometric mean, over
all repetitions the configuration could produce, of the statistic of one repetition. We estimate it from
TRUTH_REPETITIONS fresh repetitions (its own error is under 1% of the narrowest interval's half-width).

Every cell runs SIMULATIONS simulated comparisons through the product's own functions
(`repetition_statistic`, `throughput_per_repetition`, `log_t_interval`, `log_ratio_interval`); with 2000 the
standard error of a 95% coverage is 0.49 percentage points, so the 93-97% band is about ±4 standard errors.
Everything is seeded: the same numbers every run (`python -m tests.protocol.test_calibration` prints them).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from protocol import comparability as cmp
from protocol import statistics as st

Array = np.ndarray
SIMULATIONS = 2000
TRUTH_REPETITIONS = 20_000
REPETITIONS = (3, 5, 10)
BATCH = 32
SAMPLES = {"p50": 300, "throughput": 300, "p99": 700}  # p99 per repetition needs 662 samples (docs/protocol.md)
EXAMPLES = Path(__file__).resolve().parents[2] / "protocol" / "examples"


@dataclass(frozen=True)
class Scenario:
    """One configuration's run-to-run and within-run behaviour, in logs of a 10 ms base time."""

    name: str
    run_effect: Callable[[np.random.Generator, tuple[int, ...]], Array]  # log offset per repetition
    within: Callable[[np.random.Generator, tuple[int, ...]], Array]  # multiplicative sample noise (..., n)


def _lognormal(sigma: float) -> Callable[[np.random.Generator, tuple[int, ...]], Array]:
    return lambda rng, shape: rng.lognormal(0.0, sigma, shape)


def _drift(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    # Every repetition slows down 10% from its first to its last sample (e.g. heating), plus noise.
    ramp = np.linspace(1.0, 1.1, shape[-1])
    return rng.lognormal(0.0, 0.2, shape) * ramp


def _heavy(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    # Pareto (alpha 2.5) stalls on top of lognormal noise: a tail much heavier than the body.
    return rng.lognormal(0.0, 0.15, shape) * (1.0 + 0.3 * rng.pareto(2.5, shape))


def _slow_path(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    # Bimodal: an intermittent slow path (3×) whose share differs between repetitions (mean 20%).
    share = rng.beta(4.0, 16.0, shape[:-1])[..., None]
    slow = rng.random(shape) < share
    return rng.lognormal(0.0, 0.1, shape) * np.where(slow, 3.0, 1.0)


HEAVY_RUN_EFFECTS = Scenario("heavy-tailed run effects (t3)", lambda rng, s: 0.05 * rng.standard_t(3, s), _heavy)
SCENARIOS = [
    Scenario("between-run sd = within-run sd", lambda rng, s: rng.normal(0.0, 0.2, s), _lognormal(0.2)),
    Scenario("drift within repetitions", lambda rng, s: rng.normal(0.0, 0.1, s), _drift),
    Scenario("heavy tails (Pareto stalls within runs)", lambda rng, s: rng.normal(0.0, 0.1, s), _heavy),
    Scenario("bimodal (intermittent 3x slow path)", lambda rng, s: rng.normal(0.0, 0.05, s), _slow_path),
]
STATISTICS = ("p50", "throughput", "p99")


def draw(scenario: Scenario, stat: str, rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Per-repetition values of `stat`, shape `shape` (e.g. simulations × repetitions), via the product's code."""
    n = SAMPLES[stat]
    times = 10.0 * np.exp(scenario.run_effect(rng, shape))[..., None] * scenario.within(rng, (*shape, n))
    if stat == "throughput":
        return st.throughput_per_repetition(times, BATCH)
    return st.repetition_statistic(times, stat, st.NUMPY_METHOD["nearest-rank"])


@cache
def truth(index: int, stat: str) -> float:
    """The configuration's population value: geometric mean of the statistic over its repetitions."""
    rng = np.random.default_rng([99, index, STATISTICS.index(stat)])
    logs = [np.log(draw(SCENARIOS[index], stat, rng, (5000,))) for _ in range(TRUTH_REPETITIONS // 5000)]
    return float(np.exp(np.mean(np.concatenate(logs))))


@cache
def values(index: int, stat: str, arm: int = 0) -> Array:
    """SIMULATIONS × 10 per-repetition values; a cell with k repetitions uses the first k."""
    return draw(
        SCENARIOS[index],
        stat,
        np.random.default_rng([7, index, STATISTICS.index(stat), arm]),
        (SIMULATIONS, max(REPETITIONS)),
    )


def coverage(index: int, stat: str, k: int) -> float:
    _, low, high = st.log_t_interval(values(index, stat)[:, :k])
    true = truth(index, stat)
    return float(np.mean((low <= true) & (true <= high)))


def false_distinguishable(index: int, stat: str, k: int) -> float:
    _, low, high = st.log_ratio_interval(values(index, stat, 1)[:, :k], values(index, stat, 0)[:, :k])
    return float(np.mean((low > 1.0) | (high < 1.0)))


def ratio_coverage(index: int, stat: str, k: int, true_ratio: float = 1.2) -> float:
    # Every statistic here scales with the times: arm 1 is the same configuration 1.2× faster or slower.
    scale = true_ratio if stat == "throughput" else 1.0 / true_ratio
    _, low, high = st.log_ratio_interval(values(index, stat, 1)[:, :k] * scale, values(index, stat, 0)[:, :k])
    expected = true_ratio if stat == "throughput" else 1.0 / true_ratio
    return float(np.mean((low <= expected) & (expected <= high)))


CELLS = [(stat, k) for stat in STATISTICS for k in REPETITIONS]
SE = math.sqrt(0.05 * 0.95 / SIMULATIONS)  # standard error of a rate near 95% (or 5%): 0.49 points
FALSE_ALARM_TOLERANCE = 0.05 + 2.33 * SE  # one cell: consistent with <= 5% (one-sided binomial, 1% level)
# Welch's interval at 3 against 3 repetitions is conservative by construction (its estimated degrees of
# freedom never exceed the true 4): ratio coverage sits near 96.5%, so it is allowed one standard error
# above 97%. Estimates are held to 93-97% exactly.
RATIO_BAND = (0.93 - SE, 0.97 + SE)


def figures(index: int) -> dict[tuple[str, int], tuple[float, float, float]]:
    """(coverage, ratio coverage, false-distinguishable rate) per (statistic, repetitions) of a scenario."""
    return {
        (stat, k): (coverage(index, stat, k), ratio_coverage(index, stat, k), false_distinguishable(index, stat, k))
        for stat, k in CELLS
    }


# One test per scenario: its cells share the simulated runs, and parallel workers then split scenarios.
@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(SCENARIOS)), ids=[s.name for s in SCENARIOS])
def test_intervals_cover_the_truth_93_to_97_percent_and_equal_configurations_are_rarely_distinguished(
    index: int,
) -> None:
    found = figures(index)
    off = {
        cell: f for cell, f in found.items() if not (0.93 <= f[0] <= 0.97 and RATIO_BAND[0] <= f[1] <= RATIO_BAND[1])
    }
    assert not off, f"coverage outside 93-97% (estimate, ratio) in {off}"
    alarms = {cell: f[2] for cell, f in found.items() if f[2] > FALSE_ALARM_TOLERANCE}
    assert not alarms, f"equal configurations called distinguishable too often: {alarms}"
    pooled = float(np.mean([f[2] for f in found.values()]))  # 18,000 comparisons: SE 0.16 points
    assert pooled <= 0.05


def test_the_product_computes_a_runs_interval_exactly_as_the_simulation_does() -> None:
    # The suite exercises the vectorised core; a document through headline_estimate gives the same numbers.
    rng = np.random.default_rng(11)
    scenario = SCENARIOS[0]
    reps = 10.0 * np.exp(scenario.run_effect(rng, (3,)))[:, None] * scenario.within(rng, (3, 700))
    doc = _latency_doc(reps, "latency_ms.p99")
    est = st.headline_estimate(doc)
    point, low, high = st.log_t_interval(st.repetition_statistic(reps, "p99", "inverted_cdf"))
    assert (est.value, est.ci_low, est.ci_high) == pytest.approx((float(point), float(low), float(high)))


# ------------------------------------------------------------------------- verdicts on whole comparisons


def _latency_doc(reps: Array, primary: str, model: str = "H100 80GB HBM3") -> dict[str, Any]:
    doc = json.loads((EXAMPLES / "inference-server-h100-bf16.json").read_text())
    pooled = np.concatenate(list(reps))
    doc["samples"] = {"latency_ms": {"unit": "ms", "repetitions": [list(map(float, r)) for r in reps]}}
    doc["metrics"]["latency_ms"] = {
        "count": int(pooled.size),
        "method": "nearest-rank",
        "unit": "ms",
        **{
            k: float(np.quantile(pooled, q, method="inverted_cdf"))
            for k, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
        },
    }
    doc["metrics"]["primary"] = primary
    doc["system"]["accelerators"][0]["model"] = model
    return doc


@pytest.mark.slow
def test_the_best_of_three_equal_configurations_is_called_distinguishable_in_at_most_5_percent() -> None:
    # The summary picks the best arm against the baseline: without the Bonferroni adjustment that choice
    # alone would call equal configurations different about 10% of the time.
    rng = np.random.default_rng(12)
    scenario, trials, alarms = SCENARIOS[0], 300, 0
    for _ in range(trials):
        docs = []
        for model in ("A", "B", "C"):
            reps = 10.0 * np.exp(scenario.run_effect(rng, (3,)))[:, None] * scenario.within(rng, (3, 60))
            docs.append(_latency_doc(reps, "latency_ms.p50", model))
        conclusion = cmp.compare(docs)["conclusion"]
        alarms += conclusion["outcome"] == "distinguishable"
    assert alarms / trials <= 0.05


def test_two_summary_only_runs_per_arm_are_not_enough_evidence_never_distinguishable() -> None:
    doc = json.loads((EXAMPLES / "inference-server-h100-bf16.json").read_text())
    runs = []
    for model, value in (("H100", 1000.0), ("H100", 1010.0), ("H200", 8500.0), ("H200", 8510.0)):
        run = copy.deepcopy(doc)
        run["system"]["accelerators"][0]["model"] = model
        run["metrics"]["throughput"]["value"] = value
        runs.append(run)
    result = cmp.compare(runs)
    assert [a["runs"] for a in result["arms"]] == [[0, 1], [2, 3]]
    pair = result["pairwise"][0]
    assert pair["verdict"] == "not-enough-evidence" and pair["distinguishable"] is None
    assert result["conclusion"]["outcome"] == "not-enough-evidence"
    assert result["conclusion"]["statement"].startswith("Not enough evidence: H200: 2 independent values (runs)")


def main() -> None:
    """Print every cell's figures (the table in docs/statistics.md)."""
    print(
        f"{SIMULATIONS} simulated comparisons per cell; SE of a 95% rate "
        f"{math.sqrt(0.95 * 0.05 / SIMULATIONS):.4f}; false-alarm tolerance {FALSE_ALARM_TOLERANCE:.4f}"
    )
    print(f"{'scenario':44} {'stat':10} {'k':>3} {'coverage':>9} {'ratio cov':>9} {'false dist':>10}")
    SCENARIOS.append(HEAVY_RUN_EFFECTS)  # reported, not asserted: see docs/statistics.md
    for index in range(len(SCENARIOS)):
        for (stat, k), (cov, rcov, false) in figures(index).items():
            print(f"{SCENARIOS[index].name:44} {stat:10} {k:3d} {cov:9.3f} {rcov:9.3f} {false:10.3f}")


if __name__ == "__main__":
    main()
