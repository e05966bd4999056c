"""A serving run: check everything that can be checked before load, then measure each level of the sweep.

    describe the endpoint (GET /v1/models, /version, /metrics) -> refuse what the deployment leaves unsaid
    (skeleton document validated) -> one streamed probe request -> levels in load order, one document each

The automatic sweep (open loop) starts at `start` req/s and multiplies the rate by `factor` each level. It stops
at the first level where an objective fails ("ttft_ms p99 objective failed"), where the client fell behind,
or where throughput stopped growing: tokens/s rose by less than a quarter of the load's rise over the best
level so far (at saturation the completions stay at the capacity however high the offered load). The knee is
the highest load measured before the stop.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import protocol
from protocol import rules

from ..record import now
from . import probe, telemetry, watch
from .document import Context, Sweep, document, skeleton_errors
from .levels import Level, Objectives
from .loadgen import LevelRun, arrivals, client, closed_loop, open_loop

GROWTH_SHARE = 0.25
MAX_LEVELS = 50
MAX_OPEN = 20_000


class Refused(Exception):
    """The run cannot start; `reasons` say what and where. Nothing was sent."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("refused before any load was sent: " + "; ".join(reasons))


@dataclass(frozen=True)
class LoadPlan:
    """mode "request-rate" (loads in req/s), "concurrency" (users) or "automatic" (rates from start × factor^i).

    `only`: measure level `only` of `loads` and no other (an agent job is one level of a planned sweep); the
    level keeps its index, so its sweep index and its seed are the ones the whole sweep would give it.
    """

    mode: str
    loads: tuple[float, ...] = ()
    duration_s: float = 30.0
    min_requests: int = 100
    max_requests: int = 20_000
    start: float = 1.0
    factor: float = 1.5
    max_levels: int = 12
    only: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("request-rate", "concurrency", "automatic"):
            raise ValueError(f"load mode: request-rate, concurrency or automatic; not {self.mode!r}")
        if self.mode != "automatic" and (not self.loads or min(self.loads) <= 0 or len(self.loads) > MAX_LEVELS):
            raise ValueError(f"give 1 to {MAX_LEVELS} positive loads")
        if self.mode == "concurrency" and any(x != int(x) or x > MAX_OPEN for x in self.loads):
            raise ValueError(f"concurrency levels are whole numbers up to {MAX_OPEN}")
        if self.mode == "automatic" and not (self.start > 0 and self.factor > 1 and 1 <= self.max_levels <= MAX_LEVELS):
            raise ValueError(f"an automatic sweep needs start > 0, factor > 1 and 1 to {MAX_LEVELS} levels")
        if not (rules.MIN_WINDOW_ITERATIONS <= self.min_requests <= self.max_requests <= 1_000_000):
            raise ValueError(f"requests per level: {rules.MIN_WINDOW_ITERATIONS} <= min <= max <= 1,000,000")
        if self.duration_s < rules.MIN_WINDOW_SECONDS:
            raise ValueError(f"a level's schedule lasts at least {rules.MIN_WINDOW_SECONDS:g} s (--duration)")
        if self.only is not None and self.mode == "automatic":
            raise ValueError("an automatic sweep chooses each level from the ones before it: it runs whole")
        if self.only is not None and not 0 <= self.only < len(self.loads):
            raise ValueError(f"a level is the index of one of the {len(self.loads)} loads, not {self.only!r}")
        for load in self.loads if self.mode == "request-rate" else ():
            if self.span(load) < rules.MIN_WINDOW_SECONDS:
                raise ValueError(
                    f"at {load:g} req/s, {self.count(load)} requests (--max-requests) span {self.span(load):.2f} s, "
                    f"under the protocol's {rules.MIN_WINDOW_SECONDS:g} s window: raise --max-requests to at least "
                    f"{math.ceil(load * rules.MIN_WINDOW_SECONDS) + 1} or lower the rate"
                )

    @property
    def open_loop(self) -> bool:
        return self.mode != "concurrency"

    def count(self, load: float) -> int:
        """Requests of an open-loop level at `load` req/s (a closed-loop level runs for its duration instead): the
        arrivals span at least the duration (n requests span n − 1 gaps), within the request bounds."""
        return min(self.max_requests, max(self.min_requests, math.ceil(load * self.duration_s) + 1))

    def span(self, load: float) -> float:
        """Seconds from an open-loop level's first scheduled arrival to its last."""
        return (self.count(load) - 1) / load


async def _measure(ctx: Context, plan: LoadPlan, load: float, index: int) -> LevelRun:
    if plan.open_loop:
        count = plan.count(load)
        prompts = ctx.shape.prompts(count, ctx.seed + index)
        offsets = arrivals(load, count, ctx.seed + index, ctx.sweep.burstiness or 1.0)
        return await open_loop(ctx.target, prompts, offsets, min(MAX_OPEN, count))
    return await closed_loop(
        ctx.target,
        ctx.shape.stream(ctx.seed + index),
        int(load),
        seconds=plan.duration_s,
        min_requests=plan.min_requests,
        max_requests=plan.max_requests,
    )


def _stop(level: Level, best: Level | None, plan: LoadPlan) -> str | None:
    failed = level.objective_failed()
    if failed:
        return failed
    if not level.client()[0]["kept_up"]:
        return "client fell behind"
    if best is not None and best.tokens_per_second() > 0:
        gain = level.tokens_per_second() / best.tokens_per_second() - 1
        if gain < GROWTH_SHARE * (level.load / best.load - 1):
            return "throughput stopped growing"
    return None


def new_sweep(plan: LoadPlan, arrival: str, burstiness: float | None, sweep_id: str | None = None) -> Sweep:
    """The sweep's identity: `sweep_id` when a plan gave one (its levels run as separate jobs), else a new one."""
    levels = None if plan.mode == "automatic" else len(plan.loads)
    return Sweep(sweep_id or uuid.uuid4().hex, plan.mode, levels, arrival, burstiness)


class LevelRefused(Exception):
    """A measured level whose document the protocol refuses (a window under 1 s, too few completed requests...):
    it is not written; the message says which level and why."""


async def run(
    ctx: Context, plan: LoadPlan, objectives: Objectives, emit: Callable[[dict[str, Any]], None]
) -> list[Level]:
    """Check, then measure every level, calling `emit(document)` as each is done. Raises Refused before any load;
    LevelRefused after the levels before it were emitted (the sweep stops there)."""
    try:
        info = await probe.describe(ctx.target)
    except probe.EndpointError as exc:
        raise Refused([str(exc)]) from None
    mode = "request-rate" if plan.open_loop else "concurrency"
    first = plan.start if plan.mode == "automatic" else plan.loads[plan.only or 0]
    errors = skeleton_errors(ctx, info, mode, first, objectives.section())
    if errors:
        raise Refused(errors)
    if plan.mode == "automatic" and objectives.section() is None:
        raise Refused(["an automatic sweep needs an objective (--ttft-slo-ms, --tpot-slo-ms or --latency-slo-ms)"])
    if ctx.telemetry is not None:
        refused = await asyncio.to_thread(telemetry.refusals, ctx.telemetry)
        if refused:
            raise Refused(refused)
    try:
        await probe.check_streaming(ctx.target)
    except probe.EndpointError as exc:
        raise Refused([str(exc)]) from None
    return await _levels(ctx, plan, objectives, info, emit)


async def _levels(
    ctx: Context,
    plan: LoadPlan,
    objectives: Objectives,
    info: probe.EndpointInfo,
    emit: Callable[[dict[str, Any]], None],
) -> list[Level]:
    mode = "request-rate" if plan.open_loop else "concurrency"
    loads = (
        list(plan.loads) if plan.mode != "automatic" else [plan.start * plan.factor**i for i in range(plan.max_levels)]
    )
    done: list[Level] = []
    best: Level | None = None
    async with client(ctx.target, 2) as http:
        for index, load in enumerate(loads):
            if plan.only is not None and index != plan.only:
                continue
            load = round(load, 4) if plan.open_loop else load
            before = await probe.metrics(http, probe.side_deadline(ctx.target))
            async with watch.watching(ctx.telemetry) as watched:
                level = Level(mode, load, await _measure(ctx, plan, load, index), objectives)
            after = await probe.metrics(http, probe.side_deadline(ctx.target))
            told = watch.summary(watched) if watched is not None else None
            stop = _stop(level, best, plan) if plan.mode == "automatic" else None
            if plan.mode == "automatic" and stop is None and index == len(loads) - 1:
                stop = f"the planned {plan.max_levels} levels were measured"
            emit(_document(ctx, level, index, stop, info, _delta(before, after), told))
            done.append(level)
            if best is None or level.tokens_per_second() > best.tokens_per_second():
                best = level
            if stop is not None:
                break
    return done


def _document(
    ctx: Context,
    level: Level,
    index: int,
    stop: str | None,
    info: probe.EndpointInfo,
    delta: dict[str, float],
    told: watch.LevelTelemetry | None,
) -> dict[str, Any]:
    try:
        return document(ctx, level, index, stop, info, delta, told)
    except protocol.Invalid as exc:
        reasons = "; ".join(f"{e.pointer or '/'}: {e.message}" for e in exc.errors)
        counts = level.counts()
        raise LevelRefused(
            f"level {index} ({level.load:g} {'req/s' if level.mode == 'request-rate' else 'users'}) was measured "
            f"({counts['completed']} of {counts['sent']} requests completed in {level.seconds:.2f} s) but its "
            f"document is not valid, so it was not written and the sweep stopped: {reasons}"
        ) from None


def _delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float]:
    """Counters' change over the level (names ending in _total), gauges as read after it."""
    if not after:
        return {}
    out = {}
    for name, value in after.items():
        out[name] = value - (before or {}).get(name, 0.0) if name.endswith("_total") else value
    return out


def context(**kwargs: Any) -> Context:
    return Context(started_at=now(), **kwargs)


def run_sync(
    ctx: Context, plan: LoadPlan, objectives: Objectives, emit: Callable[[dict[str, Any]], None]
) -> list[Level]:
    return asyncio.run(run(ctx, plan, objectives, emit))
