"""The load generator: streaming requests to an OpenAI-compatible endpoint, open or closed loop, in one event loop.

Open loop (request rate): every arrival time is drawn before the level starts (Poisson, or gamma with shape k =
burstiness) and each request is sent at its time whether or not earlier ones finished; its latency, TTFT and
dispatch lag run from the SCHEDULED arrival, so a slow endpoint or a slow client is charged, never hidden (no
coordinated omission). Closed loop (concurrency N): N users, each sending its next request when its previous
one ends; a request's scheduled time is that end.

Per request it keeps the send time, the time of every streamed event that carried a token (answer text, a tool
call's fragment or reasoning: runners/serving/deltas), the time of the first answer token (text or tool call, not
reasoning), the end, the token counts (the server's usage event where it sends one, reasoning tokens included
where it reports them, else one token per token event) and the outcome: completed, error (HTTP status,
connection failure, malformed SSE or delta, an error event), timeout, or incomplete (the stream ended before
`data: [DONE]`). Every request sent is counted in exactly one outcome.

Streams go over aiohttp (its HTTP parser is compiled: one streamed chunk costs the client a few microseconds,
where httpx's pure-Python h11 costs tens, which is the difference between 1,000 concurrent streams keeping up or
not); the endpoint's side requests (/v1/models, /metrics) use httpx.

Timing. The event loop's timers round a wait UP to the next millisecond (epoll's timeout is in ms), so a plain
`asyncio.sleep` sends a request up to 1 ms after its time. On Linux the dispatcher waits on a timerfd armed at
the scheduled time (runners/serving/alarm.py), and the loop sleeps until it fires (~0.1 ms late on an idle
virtual CPU, which takes that long to wake); elsewhere it sleeps to just before the time and yields to the loop
(which keeps serving streams) until it is due, spinning through the last 1.5 ms. Either way a request never
leaves early.

A monitor coroutine measures what starves the client. It wakes on a fixed 5 ms grid with the loop's own timer
and records how late each wake-up came (the oversleep: the callbacks and I/O ahead of it, and the time the
OS kept the process off a CPU, which a zero-length yield never sees, since a descheduled process resumes where
it stopped); grid points it slept through are due but not taken. At each wake-up it also yields once and times
how long the loop took to come back to it. Around the level it reads the process's CPU time and, on Linux, the
time its thread waited on a run queue (/proc/thread-self/schedstat). A loop that comes back late stamps chunks
late, so these figures are judged beside the dispatch lag when deciding whether the client kept up
(runners/serving/levels).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
import orjson

from .alarm import Alarm
from .deltas import ANSWER, DeltaError, answer_text, token_kind

if TYPE_CHECKING:
    import aiohttp

OUTCOMES = ("completed", "errors", "timeouts", "incomplete")
# Bounds on what an endpoint may send (a hostile or broken one must not exhaust the client's memory): one SSE
# event (a token's chunk is a few hundred bytes), the body of an error answer kept for its message, and the token
# counts a usage report may state.
MAX_EVENT_BYTES = 1024 * 1024
MAX_ERROR_BODY = 4096
MAX_PROMPT_TOKENS = 10_000_000
# The monitor's grid: fine enough that a stall of a few ms shows, coarse enough to cost the loop nothing.
MONITOR_PERIOD_S = 0.005
# How long before a scheduled time the dispatcher stops sleeping and yields instead: the timers' rounding up
# to a whole millisecond, and the kernel's timer slack (50 us by default), with a margin.
_TIMER_SLACK_S = 0.0015


@dataclass(frozen=True)
class Prompt:
    """One request's content: the prompt text, the output tokens asked for, the input tokens as the client counts."""

    text: str
    max_tokens: int
    input_tokens: int
    # A session's turn: the conversation so far, (role, content) each, sent before `text` (chat API only).
    history: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Target:
    """Where and how to send: base URL (scheme://host:port), served model, API kind, per-request timeout."""

    base_url: str
    model: str
    api: str = "chat"
    timeout_s: float = 300.0
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def path(self) -> str:
        return "/v1/chat/completions" if self.api == "chat" else "/v1/completions"

    def body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": prompt.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            # vLLM and SGLang: generate exactly max_tokens, so the output length is the request shape's.
            "ignore_eos": True,
            "min_tokens": prompt.max_tokens,
            "temperature": 0.0,
        }
        if self.api == "chat":
            said = [{"role": role, "content": content} for role, content in prompt.history]
            body["messages"] = [*said, {"role": "user", "content": prompt.text}]
        else:
            body["prompt"] = prompt.text
        return body


@dataclass
class Record:
    """One request, times in seconds on the perf_counter clock."""

    index: int
    scheduled: float
    sent: float = math.nan
    chunks: list[float] = field(default_factory=list)  # arrival of each event that carried a token
    end: float = math.nan
    outcome: str = "incomplete"
    detail: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    usage: bool = False  # the counts are the server's usage report
    first_answer: float = math.nan  # arrival of the first answer token (text or tool call; NaN: none came)
    reasoning_tokens: int | None = None  # the usage report's completion_tokens_details.reasoning_tokens
    cached_tokens: int | None = None  # the usage report's prompt_tokens_details.cached_tokens, where it says
    session: int | None = None  # a multi-turn session's number (runners/serving/sessions), and its turn (1, 2, ...)
    turn: int = 0
    answer: list[str] | None = None  # the streamed answer text, kept where a session must carry it to its next turn

    @property
    def ttft_ms(self) -> float:
        """To the first token of any kind, reasoning included (what the server's first step took)."""
        return (self.chunks[0] - self.scheduled) * 1e3

    @property
    def ttfot_ms(self) -> float | None:
        """To the first answer token (reasoning excluded): aiperf's TTFO, guidellm's TTFOT; None without one."""
        return (self.first_answer - self.scheduled) * 1e3 if self.first_answer == self.first_answer else None

    @property
    def latency_ms(self) -> float:
        return (self.end - self.scheduled) * 1e3

    @property
    def dispatch_lag_ms(self) -> float:
        return (self.sent - self.scheduled) * 1e3

    def gaps_ms(self) -> np.ndarray:
        return np.diff(np.asarray(self.chunks)) * 1e3

    @property
    def tpot_ms(self) -> float | None:
        """(e2e − TTFT) / (output tokens − 1): the vLLM / GenAI-Perf definition; None for one token."""
        if self.output_tokens < 2:
            return None
        return (self.end - self.chunks[0]) * 1e3 / (self.output_tokens - 1)

    @property
    def user_rate(self) -> float | None:
        """Output tokens ÷ (e2e − TTFT): what one user sees, in tokens/s; None without a decode time."""
        decode = self.end - self.chunks[0] if self.chunks else 0.0
        return self.output_tokens / decode if decode > 0 and self.output_tokens > 1 else None


class StreamError(Exception):
    """The answer broke the protocol (malformed SSE, an error event, not a stream): the request is an error."""


class SseReader:
    """Incremental server-sent-events parser: feed bytes, get the data payloads of complete events."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[str]:
        self._buffer += data.replace(b"\r\n", b"\n")
        *events, self._buffer = self._buffer.split(b"\n\n")
        if len(self._buffer) > MAX_EVENT_BYTES:
            raise StreamError(f"malformed SSE: an event longer than {MAX_EVENT_BYTES} bytes (no blank line ends it)")
        out = []
        for event in events:
            lines = [ln[5:].lstrip() for ln in event.split(b"\n") if ln.startswith(b"data:")]
            if lines:
                out.append(b"\n".join(lines).decode("utf-8", "replace"))
        return out

    @property
    def pending(self) -> bool:
        return bool(self._buffer.strip())


def _event(payload: str) -> dict[str, Any]:
    try:
        event = orjson.loads(payload)  # a quarter of json's cost per event, the client's commonest work
    except orjson.JSONDecodeError:  # or what orjson refuses and json reads (NaN, integers past 64 bits): the
        try:  # request is then refused by the field (_count), as json reads it, not as "not JSON"
            event = json.loads(payload)
        except ValueError:
            raise StreamError(f"malformed SSE: data is not JSON: {payload[:80]!r}") from None
    if not isinstance(event, dict):
        raise StreamError(f"malformed SSE: data is not a JSON object: {payload[:80]!r}")
    if "error" in event:
        raise StreamError(f"error event: {str(event['error'])[:200]}")
    return event


async def _consume(response: aiohttp.ClientResponse, record: Record, asked: int) -> bool:
    """Read the stream into `record`; True when it ended with [DONE]. `asked`: the output tokens requested."""
    reader = SseReader()
    async for data in response.content.iter_any():
        now = time.perf_counter()
        for payload in reader.feed(data):
            if payload == "[DONE]":
                return True
            event = _event(payload)
            _stamp(record, event, now)
            usage = event.get("usage")
            if isinstance(usage, dict) and "completion_tokens" in usage:
                _read_usage(record, usage, asked)
    return False


def _stamp(record: Record, event: dict[str, Any], now: float) -> None:
    try:
        kind = token_kind(event)
    except DeltaError as exc:
        raise StreamError(str(exc)) from None
    if kind is not None:
        record.chunks.append(now)
        if kind == ANSWER and record.first_answer != record.first_answer:  # still NaN: this is the first
            record.first_answer = now
        if kind == ANSWER and record.answer is not None:
            record.answer.append(answer_text(event))


def _read_usage(record: Record, usage: dict[str, Any], asked: int) -> None:
    record.output_tokens = _count(usage, "completion_tokens", asked)
    record.usage = True
    if "prompt_tokens" in usage:
        record.input_tokens = _count(usage, "prompt_tokens", MAX_PROMPT_TOKENS)
    details = usage.get("completion_tokens_details")
    if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
        # reasoning tokens are a part of the completion tokens (OpenAI's and vLLM's usage)
        where, why = "usage.completion_tokens_details", "the completion tokens they are a part of"
        record.reasoning_tokens = _count(details, "reasoning_tokens", record.output_tokens, where, why)
    cached = usage.get("prompt_tokens_details")
    if isinstance(cached, dict) and cached.get("cached_tokens") is not None:  # at most the prompt
        most = record.input_tokens if "prompt_tokens" in usage else MAX_PROMPT_TOKENS
        where, why = "usage.prompt_tokens_details", "the prompt tokens they are a part of"
        record.cached_tokens = _count(cached, "cached_tokens", most, where, why)


def _count(
    usage: dict[str, Any], key: str, most: int, where: str = "usage", why: str = "the tokens this request allows"
) -> int:
    """A token count of the server's usage report: a whole number from 0 to `most` (for completion tokens, the
    tokens the request asked for), else the request is an error that says what the server sent."""
    value = usage[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise StreamError(f"{where}.{key} is {str(value)[:40]!r}, not a whole number of tokens")
    if not 0 <= value <= most:
        shown = str(value) if len(str(value)) <= 40 else f"a number of {len(str(value))} digits"
        raise StreamError(f"{where}.{key} is {shown}, outside 0 to {most} ({why})")
    return value


async def send(client: aiohttp.ClientSession, target: Target, prompt: Prompt, record: Record) -> Record:
    """Send one request and fill `record`; never raises (every failure is the request's outcome)."""
    import aiohttp  # loaded already (streams): here for its exception types only

    record.input_tokens = prompt.input_tokens
    record.sent = time.perf_counter()
    try:
        async with asyncio.timeout(target.timeout_s):
            await _exchange(client, target, prompt, record)
    except TimeoutError:
        record.outcome, record.detail = "timeouts", f"no complete answer within {target.timeout_s:g} s"
    except StreamError as exc:
        record.outcome, record.detail = "errors", str(exc)
    except (aiohttp.ClientError, OSError) as exc:
        record.outcome, record.detail = "errors", f"{type(exc).__name__}: {exc}"[:300]
    record.end = time.perf_counter()
    if record.outcome == "completed" and not record.usage:
        record.output_tokens = len(record.chunks)
    return record


async def _exchange(client: aiohttp.ClientSession, target: Target, prompt: Prompt, record: Record) -> None:
    url = target.base_url.rstrip("/") + target.path
    # Never follow a redirect: the load would go to another server and be recorded as this one's.
    async with client.post(url, json=target.body(prompt), allow_redirects=False) as response:
        if 300 <= response.status < 400:
            raise StreamError(redirect_refusal(response.status, url, response.headers.get("location")))
        if response.status != 200:
            text = (await response.content.read(MAX_ERROR_BODY)).decode("utf-8", "replace")
            raise StreamError(f"HTTP {response.status}: {text[:200]}")
        kind = response.headers.get("content-type", "")
        if not kind.startswith("text/event-stream"):
            raise StreamError(f"not a stream: content-type {kind or 'absent'} (the server ignored stream=true)")
        done = await _consume(response, record, prompt.max_tokens)
    if done and record.chunks:
        record.outcome = "completed"
    elif done:
        record.outcome, record.detail = "errors", "the stream ended with [DONE] but carried no token"
    else:
        record.detail = f"the stream ended before [DONE] after {len(record.chunks)} token events"


def redirect_refusal(status: int, url: str, location: str | None) -> str:
    """What a redirect answer is told: benchreg measures the server it was pointed at, never another."""
    where = f"point it at {location[:300]} if that is the server you mean" if location else "it named no Location"
    return f"the endpoint answered {status} to {url}; benchreg does not follow redirects: {where}"


@dataclass
class Monitor:
    """What the client measured of itself over a level (module docstring, "Timing").

    `oversleep_ms`: per wake-up, actual − intended wake time of the 5 ms timer; `loop_lag_ms`: per wake-up, how
    long one yield took to come back; `due`: grid points the level spanned, of which `len(oversleep_ms)` were
    taken; `cpu_s` and `wall_s`: the process's CPU time and the wall time over the level; `runqueue_s`: time the
    loop's thread was runnable but not running (None where the OS does not say).
    """

    oversleep_ms: list[float] = field(default_factory=list)
    loop_lag_ms: list[float] = field(default_factory=list)
    due: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    runqueue_s: float | None = None

    @property
    def taken(self) -> int:
        return len(self.oversleep_ms)


@dataclass
class LevelRun:
    """The records of one load level, in scheduled order, and what the client measured of itself."""

    records: list[Record]
    monitor: Monitor
    started: float
    planned: int

    @property
    def loop_lag_ms(self) -> list[float]:
        return self.monitor.loop_lag_ms


def client(target: Target, connections: int) -> httpx.AsyncClient:
    """An httpx client for the endpoint's side requests (/v1/models, /version, /metrics)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    timeout = httpx.Timeout(target.timeout_s, connect=min(30.0, target.timeout_s))
    return httpx.AsyncClient(base_url=target.base_url, limits=limits, timeout=timeout, headers=dict(target.headers))


def streams(target: Target, connections: int) -> aiohttp.ClientSession:
    """The session that carries the streamed requests: up to `connections` open at once, kept alive."""
    # aiohttp (~0.3 s to import) is loaded with the first load level, not with this module: the registry imports
    # the serving runner's spec (and so this module) in every process.
    import aiohttp

    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=connections)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(30.0, target.timeout_s))
    return aiohttp.ClientSession(connector=connector, timeout=timeout, headers=dict(target.headers))


async def wait_until(when: float, alarm: Alarm | None = None) -> None:
    """Return at perf_counter() `when` or just after it: on `alarm` where there is one, else within one loop
    iteration of it (see the module docstring)."""
    if alarm is not None:
        await alarm.at(when)
        return
    coarse = when - time.perf_counter() - _TIMER_SLACK_S
    if coarse > 0:
        await asyncio.sleep(coarse)
    while time.perf_counter() < when:
        await asyncio.sleep(0)


def _runqueue_s() -> float | None:
    """Seconds this thread has waited on a run queue since it started (Linux schedstat), else None."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


async def _monitor(m: Monitor, stop: asyncio.Event) -> None:
    start = time.perf_counter()
    k = 0
    while not stop.is_set():
        due = start + (k + 1) * MONITOR_PERIOD_S
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        woke = time.perf_counter()
        m.oversleep_ms.append((woke - due) * 1e3)
        await asyncio.sleep(0)  # back in the loop's queue, behind whatever is ready now
        m.loop_lag_ms.append((time.perf_counter() - woke) * 1e3)
        # The next grid point after this wake-up: the ones slept through are due and not taken.
        k = max(k + 1, int((time.perf_counter() - start) / MONITOR_PERIOD_S))
    m.due = int((time.perf_counter() - start) / MONITOR_PERIOD_S)


@contextlib.asynccontextmanager
async def monitored() -> AsyncIterator[Monitor]:
    """The client's own figures (Monitor), taken while the block runs, with the garbage collector kept short.

    A full collection walks every object the process holds (numpy, scipy, the modules: ~40 ms here), stalling
    the loop mid-level: requests sent then read 40 ms of TTFT that neither the endpoint nor the load caused. So
    the heap is collected once before the level and frozen (gc.freeze: later collections skip what was alive
    then), and the level's own objects stay cheap to collect.
    """
    gc.collect()
    gc.freeze()
    m = Monitor()
    stop = asyncio.Event()
    cpu, wall, queued = time.process_time(), time.perf_counter(), _runqueue_s()
    task = asyncio.create_task(_monitor(m, stop))
    try:
        yield m
    finally:
        stop.set()
        await task
        m.cpu_s, m.wall_s = time.process_time() - cpu, time.perf_counter() - wall
        now_queued = _runqueue_s()
        m.runqueue_s = now_queued - queued if now_queued is not None and queued is not None else None
        gc.unfreeze()


async def open_loop(target: Target, prompts: Sequence[Prompt], offsets: np.ndarray, max_open: int) -> LevelRun:
    """Send prompts[i] at offsets[i] seconds after the start, whatever is still in flight (up to `max_open`)."""
    async with streams(target, max_open) as http, monitored() as monitor:
        origin = time.perf_counter() + 0.05
        records = [Record(i, origin + float(t)) for i, t in enumerate(offsets)]
        tasks = []
        alarm = Alarm.open()
        try:
            for record, prompt in zip(records, prompts, strict=True):
                await wait_until(record.scheduled, alarm)
                tasks.append(asyncio.create_task(send(http, target, prompt, record)))
        finally:
            if alarm is not None:
                alarm.close()
        await asyncio.gather(*tasks)
    return LevelRun(records, monitor, origin, len(records))


@dataclass(frozen=True)
class _Budget:
    """Whether a closed-loop user starts another request: before `seconds` (None: no limit) or until
    `min_requests` were started, never past `max_requests`."""

    seconds: float | None
    min_requests: int
    max_requests: float

    def more(self, started: int, elapsed: float) -> bool:
        if started >= self.max_requests:
            return False
        return self.seconds is None or elapsed < self.seconds or started < self.min_requests


async def closed_loop(
    target: Target,
    prompts: Iterable[Prompt],
    users: int,
    *,
    seconds: float | None = None,
    min_requests: int = 0,
    max_requests: int | None = None,
) -> LevelRun:
    """`users` users, each sending its next prompt when its previous request ends.

    Without `seconds`, until the prompts run out. With it, a user starts no new request once `seconds` have passed
    and at least `min_requests` were started, and none after `max_requests`: the level lasts its duration
    whatever the endpoint's speed (a fixed count would end a fast endpoint's level too soon).
    """
    budget = _Budget(seconds, min_requests, max_requests if max_requests is not None else math.inf)
    records: list[Record] = []
    queue = iter(prompts)

    async def user(http: aiohttp.ClientSession, origin: float) -> None:
        scheduled = time.perf_counter()
        while budget.more(len(records), scheduled - origin) and (prompt := next(queue, None)) is not None:
            record = Record(len(records), scheduled)
            records.append(record)
            await send(http, target, prompt, record)
            scheduled = record.end

    async with streams(target, users) as http, monitored() as monitor:
        origin = time.perf_counter()
        await asyncio.gather(*(user(http, origin) for _ in range(users)))
    return LevelRun(records, monitor, origin, len(records))


def arrivals(rate: float, count: int, seed: int, burstiness: float = 1.0) -> np.ndarray:
    """Arrival offsets (s) of `count` requests at `rate`/s: gamma gaps of shape k = burstiness (1: Poisson).

    As runners/server.poisson_arrivals, the gaps are rescaled to span exactly (count − 1)/rate, so a level's
    realised rate is its target and not the sampling noise of its own schedule (exact for Poisson: given the
    count, its arrivals are uniform order statistics; for gamma the shape of the gaps is kept).
    """
    if rate <= 0 or count < 1 or burstiness <= 0:
        raise ValueError("arrivals need a positive rate, count and burstiness")
    gaps = np.random.default_rng(seed).gamma(burstiness, 1.0 / (rate * burstiness), size=count)
    gaps[0] = 0.0
    if count > 1:
        gaps[1:] *= (count - 1) / rate / gaps[1:].sum()
    return np.cumsum(gaps)
