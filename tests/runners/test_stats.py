"""Percentiles, distributions and the steady-state detector, on known and injected series."""

from __future__ import annotations

import numpy as np
import pytest

from protocol import rules
from runners import stats
from runners.measure import Policy, measure, warm_up


def stable_series(n: int = 2000, seed: int = 0) -> np.ndarray:
    return 10.0 * np.random.default_rng(seed).lognormal(0.0, 0.03, n)


def test_percentiles_agree_with_numpy_nearest_rank_on_known_data() -> None:
    data = np.arange(1, 101, dtype=float)  # 1 .. 100: nearest-rank p90 is exactly 90
    assert stats.percentile(data, 90) == 90.0
    assert stats.percentile(data, 50) == 50.0
    rng = np.random.default_rng(7).exponential(3.0, 5000)
    for q in (50, 90, 95, 99, 99.9):
        assert stats.percentile(rng, q) == pytest.approx(np.percentile(rng, q, method="inverted_cdf"))


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
    policy = Policy(repetitions=2, min_seconds=0.5, min_iterations=500, max_iterations=2000, warmup_max_seconds=5.0,
                    warmup_block_seconds=0.2)
    warm = warm_up(timed, policy)  # type: ignore[arg-type]
    assert warm.settled and warm.iterations >= 150
    window = measure(timed, policy)  # type: ignore[arg-type]
    assert stats.assess(window.samples).reached


def test_warm_up_is_capped_and_flagged_when_it_never_settles() -> None:
    drifting = 10.0 * np.exp(np.arange(50000) / 200.0)  # 35 % slower every three blocks, forever
    policy = Policy(repetitions=1, min_seconds=1.0, min_iterations=10, warmup_max_seconds=5.0,
                    warmup_max_iterations=3000, warmup_block_seconds=0.2)
    warm = warm_up(_series(drifting), policy)  # type: ignore[arg-type]
    assert not warm.settled and warm.iterations == 3000
    assert warm.reasons(policy) and "capped" in warm.reasons(policy)[0]
