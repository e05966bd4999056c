"""The load generator against the simulated endpoint, whose latency law is the truth (runners/serving/simulated).

Tolerances come from the sampling error: a nearest-rank quantile of n draws has standard error
sqrt(q(1-q)/n) / f(x_q) (f the law's density), and the check allows 4 of them, plus the host's timer lateness
measured in the test (asyncio.sleep's p99 overshoot here), which the endpoint's own token timers also suffer.
A level whose client fell behind gives no verdict: the test then skips, naming why.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from protocol.percentiles import quantile
from runners.serving.alarm import Alarm
from runners.serving.levels import Level, Objectives
from runners.serving.loadgen import LevelRun, Target, arrivals, closed_loop, open_loop, wait_until
from runners.serving.shapes import RequestShape, TokenLaw
from runners.serving.simulated import Delay, Law, queue_ttft_ms
from tests.runners.serving.conftest import realtime, simulated_endpoints

# One worker runs the serving timing tests one after another: test_kept_up spins CPU hogs on purpose, which would
# starve a truth test running beside it on the other worker (it would then skip, its check lost).
pytestmark = pytest.mark.xdist_group("serving-timing")

LAW = Law(ttft=Delay(60.0, 0.3), itl=Delay(12.0, 0.25), capacity=32, seed=3)
TOKENS = 12


def _overshoot_ms() -> float:
    async def measure() -> list[float]:
        out = []
        for _ in range(200):
            t = time.perf_counter()
            await asyncio.sleep(0.002)
            out.append((time.perf_counter() - t - 0.002) * 1e3)
        return out

    return float(np.quantile(asyncio.run(measure()), 0.99))


def _tolerance(law: Delay, q: float, n: int, slack_ms: float) -> float:
    x = law.quantile(q)
    return 4 * math.sqrt(q * (1 - q) / n) / law.density(x) + slack_ms


def _level(url: str, rate: float, count: int) -> Level:
    target = Target(url, "simulated", "chat", timeout_s=60)
    prompts = RequestShape(TokenLaw(32), TokenLaw(TOKENS)).prompts(count, 1)
    run = asyncio.run(open_loop(target, prompts, arrivals(rate, count, 1), count))
    return Level("request-rate", rate, run, Objectives(ttft_ms=1000))


def _p(values: np.ndarray, q: float) -> float:
    return float(quantile(values, q, "inverted_cdf"))


def test_it_measures_ttft_itl_and_throughput_as_the_law_sets_them(endpoint):
    url = endpoint("--ttft-ms", "60", "--ttft-sigma", "0.3", "--itl-ms", "12", "--itl-sigma", "0.25",
                   "--capacity", "32", "--seed", "3")  # fmt: skip
    rate, count = 16.0, 240  # utilisation 16 / (32 / 0.196 s) = 10%: queueing is negligible (P(all 32 busy) < 1e-20)
    # The endpoint's own timers are this host's too: its delays are the law's only where it gets a CPU when its
    # timer fires. Client and endpoint run real-time where the host allows (as in test_kept_up), so a busy host's
    # other processes do not deschedule them; elsewhere the test runs only on a host busy at most half its cores.
    with contextlib.ExitStack() as scheduling:
        try:
            scheduling.enter_context(realtime(0, *simulated_endpoints()))
        except PermissionError:
            busy = os.getloadavg()[0] / (os.cpu_count() or 1)
            if busy > 0.5:
                pytest.skip(f"host too busy for a timing truth test: load average {busy:.2f} per core (> 0.5)")
        slack = _overshoot_ms()
        level = _level(url, rate, count)
    _client, reasons = level.client()
    if reasons:  # what starved the client is measured (test_kept_up): no verdict then, and the test says why
        pytest.skip(f"no verdict on this host: {'; '.join(reasons)}")
    assert level.counts() == {"sent": count, "completed": count, "errors": 0, "timeouts": 0, "incomplete": 0}
    ttft, itl = level.series("ttft_ms"), level.series("itl_ms")
    for q in (0.5, 0.9):
        assert abs(_p(ttft, q) - LAW.ttft.quantile(q)) <= _tolerance(LAW.ttft, q, ttft.size, slack), q
        assert abs(_p(itl, q) - LAW.itl.quantile(q)) <= _tolerance(LAW.itl, q, itl.size, 2 * slack), q
    # Every completed request brings TOKENS tokens: throughput is the completed rate times TOKENS, and the
    # completed rate is the schedule's (exactly `rate` by construction) stretched by the last request's tail.
    expected = count * TOKENS / ((count - 1) / rate + level.run.records[-1].latency_ms / 1e3)
    assert level.tokens_per_second() == pytest.approx(expected, rel=0.02)


def test_latency_runs_from_the_scheduled_arrival_so_queueing_is_charged(endpoint):
    url = endpoint("--ttft-ms", "40", "--ttft-sigma", "0", "--itl-ms", "10", "--itl-sigma", "0", "--capacity", "1")
    # One slot, each request holds it 40 + 11 * 10 = 150 ms; 20 arrivals at 20/s pile up behind each other.
    level = _level(url, 20.0, 20)
    ttft = level.series("ttft_ms")
    predicted = queue_ttft_ms(Law(Delay(40), Delay(10), 1), 20.0, TOKENS, 20_000, 0)
    assert _p(ttft, 0.9) > 10 * 40  # far above the 40 ms service time: the queue wait is counted
    assert float(np.median(predicted)) > 40  # the law agrees the queue dominates at this load


def test_closed_loop_counts_every_request_once(endpoint):
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2", "--capacity", "8")
    target = Target(url, "simulated", "completions", timeout_s=60)
    prompts = RequestShape(TokenLaw(8), TokenLaw(4)).prompts(40, 2)
    run = asyncio.run(closed_loop(target, prompts, 4))
    level = Level("concurrency", 4, run, Objectives())
    assert level.counts()["completed"] == 40 and [r.index for r in run.records] == list(range(40))
    assert all(r.usage and r.output_tokens == 4 for r in run.records)


@pytest.mark.parametrize(
    ("fault", "outcome", "detail"),
    [
        ("errors", "errors", "HTTP 500"),
        ("malformed", "errors", "malformed SSE"),
        ("truncate", "incomplete", "ended before [DONE]"),
        ("no-stream", "errors", "not a stream"),
    ],
)
def test_each_broken_answer_is_counted_under_its_outcome(endpoint, fault, outcome, detail):
    url = endpoint("--ttft-ms", "2", "--itl-ms", "1", "--fault", fault)
    level = _level(url, 50.0, 10)
    counts = level.counts()
    assert counts["sent"] == 10 and counts[outcome] == 10
    assert all(detail in (r.detail or "") for r in level.run.records)


def test_a_request_past_its_timeout_is_counted_as_a_timeout(endpoint):
    url = endpoint("--ttft-ms", "3000", "--ttft-sigma", "0")
    target = Target(url, "simulated", "chat", timeout_s=0.3)
    prompts = RequestShape(TokenLaw(8), TokenLaw(4)).prompts(3, 2)
    run = asyncio.run(open_loop(target, prompts, arrivals(10.0, 3, 1), 3))
    assert [r.outcome for r in run.records] == ["timeouts"] * 3


@pytest.mark.parametrize("precise", [True, False], ids=["timerfd", "sleep-then-yield"])
def test_the_dispatcher_never_sends_before_the_scheduled_time(precise):
    # On the alarm (a timerfd) or sleeping short of the time and yielding until it is due: it may be late (a busy
    # host), never early.
    async def waits() -> list[float]:
        alarm = Alarm.open() if precise else None
        assert (alarm is not None) == precise  # Linux: the precise path is the one CI runs
        out = []
        for delay in (0.0, 0.0004, 0.002, 0.0113, 0.03, -0.001):
            when = time.perf_counter() + delay
            await wait_until(when, alarm)
            out.append(time.perf_counter() - when)
        if alarm is not None:
            alarm.close()
        return out

    assert all(early >= 0 for early in asyncio.run(waits()))


def test_the_dispatcher_sleeps_between_requests_instead_of_spinning():
    # 200 waits 2 ms apart: sleeping to 1.5 ms short of each and yielding until it is due spent ~0.3 CPU-s of the
    # 0.4 s, CPU a shared host's endpoint needed; on the alarm the loop sleeps in epoll until the time.
    async def waits() -> float:
        alarm = Alarm.open()
        cpu, start = time.process_time(), time.perf_counter()
        for i in range(200):
            await wait_until(start + 0.002 * (i + 1), alarm)
        assert alarm is not None
        alarm.close()
        return time.process_time() - cpu

    assert asyncio.run(waits()) < 0.15


def test_a_simulated_endpoint_with_workers_answers_and_stops_them_all_when_terminated():
    proc = subprocess.Popen(
        [sys.executable, "-m", "runners.serving.simulated", "--port", "0", "--workers", "3", "--ttft-ms", "1",
         "--itl-ms", "1"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
        level = _level(url, 50.0, 12)
        assert level.counts()["completed"] == 12
        workers = psutil.Process(proc.pid).children()
        assert len(workers) == 2  # the parent answers too
    finally:
        proc.terminate()
        proc.wait(10)
    _gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive


def test_a_closed_loop_level_with_a_duration_lasts_it_however_fast_the_endpoint(endpoint):
    url = endpoint("--ttft-ms", "2", "--itl-ms", "1", "--capacity", "8")
    target = Target(url, "simulated", "completions", timeout_s=60)
    shape = RequestShape(TokenLaw(8), TokenLaw(4))
    run = asyncio.run(closed_loop(target, shape.stream(1), 2, seconds=1.2, min_requests=5, max_requests=10_000))
    level = Level("concurrency", 2, run, Objectives())
    last_start = max(r.scheduled for r in run.records)
    assert level.seconds >= 1.2 and last_start - run.started < 1.2 + 0.5  # sent for its duration, then stopped
    assert level.counts()["completed"] == len(run.records) == run.planned > 5
    assert [r.index for r in run.records] == list(range(len(run.records)))


def test_a_client_whose_event_loop_is_stalled_is_said_to_have_fallen_behind(endpoint):
    # Known truth: a coroutine in the client's own loop blocks it for 30 ms every 100 ms, so dispatches and chunk
    # stamps are late by up to 30 ms, far past the bound (max(1 ms, 5% of a TTFT p50 of ~20 ms)). The verdict
    # must say the client fell behind, and the level then gives no steady-state verdict.
    url = endpoint("--ttft-ms", "20", "--itl-ms", "2", "--capacity", "64")
    target = Target(url, "simulated", "completions", timeout_s=60)
    prompts = RequestShape(TokenLaw(8), TokenLaw(4)).prompts(60, 1)

    async def stalled() -> LevelRun:
        async def hog() -> None:
            while True:
                await asyncio.sleep(0.1)
                time.sleep(0.03)  # blocks the loop, as a client doing too much would

        task = asyncio.create_task(hog())
        try:
            return await open_loop(target, prompts, arrivals(30.0, 60, 1), 60)
        finally:
            task.cancel()

    level = Level("request-rate", 30.0, asyncio.run(stalled()), Objectives())
    section, reasons = level.client()
    assert not section["kept_up"] and any("client fell behind" in r for r in reasons), reasons
    assert level.steady_state(reasons)["method"] == "not-assessed"
