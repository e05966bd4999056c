"""Percentiles, distributions and the steady-state detector, on known and injected series."""

from __future__ import annotations

import numpy as np
import pytest

from protocol import rules
from protocol.percentiles import NUMPY_METHOD, quantile
from runners import stats
from runners.measure import Policy, measure, warm_up

NEAREST_RANK = NUMPY_METHOD[stats.PERCENTILE_METHOD]  # the runners' percentile method, by numpy's name


def stable_series(n: int = 2000, seed: int = 0) -> np.ndarray:
    return 10.0 * np.random.default_rng(seed).lognormal(0.0, 0.03, n)


def test_percentiles_agree_with_numpy_nearest_rank_on_known_data() -> None:
    data = np.arange(1, 101, dtype=float)  # 1 .. 100: nearest-rank p90 is exactly 90
    assert float(quantile(data, 0.90, NEAREST_RANK)) == 90.0
    assert float(quantile(data, 0.50, NEAREST_RANK)) == 50.0
    rng = np.random.default_rng(7).exponential(3.0, 5000)
    for q in (50, 90, 95, 99, 99.9):
        assert float(quantile(rng, q / 100, NEAREST_RANK)) == pytest.approx(
            np.percentile(rng, q, method="inverted_cdf")
        )


def test_distribution_omits_percentiles_below_the_protocol_sample_counts() -> None:
    for count in (10, 64, 130, 661, 662):
        dist = stats.distribution(np.linspace(1.0, 2.0, count))
        for key, minimum in rules.MIN_SAMPLES_FOR_PERCENTILE.items():
            assert (key in dist) == (count >= minimum), (count, key)
        assert dist["count"] == count and dist["method"] == "nearest-rank"
        assert dist["min"] <= dist["p50"] <= dist["max"] and dist["min"] <= dist["mean"] <= dist["max"]


def test_it_passes_a_stable_series() -> None:
    verdict = stats.assess(stable_series())
    assert verdict.reached, verdict.reasons
    assert verdict.block_spread is not None and verdict.block_spread < 0.05


def test_it_flags_an_injected_warm_up_spike() -> None:
    series = stable_series()
    series[:200] *= 3.0  # the first tenth runs three times slower: a warm-up passed off as steady state
    verdict = stats.assess(series)
    assert not verdict.reached
    assert any("block medians disagree" in r for r in verdict.reasons)


def test_it_flags_an_injected_drift() -> None:
    series = stable_series() * np.linspace(1.0, 1.2, 2000)  # 20 % slower by the end: thermal throttling
    verdict = stats.assess(series)
    assert not verdict.reached
    assert any(r.startswith("drift") for r in verdict.reasons)
    assert verdict.trend_statistic is not None and verdict.trend_statistic > 2.5


def test_it_refuses_to_judge_too_few_samples() -> None:
    verdict = stats.assess([1.0] * 8)
    assert not verdict.reached and "too few samples" in verdict.reasons[0]


def _series(values: np.ndarray) -> object:
    it = iter(values.tolist())
    return lambda: next(it)


def test_warm_up_ends_after_a_transient_and_the_window_starts_steady() -> None:
    # 300 slow iterations decaying to a stable level, then stable: warm-up must swallow the transient.
    transient = 10.0 * (1.0 + 2.0 * np.exp(-np.arange(300) / 40.0))
    timed = _series(np.concatenate([transient, stable_series(20000)]))
    policy = Policy(
        repetitions=2,
        min_seconds=0.5,
        min_iterations=500,
        max_iterations=2000,
        warmup_max_seconds=5.0,
        warmup_block_seconds=0.2,
    )
    warm = warm_up(timed, policy)  # type: ignore[arg-type]
    assert warm.settled and warm.iterations >= 150
    window = measure(timed, policy)  # type: ignore[arg-type]
    assert stats.assess(window.samples).reached


def test_warm_up_is_capped_and_flagged_when_it_never_settles() -> None:
    drifting = 10.0 * np.exp(np.arange(50000) / 200.0)  # 35 % slower every three blocks, forever
    policy = Policy(
        repetitions=1,
        min_seconds=1.0,
        min_iterations=10,
        warmup_max_seconds=5.0,
        warmup_max_iterations=3000,
        warmup_block_seconds=0.2,
    )
    warm = warm_up(_series(drifting), policy)  # type: ignore[arg-type]
    assert not warm.settled and warm.iterations == 3000
    assert warm.reasons(policy) and "capped" in warm.reasons(policy)[0]


# ------------------------------------------------------------------- detection rates on seeded series
# 200 series per case: a rate's standard error is at most 1.5 points (1.5 at 95%, 1.5 at 5%).
SERIES = 200


def _rate(make: object, n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    verdicts = [stats.assess(make(rng, n)) for _ in range(SERIES)]  # type: ignore[operator]
    return sum(not v.reached for v in verdicts) / SERIES


def _slow_path(rng: np.random.Generator, n: int) -> np.ndarray:
    # 20% of iterations, scattered at random, take 3× as long: a stationary but bimodal series.
    return 10.0 * rng.lognormal(0.0, 0.2, n) * np.where(rng.random(n) < 0.2, 3.0, 1.0)


def _stationary_noise(rng: np.random.Generator, n: int) -> np.ndarray:
    return 10.0 * rng.lognormal(0.0, 0.2, n)


@pytest.mark.parametrize("n", [200, 2000])
def test_an_intermittent_slow_path_is_detected_in_at_least_95_percent_of_series_and_named(n: int) -> None:
    assert _rate(_slow_path, n, seed=n) >= 0.95
    verdict = stats.assess(_slow_path(np.random.default_rng(1), n))
    assert any(
        r.startswith("slow path: ") and "of iterations took more than 2× the median" in r for r in verdict.reasons
    ), verdict.reasons


@pytest.mark.parametrize("n", [200, 2000])
def test_stationary_lognormal_noise_is_called_unsteady_in_at_most_5_percent_of_series(n: int) -> None:
    assert _rate(_stationary_noise, n, seed=n + 1) <= 0.05


def test_server_latency_queueing_tails_are_not_called_a_slow_path() -> None:
    from runners.inference import SERVER_CRITERIA

    queueing = np.random.default_rng(3).exponential(20.0, 3000)  # M/M/1-like: P(x > 2 × median) = 25%
    assert not any(r.startswith("slow path") for r in stats.assess(queueing, SERVER_CRITERIA).reasons)
