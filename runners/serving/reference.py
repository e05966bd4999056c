"""The reference endpoint: the bundled decoder (decoder-small, runners/workloads.py) behind the OpenAI API.

Real forward passes and real tokens: a prompt's words map to token ids (a stable hash of each word modulo the
vocabulary), the backend's prefill and KV-cached greedy decode (the inference runner's own path, runners/queries)
generate `max_tokens` ids, and each id is streamed as the word "t<id>" the moment it is computed. One engine
thread runs the model, one request at a time, in arrival order; requests beyond it wait (capacity 1: the
knee of a sweep is one request's service rate). The weights are the seeded synthetic ones: the text is
meaningless, the work is the model's.

    benchreg serve-model --port 8000 [--backend torch --device cuda --precision bf16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import queue
import threading
from collections.abc import AsyncIterator
from typing import Any

import numpy as np

from runners.arguments import SEED
from runners.arguments import port as port_number

from .. import __version__
from ..backends import get_backend
from ..spec import PRECISIONS, available_threads
from ..workloads import get
from . import httpserver
from .openai_api import FAULTS, OpenAIApi

WORKLOAD = "decoder-small"
MAX_PROMPT_TOKENS = 1024
_DONE = object()


def token_ids(prompt: str, vocabulary: int) -> np.ndarray:
    """One token per whitespace word: a stable hash of the word modulo the vocabulary (at least one token)."""
    words = prompt.split()[-MAX_PROMPT_TOKENS:] or ["<empty>"]
    return np.asarray(
        [int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "big") % vocabulary for w in words],
        dtype=np.int64,
    )


class DecoderEngine:
    """Runs generation on one thread; each request's tokens are handed to its coroutine as they are made."""

    engine = "benchreg-reference"
    version = __version__

    def __init__(self, backend: str | None, device: str, precision: str, seed: int, model: str) -> None:
        self.model = model
        self.workload = get(WORKLOAD)
        self.backend = get_backend(backend, device)
        self.backend.check("inference", self.workload, precision)
        self.backend.configure(available_threads(), precision)
        self.net = self.backend.build(self.workload, precision, seed)
        self._jobs: queue.Queue[Any] = queue.Queue()
        self.running = 0
        self.waiting = 0
        threading.Thread(target=self._work, name="reference-engine", daemon=True).start()

    def gauges(self) -> dict[str, float]:
        return {"num_requests_running": self.running, "num_requests_waiting": self.waiting}

    def _work(self) -> None:
        while True:
            prompt, max_tokens, loop, out = self._jobs.get()
            self.waiting -= 1
            self.running += 1
            try:
                self._generate(prompt, max_tokens, loop, out)
            except Exception as exc:  # the request fails, the engine goes on
                loop.call_soon_threadsafe(out.put_nowait, exc)
            finally:
                self.running -= 1

    def _generate(self, prompt: str, max_tokens: int, loop: asyncio.AbstractEventLoop, out: asyncio.Queue[Any]) -> None:
        b = self.backend
        vocab = self.workload.vocabulary_size
        assert vocab is not None
        ids = b.to_device(token_ids(prompt, vocab)[None, :])
        state = b.prefill(self.net, ids, max_tokens)
        b.synchronize()
        loop.call_soon_threadsafe(out.put_nowait, int(b.predictions(state)[0, -1]))
        for _ in range(max_tokens - 1):
            b.decode(self.net, state)
            b.synchronize()
            loop.call_soon_threadsafe(out.put_nowait, int(b.predictions(state)[0, -1]))
        loop.call_soon_threadsafe(out.put_nowait, _DONE)

    async def generate(self, prompt: str, max_tokens: int) -> AsyncIterator[str]:
        out: asyncio.Queue[Any] = asyncio.Queue()
        self.waiting += 1
        self._jobs.put((prompt, max_tokens, asyncio.get_running_loop(), out))
        while (item := await out.get()) is not _DONE:
            if isinstance(item, Exception):
                raise item
            yield f" t{item}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchreg serve-model", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)",
    )
    p.add_argument("--port", type=port_number, default=8000, help="0: any free port (printed)")
    p.add_argument("--model", default=WORKLOAD, help="the name it is served under")
    p.add_argument(
        "--backend", choices=("numpy", "torch"), default=None, help="default: torch if installed, else numpy"
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu (default) or cuda, which needs torch")
    p.add_argument(
        "--precision", choices=PRECISIONS, default="fp32", help="numeric format (default fp32; numpy: fp32 only)"
    )
    p.add_argument("--seed", type=SEED, default=1234, help="seed of the synthetic weights")
    p.add_argument("--fault", choices=FAULTS, default="none", help="misbehave on purpose (tests)")
    return p


async def serve(engine: DecoderEngine, host: str, port: int, fault: str = "none") -> None:
    server = await httpserver.start(OpenAIApi(engine, fault), host, port)
    bound = server.sockets[0].getsockname()
    print(f"serving {engine.model!r} ({engine.backend.name}, {engine.backend.device}) on http://{bound[0]}:{bound[1]}",
          flush=True)  # fmt: skip
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        engine = DecoderEngine(args.backend, args.device, args.precision, args.seed, args.model)
    except ValueError as exc:  # UnsupportedRun: this backend cannot run this precision or device
        print(f"error: {exc}", flush=True)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(engine, args.host, args.port, args.fault))
    return 0
