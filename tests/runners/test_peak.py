"""The measured attainable peak (runners.telemetry.measured_peak_tflops): best of five runs where a run is quick,
fewer within a one-second budget where it is slow, and the source says how many."""

from __future__ import annotations

import time

from runners import telemetry


def _matmul(seconds: float, calls: list[float]):
    def run() -> None:
        calls.append(seconds)
        time.sleep(seconds)

    return run


def test_a_quick_matmul_is_timed_five_times_after_a_warm_up():
    calls: list[float] = []
    peak, source = telemetry.measured_peak_tflops(_matmul(0.01, calls), 2e9, "1024² bf16 torch.mm")
    assert len(calls) == 1 + telemetry.PEAK_RUNS
    assert source == "measured: best of 5 × 1024² bf16 torch.mm (attainable peak, not a datasheet)"
    assert 0 < peak <= 2e9 / 0.01 / 1e12


def test_a_slow_matmul_stops_at_the_budget_and_says_how_many_runs():
    calls: list[float] = []
    started = time.perf_counter()
    _, source = telemetry.measured_peak_tflops(_matmul(0.4, calls), 2e9, "1024² bf16 torch.mm")
    # warm-up 0.4 s, then timed runs until they took 1 s: 3 (2 where a busy host stretches the sleeps past 0.5 s)
    timed = len(calls) - 1
    assert timed in (2, 3) and source.startswith(f"measured: best of {timed} × "), (calls, source)
    assert time.perf_counter() - started < 0.4 * (1 + telemetry.PEAK_RUNS)  # what five runs and a warm-up took


def test_a_matmul_slower_than_the_budget_counts_its_first_run_and_takes_one_more():
    calls: list[float] = []
    _, source = telemetry.measured_peak_tflops(_matmul(1.05, calls), 2e9, "1024² bf16 torch.mm")
    assert len(calls) == 2 and source.startswith("measured: best of 2 × "), (calls, source)
