"""A simulated OpenAI-compatible endpoint whose latency law is known, so measurements can be checked against truth.

The law: `capacity` requests are served at once (a continuous-batching engine's slots); a request arriving when
all are busy waits in a FIFO queue. Once in a slot, its first token comes after a service time drawn from
`ttft`, and each next token after a gap drawn from `itl`; it generates exactly `max_tokens` tokens. Draws come
from one seeded generator in arrival order. So below saturation the TTFT a client sees is the `ttft` law plus
the queue wait (near zero while slots are free), every inter-token gap follows `itl`, and the capacity in
requests/s is `capacity / E[service]` with E[service] = E[ttft] + (tokens - 1) E[itl]: the knee of a sweep.

Tokens are emitted at absolute deadlines (slot start + the drawn times), so timer overshoot never accumulates.

A cold start (`--cold-requests K --cold-ms C`): the first K requests a worker serves take C ms more to their first
token (a fresh engine's compilation and cache fills), which a warm-up must absorb. Reasoning and tool-call streams
(`--reasoning-tokens R`, `--answer tool-call`, openai_api.StreamStyle) change how the tokens are presented, never
when: the first answer token is token R + 1, so its time is the first token's plus R gaps drawn from `itl` (with a
constant `itl`, exactly TTFT + R × ITL).

`--workers N` answers from N processes accepting on one listening socket (one Python process answers a few
thousand requests/s, which a client's ceiling bench must not hit first); each worker is the law with its own
`capacity` slots and seed (seed + worker number), so the law per request holds and the capacity is N times.

    python -m runners.serving.simulated --port 8100 --ttft-ms 80 --ttft-sigma 0.3 --itl-ms 15 --itl-sigma 0.2 \\
        --capacity 16 --seed 7
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import multiprocessing
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from runners.arguments import SEED, count, number
from runners.arguments import port as port_number

from . import httpserver
from .openai_api import ANSWERS, FAULTS, REASONING_FIELDS, OpenAIApi, PrefixCache, StreamStyle

SIMULATED_VERSION = "1.0"


DELAY_MS = number(0, 3_600_000)  # a delay of the law, in ms: an hour at most
SIGMA = number(0, 3)  # Delay's own bound on the lognormal sigma


@dataclass(frozen=True)
class Delay:
    """A delay law in ms: lognormal with this median and log-space sigma (sigma 0: the constant `median_ms`)."""

    median_ms: float
    sigma: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.median_ms) and self.median_ms >= 0 and 0 <= self.sigma <= 3):
            raise ValueError(f"a delay needs a median >= 0 ms and 0 <= sigma <= 3, not {self}")

    @property
    def mean_ms(self) -> float:
        return self.median_ms * math.exp(self.sigma**2 / 2)

    def quantile(self, q: float) -> float:
        """The law's q-quantile (0-1) in ms."""
        if self.sigma == 0 or self.median_ms == 0:
            return self.median_ms
        return float(sps.lognorm.ppf(q, self.sigma, scale=self.median_ms))

    def density(self, x_ms: float) -> float:
        """The law's density at x (per ms): the sampling error of a quantile estimate depends on it."""
        if self.sigma == 0 or self.median_ms == 0:
            return math.inf
        return float(sps.lognorm.pdf(x_ms, self.sigma, scale=self.median_ms))

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.sigma == 0:
            return np.full(size, self.median_ms)
        return np.asarray(self.median_ms * np.exp(rng.normal(0.0, self.sigma, size)))


@dataclass(frozen=True)
class Law:
    """The simulated engine's latency law (module docstring)."""

    ttft: Delay
    itl: Delay
    capacity: int = 16
    seed: int = 0
    cold_requests: int = 0
    cold_ms: float = 0.0

    def service_ms(self, output_tokens: float) -> float:
        """Mean time a request holds a slot, in ms."""
        return self.ttft.mean_ms + max(output_tokens - 1, 0) * self.itl.mean_ms

    def capacity_rps(self, output_tokens: float) -> float:
        """Requests per second the slots complete at saturation: where throughput stops growing."""
        return self.capacity / (self.service_ms(output_tokens) / 1e3)


def queue_ttft_ms(
    law: Law, rate: float, output_tokens: int, count: int, seed: int, arrivals_ms: np.ndarray | None = None
) -> np.ndarray:
    """TTFTs (ms) of `count` Poisson arrivals at `rate` under `law`, by discrete-event simulation of the slots.

    What the law predicts a perfect client would measure, queueing included: tests place a sweep's knee with it.
    `arrivals_ms` gives the arrival times instead (a runner's own schedule); the service times are still drawn.
    """
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1e3 / rate, count)) if arrivals_ms is None else arrivals_ms
    ttft = law.ttft.draw(rng, count)
    service = ttft + law.itl.draw(rng, count * max(output_tokens - 1, 0)).reshape(count, -1).sum(axis=1)
    free = np.zeros(law.capacity)  # when each slot frees up (ms)
    out = np.empty(count)
    for i, t in enumerate(arrivals):
        slot = int(np.argmin(free))
        start = max(t, free[slot])
        free[slot] = start + service[i]
        out[i] = start - t + ttft[i]
    return out


class SimulatedEngine:
    """Generates tokens on the law's schedule (see the module docstring)."""

    engine = "benchreg-simulated"
    version = SIMULATED_VERSION

    def __init__(self, law: Law, model: str = "simulated") -> None:
        self.law, self.model = law, model
        self._rng = np.random.default_rng(law.seed)
        self._slots: asyncio.Semaphore | None = None
        self.running = 0
        self.waiting = 0
        self.arrived = 0

    def gauges(self) -> dict[str, float]:
        return {"num_requests_running": self.running, "num_requests_waiting": self.waiting}

    async def generate(self, prompt: str, max_tokens: int) -> AsyncIterator[str]:
        # Draws happen on arrival, in arrival order, so a seed fixes every request's times.
        ttft = float(self.law.ttft.draw(self._rng, 1)[0])
        self.arrived += 1
        if self.arrived <= self.law.cold_requests:
            ttft += self.law.cold_ms
        gaps = self.law.itl.draw(self._rng, max(max_tokens - 1, 0))
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.law.capacity)
        loop = asyncio.get_running_loop()
        self.waiting += 1
        async with self._slots:
            self.waiting -= 1
            self.running += 1
            try:
                deadline = loop.time() + ttft / 1e3
                for i in range(max_tokens):
                    if i:
                        deadline += float(gaps[i - 1]) / 1e3
                    delay = deadline - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    yield f" w{i % 1000}"
            finally:
                self.running -= 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchreg serve-simulated", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)",
    )
    p.add_argument("--port", type=port_number, default=8100, help="0: any free port (printed)")
    p.add_argument("--model", default="simulated", help="the name it is served under (default simulated)")
    p.add_argument("--ttft-ms", type=DELAY_MS, default=50.0, help="median service time to the first token (ms)")
    p.add_argument("--ttft-sigma", type=SIGMA, default=0.25, help="lognormal sigma of it (0: constant)")
    p.add_argument("--itl-ms", type=DELAY_MS, default=10.0, help="median gap between tokens (ms)")
    p.add_argument("--itl-sigma", type=SIGMA, default=0.2, help="lognormal sigma of it (0: constant)")
    p.add_argument(
        "--capacity", type=count(1, 100_000), default=16, help="requests served at once; more wait in a queue"
    )
    p.add_argument("--seed", type=SEED, default=0, help="seed of the latency draws (worker N: seed + N)")
    p.add_argument("--fault", choices=FAULTS, default="none", help="misbehave on purpose (tests)")
    p.add_argument(
        "--workers", type=count(1, 256), default=1, help="processes answering on the port (each with --capacity)"
    )
    p.add_argument(
        "--cold-requests", type=count(0, 10_000_000), default=0, help="the first N requests of a worker are cold ..."
    )
    p.add_argument("--cold-ms", type=DELAY_MS, default=0.0, help="... and take this much more to their first token")
    p.add_argument(
        "--reasoning-tokens", type=count(0, 1_000_000), default=0, help="chat: the first N tokens are reasoning"
    )
    p.add_argument(
        "--reasoning-field",
        choices=REASONING_FIELDS,
        default="reasoning_content",
        help="the chat delta's field for reasoning tokens: reasoning_content (default; vLLM < 0.11) or reasoning",
    )
    p.add_argument("--answer", choices=ANSWERS, default="text", help="chat: the answer as content or a tool call")
    p.add_argument("--prefix-cache", action="store_true", help="report cached prompt tokens (16-token blocks)")
    p.add_argument("--log", default=None, help="append one JSON line per request received (tests: what was sent)")
    return p


@dataclass(frozen=True)
class Extras:
    """What the API streams, reports or records beyond the law: reasoning and tool-call streams, a prefix cache's
    hits, a log of the requests received."""

    style: StreamStyle = field(default_factory=StreamStyle)
    prefix_cache: bool = False
    log: str | None = None


async def serve(
    law: Law, listener: socket.socket, model: str, fault: str = "none", extras: Extras | None = None
) -> None:
    """Answer on `listener` until SIGTERM (then return quietly: the streams in flight are dropped)."""
    extras = extras or Extras()
    log = open(extras.log, "a", encoding="utf-8") if extras.log else None  # noqa: SIM115 (open while serving)
    cache = PrefixCache() if extras.prefix_cache else None
    api = OpenAIApi(SimulatedEngine(law, model), fault, extras.style, cache, log)
    server = await httpserver.start_on(api, listener)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with server:
        await stop.wait()


def _worker(law: Law, listener: socket.socket, model: str, fault: str, extras: Extras) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(law, listener, model, fault, extras))


def _laws(args: argparse.Namespace) -> list[Law]:
    """One law per worker, each with its own seed (the module docstring)."""
    ttft, itl = Delay(args.ttft_ms, args.ttft_sigma), Delay(args.itl_ms, args.itl_sigma)
    return [Law(ttft, itl, args.capacity, args.seed + n, args.cold_requests, args.cold_ms) for n in range(args.workers)]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.capacity < 1 or args.workers < 1:
        print("error: --capacity and --workers must be at least 1", flush=True)
        return 2
    if args.cold_requests < 0 or not args.cold_ms >= 0 or args.reasoning_tokens < 0:
        print("error: --cold-requests, --cold-ms and --reasoning-tokens must be at least 0", flush=True)
        return 2
    style = StreamStyle(args.reasoning_tokens, args.reasoning_field, args.answer)
    listener = httpserver.listen(args.host, args.port)
    bound = listener.getsockname()
    print(f"serving {args.model!r} on http://{bound[0]}:{bound[1]}", flush=True)
    laws = _laws(args)
    # On SIGTERM each process's loop stops (serve); this one then exits through its exit handlers, which stop the
    # daemon workers too.
    forked = multiprocessing.get_context("fork")  # the children inherit the listening socket
    extras = Extras(style, args.prefix_cache, args.log)
    others = [forked.Process(target=_worker, args=(law, listener, args.model, args.fault, extras)) for law in laws[1:]]
    for process in others:
        process.daemon = True
        process.start()
    _worker(laws[0], listener, args.model, args.fault, extras)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
