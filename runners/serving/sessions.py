"""Multi-turn sessions measured, and the figures a workload adds to a level (per-turn, prefix cache).

A session is one ShareGPT conversation (runners/serving/datasets). It runs closed loop, the way a user chats and as
vLLM's multi-turn serving benchmark drives its clients: turn k+1 is sent when turn k's answer has ended, and carries
the conversation so far (every earlier human turn and the endpoint's own streamed answer to it, as chat messages),
so each turn's prompt grows by what was said before it. N users each run one session after another. A turn that
fails (error, timeout, cut stream) ends its session: the next turn would carry an answer that was never given.

A user starts no new session once the level's duration has passed and its minimum request count was started; a
session already started runs to its end (or to the level's request cap), so the level measures whole sessions.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import stats
from .datasets import Turn, words
from .loadgen import LevelRun, Prompt, Record, Target, monitored, send, streams

if TYPE_CHECKING:
    import aiohttp


@dataclass
class SessionRun(LevelRun):
    """A level of sessions: the records (with their session and turn) and the turns each session planned."""

    planned_turns: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionBudget:
    """When a user starts another session: before `seconds`, or until `min_requests` were started; and never past
    `max_requests` requests in all (a session under way stops there)."""

    seconds: float
    min_requests: int
    max_requests: int

    def more(self, started: int, elapsed: float) -> bool:
        if started >= self.max_requests:
            return False
        return elapsed < self.seconds or started < self.min_requests


async def closed_loop_sessions(
    target: Target, sessions: Iterable[Sequence[Turn]], users: int, budget: SessionBudget, max_turns: int
) -> SessionRun:
    """`users` users, each running sessions one after another (module docstring), until the budget says stop."""
    records: list[Record] = []
    planned: dict[int, int] = {}
    queue, numbers = iter(sessions), itertools.count()

    async def user(http: aiohttp.ClientSession, origin: float) -> None:
        scheduled = time.perf_counter()
        while budget.more(len(records), scheduled - origin) and (session := next(queue, None)) is not None:
            number = next(numbers)
            planned[number] = min(len(session), max_turns)
            scheduled = await _session(http, number, session[:max_turns], scheduled)

    async def _session(http: aiohttp.ClientSession, number: int, turns: Sequence[Turn], scheduled: float) -> float:
        history: tuple[tuple[str, str], ...] = ()
        for k, turn in enumerate(turns, 1):
            if len(records) >= budget.max_requests:
                break
            record = Record(len(records), scheduled, session=number, turn=k, answer=[])
            records.append(record)
            said = sum(words(content) for _, content in history)
            await send(http, target, Prompt(turn.text, turn.output_tokens, said + words(turn.text), history), record)
            scheduled = record.end
            answer, record.answer = "".join(record.answer or ()), None
            if record.outcome != "completed":
                break
            history = (*history, ("user", turn.text), ("assistant", answer))
        return scheduled

    async with streams(target, users) as http, monitored() as monitor:
        origin = time.perf_counter()
        await asyncio.gather(*(user(http, origin) for _ in range(users)))
    return SessionRun(records, monitor, origin, len(records), planned)


# --- what a workload adds to the level's metrics ----------------------------------------------------------------


def workload_metrics(run: LevelRun) -> dict[str, Any]:
    """metrics.prefix_cache where the server reported cached tokens, metrics.sessions for a level of sessions."""
    out: dict[str, Any] = {}
    cache = prefix_cache(run.records)
    if cache is not None:
        out["prefix_cache"] = cache
    if isinstance(run, SessionRun):
        out["sessions"] = session_figures(run)
    return out


def prefix_cache(records: Sequence[Record]) -> dict[str, Any] | None:
    """Cached over prompt tokens of the completed requests whose usage said how many were cached; None: none did."""
    done = [r for r in records if r.outcome == "completed"]
    told = [r for r in done if r.cached_tokens is not None]
    if not told:
        return None
    cached, prompt = sum(r.cached_tokens or 0 for r in told), sum(r.input_tokens for r in told)
    return {
        "hit_rate": round(cached / prompt, 6) if prompt else 0.0,
        "cached_tokens": cached,
        "prompt_tokens": prompt,
        "requests_reporting": len(told),
        "requests": len(done),
    }


def session_figures(run: SessionRun) -> dict[str, Any]:
    """Sessions started and completed (every planned turn answered), and each turn's counts and distributions."""
    by_session: dict[int, list[Record]] = {}
    for r in run.records:
        if r.session is not None:
            by_session.setdefault(r.session, []).append(r)
    completed = sum(
        len(rs) == run.planned_turns.get(s) and all(r.outcome == "completed" for r in rs)
        for s, rs in by_session.items()
    )
    turns = sorted({r.turn for r in run.records if r.session is not None})
    return {"started": len(by_session), "completed": completed, "turns": [_turn(run.records, k) for k in turns[:100]]}


def _turn(records: Sequence[Record], k: int) -> dict[str, Any]:
    sent = [r for r in records if r.turn == k and r.sent == r.sent]
    done = [r for r in sent if r.outcome == "completed"]
    out: dict[str, Any] = {"turn": k, "sent": len(sent), "completed": len(done)}
    if done:
        out["input_tokens_mean"] = round(float(np.mean([r.input_tokens for r in done])), 4)
        out["ttft_ms"] = stats.distribution([r.ttft_ms for r in done])
        out["latency_ms"] = stats.distribution([r.latency_ms for r in done])
    return out


def session_words(run: LevelRun) -> str | None:
    """The sessions of a level in words (the load note), or None for a level without sessions."""
    if not isinstance(run, SessionRun):
        return None
    turns = [r.turn for r in run.records]
    most = max(turns) if turns else 0
    mean = sum(run.planned_turns.values()) / len(run.planned_turns) if run.planned_turns else math.nan
    return (
        f"multi-turn sessions: {len(run.planned_turns)} started, {mean:.2f} turns planned on average, up to turn "
        f"{most}; each turn sent when the previous answer ended, carrying the conversation so far"
    )
