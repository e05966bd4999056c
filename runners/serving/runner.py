"""A serving run: check everything that can be checked before load, then measure each level of the sweep.

    describe the endpoint (GET /v1/models, /version, /metrics) -> refuse what the deployment leaves unsaid
    (skeleton document validated) -> one streamed probe request -> levels in load order, one document each

Before each level, `warmup_requests` requests (or as many as `warmup_seconds` allow) are sent closed loop and
thrown away: none of them is in the level's records, figures or the endpoint counters read over it, and the
document states how many were sent and for how long (conditions.warmup, software.notes.warmup).

Each level's records are rebased to its origin and written as the per-request export (runners/serving/export),
which the document names by sha256; its figures are computed from those very values, so they recompute exactly.

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

import protocol
from protocol import rules

from ..record import now
from . import probe, telemetry, watch
from .datasets import SharedPrefix, Turn
from .document import Context, Measured, Sweep, Warmup, document, skeleton_errors
from .export import rebased, to_jsonl
from .levels import Level, Objectives
from .loadgen import LevelRun, Prompt, arrivals, client, closed_loop, open_loop
from .sessions import SessionBudget, closed_loop_sessions
from .workload import Workload

GROWTH_SHARE = 0.25
MAX_LEVELS = 50
MAX_OPEN = 20_000
MAX_WARMUP_REQUESTS = 100_000
MAX_WARMUP_SECONDS = 3600.0
WARMUP_USERS = 8  # warm-up requests in flight at once: enough to fill a few batches, few enough not to queue long
# What a level hands on: its document, and its per-request export (None when the run keeps none, an agent job's).
Emit = Callable[[dict[str, Any], bytes | None], None]


class Refused(Exception):
    """The run cannot start; `reasons` say what and where. Nothing was sent."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("refused before any load was sent: " + "; ".join(reasons))


@dataclass(frozen=True)
class LoadPlan:
    """mode "request-rate" (loads in req/s), "concurrency" (users), "automatic" (rates from start × factor^i) or
    "trace" (loads are speed-ups of a trace's own arrival times; its levels are open loop at the replayed rate).

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
    warmup_requests: int = 0
    warmup_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in ("request-rate", "concurrency", "automatic", "trace"):
            raise ValueError(f"load mode: request-rate, concurrency, automatic or trace; not {self.mode!r}")
        if self.mode != "automatic" and (not self.loads or min(self.loads) <= 0 or len(self.loads) > MAX_LEVELS):
            raise ValueError(f"give 1 to {MAX_LEVELS} positive loads")
        if self.mode == "concurrency" and any(x != int(x) or x > MAX_OPEN for x in self.loads):
            raise ValueError(f"concurrency levels are whole numbers up to {MAX_OPEN}")
        if self.mode == "automatic" and not (self.start > 0 and self.factor > 1 and 1 <= self.max_levels <= MAX_LEVELS):
            raise ValueError(f"an automatic sweep needs start > 0, factor > 1 and 1 to {MAX_LEVELS} levels")
        if not (rules.MIN_WINDOW_ITERATIONS <= self.min_requests <= self.max_requests <= 1_000_000):
            raise ValueError(
                f"requests per level: --min-requests {self.min_requests} and --max-requests {self.max_requests} must "
                f"hold {rules.MIN_WINDOW_ITERATIONS} <= min <= max <= 1,000,000"
            )
        if self.duration_s < rules.MIN_WINDOW_SECONDS:
            raise ValueError(f"a level's schedule lasts at least {rules.MIN_WINDOW_SECONDS:g} s (--duration)")
        if self.only is not None and self.mode == "automatic":
            raise ValueError("an automatic sweep chooses each level from the ones before it: it runs whole")
        self._check_warmup()
        if self.only is not None and not 0 <= self.only < len(self.loads):
            raise ValueError(f"a level is the index of one of the {len(self.loads)} loads, not {self.only!r}")
        for load in self.loads if self.mode == "request-rate" else ():
            if self.span(load) < rules.MIN_WINDOW_SECONDS:
                raise ValueError(
                    f"at {load:g} req/s, {self.count(load)} requests (--max-requests) span {self.span(load):.2f} s, "
                    f"under the protocol's {rules.MIN_WINDOW_SECONDS:g} s window: raise --max-requests to at least "
                    f"{math.ceil(load * rules.MIN_WINDOW_SECONDS) + 1} or lower the rate"
                )

    def _check_warmup(self) -> None:
        if not 0 <= self.warmup_requests <= MAX_WARMUP_REQUESTS:
            raise ValueError(f"warm-up requests (--warmup): 0 to {MAX_WARMUP_REQUESTS:,}, not {self.warmup_requests!r}")
        if not (math.isfinite(self.warmup_seconds) and 0 <= self.warmup_seconds <= MAX_WARMUP_SECONDS):
            raise ValueError(
                f"warm-up seconds (--warmup-seconds): 0 to {MAX_WARMUP_SECONDS:g}, not {self.warmup_seconds!r}"
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
    workload = ctx.shape.workload
    if plan.mode == "trace" and workload is not None:
        return await _replay(ctx, plan, workload, load, ctx.seed + index)
    if not plan.open_loop and workload is not None and workload.max_turns is not None:
        return await _sessions(ctx, plan, workload, int(load), ctx.seed + index)
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


async def _warm_up(ctx: Context, plan: LoadPlan, index: int) -> Warmup:
    """Send the plan's warm-up before level `index` and keep only how it went (module docstring)."""
    if not plan.warmup_requests and not plan.warmup_seconds:
        return Warmup(0, 0.0, 0, 0)
    seconds = plan.warmup_seconds or None
    users = min(WARMUP_USERS, plan.warmup_requests) if plan.warmup_requests else WARMUP_USERS
    run = await closed_loop(
        ctx.target,
        ctx.shape.stream(ctx.seed + 1_000_003 + index),  # prompts of their own: the level's are not seen before it
        users,
        seconds=seconds,
        min_requests=plan.warmup_requests,
        max_requests=None if seconds else plan.warmup_requests,
    )
    took = max((r.end for r in run.records), default=run.started) - run.started
    done = sum(r.outcome == "completed" for r in run.records)
    return Warmup(len(run.records), round(took, 4), done, users)


async def _replay(ctx: Context, plan: LoadPlan, workload: Workload, speedup: float, seed: int) -> LevelRun:
    prompts, offsets = workload.replay(speedup, plan.duration_s, plan.max_requests)
    prompts = ctx.shape.prefix.apply(prompts, seed) if ctx.shape.prefix else prompts
    return await open_loop(ctx.target, prompts, offsets, min(MAX_OPEN, len(prompts)))


async def _sessions(ctx: Context, plan: LoadPlan, workload: Workload, users: int, seed: int) -> LevelRun:
    assert workload.max_turns is not None
    budget = SessionBudget(plan.duration_s, plan.min_requests, plan.max_requests)
    sessions = workload.sessions(seed)
    if ctx.shape.prefix is not None:
        sessions = _prefixed(ctx.shape.prefix, sessions, seed)
    return await closed_loop_sessions(ctx.target, sessions, users, budget, workload.max_turns)


def _prefixed(prefix: SharedPrefix, sessions: Iterator[tuple[Turn, ...]], seed: int) -> Iterator[tuple[Turn, ...]]:
    """Sessions whose first turn starts with the stated shared prefix (a system prompt's place)."""
    for n, session in enumerate(sessions):
        first = session[0]
        [prompt] = prefix.apply([Prompt(first.text, first.output_tokens, len(first.text.split()))], seed + n)
        yield (Turn(prompt.text, first.output_tokens), *session[1:])


def replayed_rate(run: LevelRun) -> float:
    """A replayed level's offered rate: its requests over its schedule's span (its first to its last arrival)."""
    times = [r.scheduled for r in run.records]
    span = max(times) - min(times) if times else 0.0
    return round((len(times) - 1) / span, 4) if span > 0 else 0.0


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
    if plan.mode == "trace":  # a replay's levels are open loop at the rate each speed-up gives the trace
        return Sweep(sweep_id or uuid.uuid4().hex, "request-rate", levels, "trace", None, plan.loads)
    return Sweep(sweep_id or uuid.uuid4().hex, plan.mode, levels, arrival, burstiness)


class LevelRefused(Exception):
    """A measured level whose document the protocol refuses (a window under 1 s, too few completed requests...):
    it is not written; the message says which level and why."""


async def run(ctx: Context, plan: LoadPlan, objectives: Objectives, emit: Emit, export: bool = True) -> list[Level]:
    """Check, then measure every level, calling `emit(document, export)` as each is done (`export`: the level's
    per-request JSONL, named by the document; with export False, None and the document names none). Raises Refused
    before any load; LevelRefused after the levels before it were emitted (the sweep stops there)."""
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
    return await _levels(ctx, plan, objectives, info, emit, export)


async def _levels(
    ctx: Context,
    plan: LoadPlan,
    objectives: Objectives,
    info: probe.EndpointInfo,
    emit: Emit,
    export: bool,
) -> list[Level]:
    loads = (
        list(plan.loads) if plan.mode != "automatic" else [plan.start * plan.factor**i for i in range(plan.max_levels)]
    )
    done: list[Level] = []
    best: Level | None = None
    async with client(ctx.target, 2) as http:
        for index, load in enumerate(loads):
            if plan.only is not None and index != plan.only:
                continue
            measured, delta = await _level(ctx, plan, objectives, http, index, load, export)
            level = measured.level
            stop = _stop(level, best, plan) if plan.mode == "automatic" else None
            if plan.mode == "automatic" and stop is None and index == len(loads) - 1:
                stop = f"the planned {plan.max_levels} levels were measured"
            emit(_document(ctx, measured, stop, info, delta), measured.requests)
            done.append(level)
            if best is None or level.tokens_per_second() > best.tokens_per_second():
                best = level
            if stop is not None:
                break
    return done


async def _level(
    ctx: Context, plan: LoadPlan, objectives: Objectives, http: httpx.AsyncClient, index: int, load: float, export: bool
) -> tuple[Measured, dict[str, float]]:
    """Warm up, then measure level `index`: the level with its export's bytes, and the endpoint's counters over it
    (read after the warm-up, so they hold the level's requests only)."""
    load = round(load, 4) if plan.open_loop else load
    warmup = await _warm_up(ctx, plan, index)
    before = await probe.metrics(http, probe.side_deadline(ctx.target))
    mode = "request-rate" if plan.open_loop else "concurrency"
    async with watch.watching(ctx.telemetry) as watched:
        run = rebased(await _measure(ctx, plan, load, index))
    level = Level(mode, replayed_rate(run) if plan.mode == "trace" else load, run, objectives)
    after = await probe.metrics(http, probe.side_deadline(ctx.target))
    told = watch.summary(watched) if watched is not None else None
    requests = to_jsonl(level.run.records) if export else None
    return Measured(level, index, warmup, requests, told), _delta(before, after)


def _document(
    ctx: Context, measured: Measured, stop: str | None, info: probe.EndpointInfo, delta: dict[str, float]
) -> dict[str, Any]:
    level, index = measured.level, measured.index
    try:
        return document(ctx, measured, stop, info, delta)
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


def run_sync(ctx: Context, plan: LoadPlan, objectives: Objectives, emit: Emit, export: bool = True) -> list[Level]:
    return asyncio.run(run(ctx, plan, objectives, emit, export))
