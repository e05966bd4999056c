"""The "client kept up" verdict is trusted on any host: beside a CPU hog it says "fell behind" rather than vouch
for a wrong figure, and on a quiet client it keeps up with figures on the law.

The truth: the simulated endpoint's law (ITL lognormal, median 20 ms, sigma 0.1; 8 tokens; slots to spare, so no
request queues and every gap follows the law). The endpoint runs as a real-time process (SCHED_FIFO) so the
hog starves the client only and the endpoint still sends on the law's schedule: what the client then reads off
the law is the client's error. (A raised nice is not enough: on this shared 2-core host a client at nice -15
still overslept its 5 ms timer by p99 4.5 ms at 0.5 req/s, and waited for a CPU 6% of the level; as SCHED_FIFO,
p99 1.2 ms, the timer's own rounding.) Real-time scheduling needs root (or CAP_SYS_NICE): elsewhere the tests
skip, saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from runners.serving.levels import Level, Objectives
from runners.serving.loadgen import Target, arrivals, open_loop
from runners.serving.shapes import RequestShape, TokenLaw
from runners.serving.simulated import Delay
from tests.runners.serving.conftest import realtime

# One worker runs the serving timing tests one after another: test_kept_up spins CPU hogs on purpose, which would
# starve a truth test running beside it on the other worker (it would then skip, its check lost).
pytestmark = pytest.mark.xdist_group("serving-timing")

ITL = Delay(20.0, 0.1)
TOKENS = 8
# A figure off the law by more than this share is wrong: far past the sampling error of a few hundred gaps
# (ITL p90 sd ~0.5% at sigma 0.1) and past the 5% of ITL the kept-up bound allows a stamp to move.
TOLERANCE = 0.10


def _realtime(pid: int) -> None:
    try:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(10))
    except PermissionError:
        pytest.skip("real-time scheduling needs root or CAP_SYS_NICE (the hog must starve the client only)")


@contextlib.contextmanager
def _endpoint(itl: Delay = ITL) -> Iterator[str]:
    cmd = [sys.executable, "-m", "runners.serving.simulated", "--port", "0", "--ttft-ms", "600", "--ttft-sigma",
           "0.1", "--itl-ms", str(itl.median_ms), "--itl-sigma", str(itl.sigma),
           "--capacity", "512", "--seed", "5"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        _realtime(proc.pid)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving" in line, line
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        proc.terminate()
        proc.wait(10)


# Neighbours as a shared host has them: two processes per core at nice 0 (the client's own priority), each
# spinning 20 ms then sleeping 20 ms, so the client is runnable but kept off a CPU for a few to tens of ms at a time.
SPIN = """import os, time
os.setpriority(os.PRIO_PROCESS, 0, 0)
while True:
    end = time.perf_counter() + 0.02
    while time.perf_counter() < end:
        pass
    time.sleep(0.02)
"""


@contextlib.contextmanager
def _hog() -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(10)


def _level(url: str, rate: float, seconds: float, seed: int) -> Level:
    count = int(rate * seconds)
    prompts = RequestShape(TokenLaw(8), TokenLaw(TOKENS)).prompts(count, seed)
    run = asyncio.run(
        open_loop(Target(url, "simulated", "completions", 60), prompts, arrivals(rate, count, seed), 5000)
    )
    return Level("request-rate", rate, run, Objectives())


def _errors(level: Level) -> dict[str, float]:
    """Each figure's relative error against the law: ITL p50 and p90, TPOT p50 (the mean gap of a request)."""
    itl, tpot = level.series("itl_ms"), level.series("tpot_ms")
    return {
        "itl p50": float(np.quantile(itl, 0.5)) / ITL.quantile(0.5) - 1,
        "itl p90": float(np.quantile(itl, 0.9)) / ITL.quantile(0.9) - 1,
        "tpot p50": float(np.quantile(tpot, 0.5)) / ITL.mean_ms - 1,
    }


@pytest.mark.slow
def test_beside_a_cpu_hog_it_says_fell_behind_rather_than_vouch_for_a_wrong_figure():
    # TTFT 600 ms: the dispatch-lag bound is then 30 ms (5% of TTFT p50), wide enough that a client descheduled
    # for 10-20 ms passes it while its chunk stamps, and so ITL p90, are 15-30% off the law (observed here before
    # the monitor timed its own oversleep: "kept up" at 24 req/s with ITL p90 +30%).
    seen = []
    with _endpoint() as url, _hog():
        for i, rate in enumerate((24.0, 48.0)):
            level = _level(url, rate, 4.0, i)
            section, reasons = level.client()
            wrong = {k: round(e, 3) for k, e in _errors(level).items() if abs(e) > TOLERANCE}
            seen.append((rate, section["kept_up"], wrong, section["notes"]))
            # Never "kept up" with a figure off the law; and what starved the client is what says so.
            assert not (section["kept_up"] and wrong), (rate, wrong, section["notes"])
            assert section["kept_up"] == (not reasons)
            if wrong:
                assert level.starvation().failed, (rate, wrong, section["notes"])
    print(*seen, sep="\n")
    # The hog did starve the client, and the client said so in words.
    assert any(not kept for _, kept, _, _ in seen), seen
    assert any("monitor samples taken" in notes and "timer overslept by p99" in notes for *_, notes in seen)


# A client that waited for a CPU longer than this share of a level did not get its CPU (as SCHED_FIFO on a quiet
# host it waits 0%).
QUIET_WAIT = 0.02


def _waited(level: Level) -> float | None:
    m = level.run.monitor
    return m.runqueue_s / m.wall_s if m.runqueue_s is not None and m.wall_s > 0 else None


@pytest.mark.slow
def test_a_client_that_gets_its_cpu_keeps_up_at_a_low_rate_with_figures_on_the_law():
    # "Quiet" for the client: on a shared host it runs real-time like the endpoint, so neighbours do not preempt
    # it; the verdict must then vouch, and rightly.
    # The premise is measured, not assumed: even a real-time client was once kept off a CPU 16% of a level in CI
    # (p99 dispatch lag 502 ms; the verdict rightly said "fell behind"). A level whose client waited for a CPU is
    # not a quiet one; it is tried again, and the verdict on it must still not vouch for a figure off the law.
    with _endpoint() as url:
        for seed in (7, 8, 9):
            try:
                with realtime(0):
                    level = _level(url, 6.0, 4.0, seed)
            except PermissionError:
                pytest.skip("real-time scheduling needs root or CAP_SYS_NICE (a quiet client on a shared host)")
            section, reasons = level.client()
            print(section["notes"])
            waited = _waited(level)
            if waited is None or waited <= QUIET_WAIT:
                break
            wrong = {k: e for k, e in _errors(level).items() if abs(e) > TOLERANCE}
            assert not (section["kept_up"] and wrong), (wrong, section["notes"])
        else:
            pytest.skip(f"the host kept even a real-time client off a CPU (> {QUIET_WAIT:.0%} of each of 3 levels)")
    assert section["kept_up"], reasons
    assert all(abs(e) <= TOLERANCE for e in _errors(level).values()), _errors(level)
    # the monitor took samples ("910 of 910 monitor samples taken" holds "0 of" too: the count is read whole)
    taken = re.search(r"(\d+) of (\d+) monitor samples taken", section["notes"])
    assert taken is not None and int(taken[1]) > 0, section["notes"]


@pytest.mark.slow
def test_an_endpoint_that_sends_a_requests_tokens_at_once_is_not_counted_against_the_client():
    # ITL 0 by the law: every client reads a request's tokens in one wake-up and stamps them together, which is
    # the truth and no sign of starvation; the share is still said in words.
    with _endpoint(Delay(0.0)) as url:
        try:
            with realtime(0):
                level = _level(url, 6.0, 3.0, 3)
        except PermissionError:
            pytest.skip("real-time scheduling needs root or CAP_SYS_NICE (a quiet client on a shared host)")
    shared, most = level.collisions()
    section, reasons = level.client()
    assert shared > 0.5 and most > 1, (shared, most)
    assert not any("shared a timestamp" in r for r in reasons), reasons
    assert f"{shared:.0%} of token events shared a timestamp" in section["notes"]
