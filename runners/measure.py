"""The measurement engine: time iterations one by one, warm up until steady, then measure windows.

Everything here works on a `Timed` callable that runs one iteration and returns its duration in ms, so
the same code measures a real model (see `timer`) and the synthetic series the tests inject.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from protocol import rules

from . import interrupts
from .progress import Reporter, Silent
from .stats import medians_agree

Timed = Callable[[], float]
BLOCK_GROWTH = 1.5


def timer(fn: Callable[[], object], sync: Callable[[], None]) -> Timed:
    """A Timed for `fn`: synchronise, start the clock, run, synchronise again, stop the clock.

    The first sync drains work queued earlier (so it is not charged to this iteration); the second waits
    for this iteration's device work, since GPU calls return before the kernels finish.
    """

    def timed() -> float:
        sync()
        start = time.perf_counter_ns()
        fn()
        sync()
        return (time.perf_counter_ns() - start) / 1e6

    return timed


@dataclass(frozen=True)
class Policy:
    """How long to warm up and to measure. Window limits are per repetition."""

    repetitions: int = 3
    min_seconds: float = 5.0  # each repetition lasts at least this long ...
    min_iterations: int = 50  # ... and times at least this many iterations
    max_iterations: int = 100_000  # the protocol's cap on raw samples per repetition
    warmup_max_seconds: float = 30.0  # warm-up stops here even if never steady (and says so)
    warmup_max_iterations: int = 20_000
    warmup_block_seconds: float = 0.2  # target duration of one warm-up block
    warmup_tolerance: float = 0.05  # block medians agree when their spread is within this
    warmup_blocks: int = 3  # consecutive agreeing blocks that end the warm-up
    max_seconds: float = 900.0  # the measured window stops here, all repetitions together (server
    # and closed loops alike); a run stopped by it is kept and marked
    # truncated

    def __post_init__(self) -> None:
        if self.repetitions < 1 or self.min_iterations < rules.MIN_WINDOW_ITERATIONS:
            raise ValueError(f"need >= 1 repetition and >= {rules.MIN_WINDOW_ITERATIONS} iterations")
        if self.max_iterations < self.min_iterations:
            raise ValueError("max_iterations must be at least min_iterations")
        if self.repetitions * self.min_seconds < rules.MIN_WINDOW_SECONDS:
            raise ValueError(f"the window must total at least {rules.MIN_WINDOW_SECONDS} s")


@dataclass(frozen=True)
class Warmup:
    """What the warm-up did: iterations and seconds spent, and whether block medians settled."""

    iterations: int
    seconds: float
    settled: bool
    block_medians_ms: tuple[float, ...]

    def reasons(self, policy: Policy) -> list[str]:
        """Why the run is not steady because of its warm-up (empty if it settled)."""
        if self.settled:
            return []
        return [
            f"warm-up capped at {self.iterations} iterations / {self.seconds:.1f} s without "
            f"{policy.warmup_blocks} block medians agreeing within {policy.warmup_tolerance:.0%}"
        ]


@dataclass(frozen=True)
class Window:
    """The measured samples (ms, time order, one tuple per repetition) and each repetition's wall time."""

    repetitions: tuple[tuple[float, ...], ...]
    seconds: tuple[float, ...]
    truncated: tuple[bool, ...] = ()  # per repetition: the time cap stopped it short of its minimum iterations
    cap_seconds: float | None = None

    def truncation(self, policy: Policy) -> tuple[dict[str, bool], list[str]]:
        """The validity check and the reason a closed-loop run carries when the time cap cut it short."""
        cut = [i for i, t in enumerate(self.truncated) if t]
        if not cut:
            return {}, []
        timed = sum(len(self.repetitions[i]) for i in cut)
        return {"finished_within_time_cap": False}, [
            f"truncated: {len(cut)} of {len(self.repetitions)} repetitions hit the time cap of "
            f"{self.cap_seconds or 0:g} s; they timed {timed} iterations against at least "
            f"{policy.min_iterations} each"
        ]

    @property
    def samples(self) -> np.ndarray:
        return np.fromiter((x for rep in self.repetitions for x in rep), dtype=np.float64)

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds))

    @property
    def iterations(self) -> int:
        return sum(len(rep) for rep in self.repetitions)


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect before and pause the cyclic collector during a timed loop, as timeit does: a collection
    would otherwise land on one random iteration."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _block_size(first_ms: float, block_seconds: float) -> int:
    return max(3, min(1000, math.ceil(block_seconds * 1000.0 / max(first_ms, 1e-6))))


def _warm_up_block(timed: Timed, size: int, start: float, done: int, policy: Policy) -> tuple[list[float], bool, float]:
    """One warm-up block of `size` iterations, cut short by the cap: (times, capped, seconds since `start`)."""
    block: list[float] = []
    capped, elapsed = False, 0.0
    while len(block) < size and not capped:
        interrupts.check()
        block.append(timed())
        elapsed = time.perf_counter() - start
        capped = elapsed >= policy.warmup_max_seconds or done + len(block) >= policy.warmup_max_iterations
    return block, capped, elapsed


def _next_block_size(size: int) -> int:
    """Blocks grow, so the agreeing blocks span a growing share of the warm-up: a slow decay that looks flat
    over three short blocks is still caught when the blocks are longer."""
    return min(int(size * BLOCK_GROWTH) + 1, 10_000)


def _medians_settled(medians: list[float], policy: Policy) -> bool:
    """Whether the last `warmup_blocks` block medians agree."""
    return len(medians) >= policy.warmup_blocks and medians_agree(
        medians[-policy.warmup_blocks :], policy.warmup_tolerance
    )


def warm_up(timed: Timed, policy: Policy, report: Reporter | None = None) -> Warmup:
    """Run iterations in blocks until the last `warmup_blocks` block medians agree, or until the cap."""
    report = report or Silent()
    report.stage("warm-up", policy.warmup_max_seconds)
    start = time.perf_counter()
    durations = [timed(), timed()]  # the first is often lazy initialisation: size blocks on the second too
    size = _block_size(min(durations), policy.warmup_block_seconds)
    medians: list[float] = []
    settled = capped = False
    while not (settled or capped):
        block, capped, elapsed = _warm_up_block(timed, size, start, len(durations), policy)
        durations.extend(block)
        if len(block) == size:  # a block cut short by the cap is too small to compare
            medians.append(float(np.median(block)))
        size = _next_block_size(size)
        settled = _medians_settled(medians, policy)
        report.advance(min(elapsed, policy.warmup_max_seconds), f"block median {float(np.median(block)):.3f} ms")
    state = "steady" if settled else "NOT steady (capped)"
    report.note(f"warm-up: {state} after {len(durations)} iterations, {elapsed:.1f} s")
    return Warmup(len(durations), round(elapsed, 3), settled, tuple(round(m, 6) for m in medians))


def repetition_seconds(policy: Policy, warmup: Warmup | None) -> float:
    """Minimum duration of each repetition: the policy's, raised so that the whole window is at least as
    long as the warm-up (a protocol rule: a window shorter than its warm-up mostly measured warm-up)."""
    floor = warmup.seconds / policy.repetitions if warmup else 0.0
    return max(policy.min_seconds, floor)


def measure_repetition(
    timed: Timed, policy: Policy, min_seconds: float, max_seconds: float = math.inf
) -> tuple[tuple[float, ...], float]:
    """One repetition: time iterations until both the minimum duration and count are met, or a cap: the
    protocol's sample cap, or `max_seconds` of wall time (a query so slow that the minimum count would run for
    hours; the caller marks such a repetition truncated)."""
    samples: list[float] = []
    with quiet_gc():
        start = time.perf_counter()
        while True:
            interrupts.check()  # outside the timed call: a lost Ctrl-C stops the loop at the next iteration
            samples.append(timed())
            elapsed = time.perf_counter() - start
            enough = elapsed >= min_seconds and len(samples) >= policy.min_iterations
            if enough or len(samples) >= policy.max_iterations or elapsed >= max_seconds:
                break
    return tuple(samples), elapsed


def measure(timed: Timed, policy: Policy, report: Reporter | None = None, warmup: Warmup | None = None) -> Window:
    """All repetitions of the measurement window, back to back after the warm-up."""
    report = report or Silent()
    min_seconds = repetition_seconds(policy, warmup)
    cap = max(policy.max_seconds / policy.repetitions, min_seconds)  # the cap never cuts the minimum duration
    reps: list[tuple[float, ...]] = []
    seconds: list[float] = []
    for index in range(policy.repetitions):
        report.stage(f"measure {index + 1}/{policy.repetitions}", None)
        samples, elapsed = measure_repetition(timed, policy, min_seconds, cap)
        reps.append(samples)
        seconds.append(elapsed)
        report.advance(1.0, f"{len(samples)} iterations, median {float(np.median(samples)):.3f} ms")
    truncated = tuple(len(r) < policy.min_iterations for r in reps)  # only the time cap ends a repetition short
    return Window(tuple(reps), tuple(seconds), truncated, cap)
