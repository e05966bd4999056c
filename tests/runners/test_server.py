"""The server scenario's load generator: target arrival rate, queueing charged to latency."""

from __future__ import annotations

import time

import numpy as np

from runners.server import poisson_arrivals, run_server


def test_poisson_schedule_has_the_target_rate_and_exponential_gaps() -> None:
    arrivals = poisson_arrivals(50.0, 2001, seed=3)
    assert (len(arrivals) - 1) / arrivals[-1] == __import__("pytest").approx(50.0)
    gaps = np.diff(arrivals)
    assert abs(np.std(gaps) / np.mean(gaps) - 1.0) < 0.1  # exponential: coefficient of variation 1


def test_it_achieves_its_target_arrival_rate_within_tolerance() -> None:
    run = run_server(lambda: (None, 0.1), rate=200.0, count=200, concurrency=4, seed=1)
    assert abs(run.arrival_rate / 200.0 - 1.0) < 0.05
    assert run.max_dispatch_lag_ms < 50.0


def test_latency_includes_queueing_when_concurrency_is_saturated() -> None:
    def serve() -> tuple[None, float]:
        start = time.perf_counter()
        time.sleep(0.01)
        return None, (time.perf_counter() - start) * 1e3

    # 10 ms of service at 400 arrivals/s with one worker: requests must queue behind each other.
    run = run_server(serve, rate=400.0, count=40, concurrency=1, seed=2)
    latencies = [r.latency_ms for r in run.requests]
    services = [(r.finished - r.started) * 1e3 for r in run.requests]
    assert max(latencies) > 5 * max(services)
    assert all(lat >= svc for lat, svc in zip(latencies, services, strict=True))


def test_an_overloaded_server_run_completes_slower_than_requests_arrive() -> None:
    def serve() -> tuple[None, float]:
        time.sleep(0.02)
        return None, 20.0

    run = run_server(serve, rate=200.0, count=30, concurrency=1, seed=4)  # capacity ~50 req/s
    assert run.arrival_rate > 150.0 and run.completion_rate < 80.0


# --- the time cap ----------------------------------------------------------------------------------


def _slow() -> tuple[None, float]:
    time.sleep(0.02)
    return None, 20.0


def test_an_overloaded_run_stops_at_its_time_cap_and_says_it_was_truncated() -> None:
    # capacity ~50 req/s against 500 arriving: 2000 requests would take ~40 s; the cap is 1 s
    run = run_server(_slow, rate=500.0, count=2000, concurrency=1, seed=5, max_seconds=1.0)
    assert run.truncated and run.planned == 2000 and 10 <= len(run.requests) < 200
    assert max(r.finished for r in run.requests) - min(r.scheduled for r in run.requests) < 5.0


def test_a_run_inside_its_cap_is_not_truncated() -> None:
    run = run_server(lambda: (None, 0.1), rate=200.0, count=50, concurrency=4, seed=6, max_seconds=30.0)
    assert not run.truncated and len(run.requests) == 50


def test_a_truncated_run_is_kept_with_a_failed_check_and_the_reason() -> None:
    from runners.inference import server_checks
    from runners.spec import RunSpec

    spec = RunSpec(
        phase="inference",
        workload="mlp-classifier",
        precision="fp32",
        scenario="server",
        target_qps=500.0,
        concurrency=1,
        quick=True,
    ).resolved()
    run = run_server(_slow, rate=500.0, count=2000, concurrency=1, seed=7, max_seconds=0.5)
    checks, reasons, note = server_checks([run], spec)
    assert checks["finished_within_time_cap"] is False
    assert any(r.startswith("truncated: 1 of 1 repetitions hit the time cap of 0.5 s; served ") for r in reasons)
    assert "truncated" in note
