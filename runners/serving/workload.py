"""A workload from a local file (ShareGPT, sonnet, trace): what `--workload` names, read and checked once, giving the
prompts, the sessions or the replay schedule of each level, and its request_shape fields (runners/serving/datasets).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from protocol.rules import MIN_WINDOW_ITERATIONS

from .datasets import (
    MOONCAKE_BLOCK_TOKENS,
    TIME_UNITS,
    Conversations,
    Sonnet,
    TraceRequest,
    Turn,
    file_sha256,
    read_sharegpt,
    read_sonnet,
    read_trace,
    sharegpt_prompts,
    trace_schedule,
)
from .loadgen import Prompt

SOURCES = ("sharegpt", "sonnet", "trace")


@dataclass(frozen=True)
class Workload:
    """`source` one of SOURCES, read from `path`. Sonnet takes its lengths from the request shape's means;
    `max_turns` (ShareGPT only) runs whole conversations as multi-turn sessions."""

    source: str
    path: Path
    sonnet_prefix_tokens: int = 200  # vLLM's default
    max_turns: int | None = None
    time_unit: str = "ms"  # a trace's numeric timestamps (Mooncake: ms)
    block_tokens: int = MOONCAKE_BLOCK_TOKENS

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"a file workload is one of {', '.join(SOURCES)}, not {self.source!r}")
        if self.max_turns is not None and (self.source != "sharegpt" or not 1 <= self.max_turns <= 100):
            raise ValueError("multi-turn sessions come from ShareGPT conversations, 1 to 100 turns (--max-turns)")
        if self.time_unit not in TIME_UNITS:
            raise ValueError(f"trace time units: {', '.join(TIME_UNITS)}; not {self.time_unit!r}")
        if not 1 <= self.block_tokens <= 1_000_000 or self.sonnet_prefix_tokens < 0:
            raise ValueError("trace block tokens from 1 to 1,000,000 and a sonnet prefix of 0 tokens or more")

    @property
    def sessions_mode(self) -> bool:
        return self.max_turns is not None

    def conversations(self) -> Conversations:
        return _sharegpt(self.path)

    def sonnet(self, input_tokens: int, output_tokens: int) -> Sonnet:
        return read_sonnet(self.path, input_tokens, self.sonnet_prefix_tokens, output_tokens)

    def trace(self) -> tuple[TraceRequest, ...]:
        return _trace(self.path, self.time_unit)

    def check(self, input_tokens: int, output_tokens: int) -> None:
        """Read the file now: a bad one is refused (DatasetInvalid) before any load."""
        if self.source == "sharegpt":
            self.conversations()
        elif self.source == "sonnet":
            self.sonnet(input_tokens, output_tokens)
        else:
            self.trace()

    def prompts(self, count: int, seed: int, input_tokens: int, output_tokens: int) -> list[Prompt]:
        """Single-turn prompts (ShareGPT's first turns in a seeded order, or sonnet prompts)."""
        rng = np.random.default_rng(seed)
        if self.source == "sharegpt":
            conversations = self.conversations()
            order = rng.permutation(len(conversations.sessions))
            shuffled = Conversations(tuple(conversations.sessions[i] for i in order), conversations.skipped)
            return sharegpt_prompts(shuffled, count)
        if self.source == "sonnet":
            return self.sonnet(input_tokens, output_tokens).prompts(count, rng)
        raise ValueError("a trace is replayed at its own times (--trace-speedups), not drawn as prompts")

    def sessions(self, seed: int) -> Iterator[tuple[Turn, ...]]:
        """Conversations in a seeded order, cycled without end (a level takes as many as its duration needs)."""
        sessions = self.conversations().sessions
        for n in itertools.count():
            for i in np.random.default_rng(seed * 1_000_003 + n).permutation(len(sessions)):
                yield sessions[i]

    def replay(self, speedup: float, seconds: float, most: int) -> tuple[list[Prompt], np.ndarray]:
        return trace_schedule(self.trace(), speedup, seconds, most, self.block_tokens)

    def check_replay(self, speedups: tuple[float, ...], seconds: float, most: int) -> None:
        """Each level's window of the trace must hold a measurable level: ValueError naming the speed-up if not."""
        for speedup in speedups:
            prompts, offsets = self.replay(speedup, seconds, most)
            span = float(offsets[-1]) if len(offsets) else 0.0
            if len(prompts) < MIN_WINDOW_ITERATIONS or span <= 0:
                raise ValueError(
                    f"{self.path}: at speed-up {speedup:g} the requests arriving within --duration {seconds:g} s "
                    f"(at most --max-requests {most}) are {len(prompts)} spanning {span:.3f} s: a level needs at "
                    f"least {MIN_WINDOW_ITERATIONS} requests arriving over a positive span"
                )

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """Input and output tokens of each request the file describes (first turns for ShareGPT)."""
        if self.source == "trace":
            trace = self.trace()
            return np.asarray([r.input_tokens for r in trace]), np.asarray([r.output_tokens for r in trace])
        turns = [t for s in self.conversations().sessions for t in (s if self.sessions_mode else s[:1])]
        return np.asarray([len(t.text.split()) for t in turns]), np.asarray([t.output_tokens for t in turns])

    def digest(self) -> str:
        return _digest(self.path)

    def notes(self) -> str:
        if self.source == "sharegpt":
            c = self.conversations()
            turns = f"whole conversations up to {self.max_turns} turns" if self.sessions_mode else "first turns"
            return (
                f"ShareGPT: {len(c.sessions)} conversations kept, {c.skipped} skipped (under 2 turns or 4 tokens); "
                f"{turns}, the reference reply's length as the output tokens; tokens counted as words"
            )
        if self.source == "sonnet":
            return (
                f"sonnet: base prompt and the file's first lines up to {self.sonnet_prefix_tokens} tokens fixed, "
                "then lines drawn with the seed to the input length; tokens counted as words"
            )
        return (
            f"trace replay: {len(self.trace())} requests, arrivals at the trace's times ({self.time_unit}) over the "
            f"speed-up, its input and output lengths; hash_ids blocks of {self.block_tokens} tokens share text"
        )


# The files are read once per process (a level, and every level of a sweep, reuses them): keyed by path and the
# file's size and modification time, so a file changed between runs is read again.
@lru_cache(maxsize=4)
def _cached(kind: str, path: Path, stamp: tuple[int, int], option: str) -> Any:
    if kind == "sharegpt":
        return read_sharegpt(path)
    if kind == "trace":
        return read_trace(path, option)
    return file_sha256(path)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError:
        return (0, 0)  # the reader refuses the missing file by name
    return (info.st_size, info.st_mtime_ns)


def _sharegpt(path: Path) -> Conversations:
    out: Conversations = _cached("sharegpt", path, _stamp(path), "")
    return out


def _trace(path: Path, unit: str) -> tuple[TraceRequest, ...]:
    out: tuple[TraceRequest, ...] = _cached("trace", path, _stamp(path), unit)
    return out


def _digest(path: Path) -> str:
    out: str = _cached("sha256", path, _stamp(path), "")
    return out
