"""The server scenario's load generator: Poisson arrivals at a target rate, bounded concurrency.

Like MLPerf LoadGen's server scenario, arrivals are scheduled in advance from a seeded exponential
distribution and issued open-loop: a request that arrives while all `concurrency` workers are busy waits
in the queue, and its latency runs from its *scheduled* arrival, so queueing and any lateness of the
dispatcher are charged to the system rather than hidden.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

Serve = Callable[[], tuple[float | None, float]]  # (first-token ms or None, total ms) from its own start


@dataclass(frozen=True)
class Request:
    """One request's times in seconds on the perf_counter clock."""

    scheduled: float
    issued: float
    started: float
    first_token: float | None
    finished: float

    @property
    def latency_ms(self) -> float:
        return (self.finished - self.scheduled) * 1e3

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first_token is None else (self.first_token - self.scheduled) * 1e3


@dataclass(frozen=True)
class ServerRun:
    """All requests of one repetition, with the achieved issue rate and the window's wall time."""

    requests: tuple[Request, ...]
    target_qps: float
    planned: int = 0  # requests scheduled; more than len(requests) when the time cap stopped the run
    max_seconds: float | None = None

    @property
    def truncated(self) -> bool:
        """The time cap stopped this repetition before every scheduled request was served."""
        return len(self.requests) < self.planned

    @property
    def seconds(self) -> float:
        """From the first scheduled arrival to the last completion."""
        return max(r.finished for r in self.requests) - min(r.scheduled for r in self.requests)

    @property
    def arrival_rate(self) -> float:
        """Requests issued per second, between the first and last issue (n - 1 intervals)."""
        issued = sorted(r.issued for r in self.requests)
        return (len(issued) - 1) / (issued[-1] - issued[0]) if len(issued) > 1 else 0.0

    @property
    def completion_rate(self) -> float:
        """Requests completed per second, between the first and last completion (n - 1 intervals)."""
        done = sorted(r.finished for r in self.requests)
        return (len(done) - 1) / (done[-1] - done[0]) if len(done) > 1 and done[-1] > done[0] else 0.0

    @property
    def max_dispatch_lag_ms(self) -> float:
        return max((r.issued - r.scheduled) * 1e3 for r in self.requests)


def poisson_arrivals(rate: float, count: int, seed: int) -> np.ndarray:
    """Arrival offsets (s) of `count` requests of a Poisson process at `rate`, conditioned on its count.

    Exponential gaps are rescaled so that the n - 1 gaps span exactly (n - 1) / rate seconds. Given the
    count, the arrival times of a Poisson process are uniform order statistics, which is what rescaled
    exponential gaps are; so the process stays Poisson while its realised mean rate is the target itself,
    and a short window does not report a rate off by the sampling noise of its own schedule.
    """
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=count)
    gaps[0] = 0.0  # the first request arrives at the start of the window
    if count > 1:
        gaps[1:] *= (count - 1) / rate / gaps[1:].sum()
    return np.cumsum(gaps)


def requests_for(rate: float, min_seconds: float, min_requests: int) -> int:
    """Enough requests to span the minimum window at the target rate, and the minimum count."""
    return max(min_requests, math.ceil(rate * min_seconds) + 1)


def _sleep_until(deadline: float) -> None:
    # time.sleep overshoots by up to ~0.1 ms on Linux; spin for the last 0.2 ms for accurate issue times.
    remaining = deadline - time.perf_counter()
    if remaining > 0.0002:
        time.sleep(remaining - 0.0002)
    while time.perf_counter() < deadline:
        pass


def _serve_one(serve: Serve, scheduled: float, issued: float) -> Request:
    started = time.perf_counter()
    first_ms, total_ms = serve()
    first = None if first_ms is None else started + first_ms / 1e3
    return Request(scheduled, issued, started, first, started + total_ms / 1e3)


def _issue(
    pool: ThreadPoolExecutor, serve: Serve, offsets: np.ndarray, max_seconds: float | None
) -> tuple[Request, ...]:
    """Issue a request at each arrival offset (until the time cap), and the requests served."""
    futures: list[Future[Request]] = []
    origin = time.perf_counter() + 0.01
    cap = origin + max_seconds if max_seconds is not None else math.inf
    for offset in offsets:
        scheduled = origin + float(offset)
        if scheduled > cap:
            break
        _sleep_until(scheduled)
        futures.append(pool.submit(_serve_one, serve, scheduled, time.perf_counter()))
    if cap < math.inf:
        wait(futures, timeout=max(0.0, cap - time.perf_counter()))
        for future in futures:
            future.cancel()  # still queued behind the workers: never issued to the model
    return tuple(f.result() for f in futures if not f.cancelled())


def run_server(
    serve: Serve, rate: float, count: int, concurrency: int, seed: int, max_seconds: float | None = None
) -> ServerRun:
    """Issue `count` requests with Poisson arrivals at `rate` per second to `concurrency` workers.

    With `max_seconds`, the repetition stops at that wall-clock time: no request scheduled later is issued,
    queued ones are cancelled, and those in flight finish. The run keeps what was served and says it was
    truncated (`planned` > number of requests): an overloaded server cannot make a run last for ever.
    """
    if rate <= 0 or count < 1 or concurrency < 1:
        raise ValueError("the server scenario needs a positive rate, request count and concurrency")
    if max_seconds is not None and max_seconds <= 0:
        raise ValueError("the time cap must be a positive number of seconds")
    offsets = poisson_arrivals(rate, count, seed)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="benchreg-server") as pool:
        requests = _issue(pool, serve, offsets, max_seconds)
    if not requests:
        raise RuntimeError(f"no request completed within the time cap of {max_seconds} s")
    return ServerRun(requests, rate, planned=count, max_seconds=max_seconds)
