"""Request shapes: input and output token counts drawn from stated distributions, or prompts from a JSONL file.

Synthetic prompts are words drawn from a fixed list with a seed; the client counts one input token per word
(the project's endpoints tokenize by words, so the count is exact there; a real tokenizer differs, which is why
the server's usage report, when sent, replaces the client's counts and the document says which was used).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .datasets import SharedPrefix
from .loadgen import Prompt
from .workload import Workload

DISTRIBUTIONS = ("constant", "normal", "uniform", "lognormal")
MAX_PROMPT_FILE_BYTES = 256 * 1024 * 1024
MAX_TOKENS = 1_000_000
_WORD_TEXT = (
    "the of and to in is was for on that with as by at from his her are this be it an were which have or had "
    "not one their but all been they has new more can two first after who other also into time some over"
)
_WORDS = tuple(_WORD_TEXT.split())


@dataclass(frozen=True)
class TokenLaw:
    """A token count's distribution: mean, stdev (normal, lognormal; uniform takes min and max), bounds."""

    mean: float
    stdev: float = 0.0
    distribution: str = "constant"
    min: int | None = None
    max: int | None = None

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"token distributions: {', '.join(DISTRIBUTIONS)}; not {self.distribution!r}")
        if self.distribution == "uniform":
            if self.min is None or self.max is None:
                raise ValueError("a uniform token count needs its min and max")
            if not 1 <= self.min <= self.max <= MAX_TOKENS:
                raise ValueError(f"a uniform token count needs 1 <= min <= max <= {MAX_TOKENS}")
            # Each whole count from min to max is equally likely, so the law's mean and stdev are these, whatever
            # mean and stdev were given: the document states the law the requests were drawn from.
            counts = self.max - self.min + 1
            object.__setattr__(self, "mean", (self.min + self.max) / 2)
            object.__setattr__(self, "stdev", round(math.sqrt((counts * counts - 1) / 12), 6))
        if not (math.isfinite(self.mean) and 1 <= self.mean <= MAX_TOKENS and self.stdev >= 0):
            raise ValueError(f"a token count needs 1 <= mean <= {MAX_TOKENS} and stdev >= 0")

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        lo, hi = self.min or 1, self.max or MAX_TOKENS
        if self.distribution == "constant" or (self.stdev == 0 and self.distribution != "uniform"):
            values = np.full(size, self.mean)
        elif self.distribution == "normal":
            values = rng.normal(self.mean, self.stdev, size)
        elif self.distribution == "uniform":
            values = rng.integers(lo, hi + 1, size)  # rounding a continuous draw gave min half a share, max 1.5
        else:  # lognormal with this mean and stdev
            sigma2 = math.log(1 + (self.stdev / self.mean) ** 2)
            values = rng.lognormal(math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2), size)
        return np.asarray(np.clip(np.rint(values), lo, hi), dtype=np.int64)

    def section(self) -> dict[str, Any]:
        """The protocol's request_shape shape object."""
        return {
            "mean": self.mean,
            "stdev": self.stdev if self.distribution != "constant" else 0.0,
            "min": self.min,
            "max": self.max,
            "distribution": self.distribution,
        }


@dataclass(frozen=True)
class RequestShape:
    """Synthetic (input and output TokenLaws), a dataset (JSONL prompts, with an output law for lines without), or a
    file workload (ShareGPT, sonnet, trace: runners/serving/workload); `prefix`: a stated shared prefix."""

    input: TokenLaw | None
    output: TokenLaw
    dataset: Path | None = None
    workload: Workload | None = None
    prefix: SharedPrefix | None = None

    def prompts(self, count: int, seed: int) -> list[Prompt]:
        """`count` prompts, the shared prefix (if stated) put in place."""
        prompts = self._prompts(count, seed)
        return self.prefix.apply(prompts, seed) if self.prefix is not None else prompts

    def _prompts(self, count: int, seed: int) -> list[Prompt]:
        """A JSONL dataset is cycled through in file order."""
        if self.workload is not None:
            return self.workload.prompts(count, seed, int(self.input.mean if self.input else 0), int(self.output.mean))
        rng = np.random.default_rng(seed)
        outputs = self.output.draw(rng, count)
        if self.dataset is not None:
            lines = read_prompts(self.dataset)
            picked = [lines[i % len(lines)] for i in range(count)]
            return [Prompt(t, m or int(outputs[i]), len(t.split())) for i, (t, m) in enumerate(picked)]
        assert self.input is not None
        inputs = self.input.draw(rng, count)
        return [Prompt(_words(rng, int(n)), int(m), int(n)) for n, m in zip(inputs, outputs, strict=True)]

    def stream(self, seed: int, block: int = 256) -> Iterator[Prompt]:
        """Prompts without end, drawn `block` at a time (a closed-loop level takes as many as its duration needs)."""
        for n in itertools.count():
            yield from self.prompts(block, seed * 1_000_003 + n)

    def section(self) -> dict[str, Any]:
        """The protocol's workload.request_shape (a synthetic or JSONL shape as protocol 1.2 wrote it, so runs of the
        same shape keep comparing with earlier ones; 1.3's fields where a file workload or a prefix is stated)."""
        out = self._workload_section() if self.workload is not None else self._section()
        if self.prefix is not None and self.prefix.ratio > 0:
            out["shared_prefix"] = self.prefix.section()
        return out

    def _workload_section(self) -> dict[str, Any]:
        w = self.workload
        assert w is not None
        if w.source == "sonnet":  # every prompt has the stated input length and asks for the stated output
            assert self.input is not None
            kind, inputs, outputs = "fixed", self.input.section(), self.output.section()
            # Its fixed prefix is a shared prefix, stated so (controlled): --sonnet-prefix-tokens changes the load.
            fixed = w.sonnet(int(self.input.mean), int(self.output.mean)).fixed_tokens()
            shared = {"shared_prefix": {"ratio": round(fixed / self.input.mean, 6), "groups": 1}}
        else:
            kind, (inputs, outputs), shared = "dataset", (_empirical(n) for n in w.lengths()), {}
        return {
            "kind": kind,
            "input_tokens": inputs,
            "output_tokens": outputs,
            "dataset": f"{w.path.name} sha256:{w.digest()}"[:500],
            "turns": "multi" if w.sessions_mode else "single",
            "notes": w.notes()[:500],
            "source": w.source,
            "dataset_sha256": w.digest(),
            **({"max_turns": w.max_turns} if w.sessions_mode else {}),
            **shared,
        }

    def _section(self) -> dict[str, Any]:
        if self.dataset is not None:
            digest = hashlib.sha256(self.dataset.read_bytes()).hexdigest()
            return {
                "kind": "dataset",
                "input_tokens": None,
                "output_tokens": self.output.section(),
                "dataset": f"{self.dataset.name} sha256:{digest}"[:500],
                "turns": "single",
                "notes": "output tokens from each line's max_tokens, else drawn from output_tokens",
            }
        assert self.input is not None
        synthetic = self.input.distribution == "constant" and self.output.distribution == "constant"
        return {
            "kind": "fixed" if synthetic else "distribution",
            "input_tokens": self.input.section(),
            "output_tokens": self.output.section(),
            "dataset": None,
            "turns": "single",
            "notes": "synthetic prompts of random words, one word per input token as the client counts",
        }


def _empirical(values: np.ndarray) -> dict[str, Any]:
    """A token_shape of the lengths a file states (the distribution is the file's, not a law's)."""
    return {
        "mean": round(float(values.mean()), 4),
        "stdev": round(float(values.std(ddof=1)), 4) if values.size > 1 else 0.0,
        "min": int(values.min()),
        "max": int(values.max()),
        "distribution": "empirical",
    }


def _words(rng: np.random.Generator, count: int) -> str:
    return " ".join(_WORDS[i] for i in rng.integers(0, len(_WORDS), count))


def read_prompts(path: Path) -> list[tuple[str, int | None]]:
    """(prompt, max_tokens or None) of each line of a JSONL file: {"prompt"|"text": str, "max_tokens"?: int}.

    Raises ValueError naming the file and line of the first bad one.
    """
    if path.stat().st_size > MAX_PROMPT_FILE_BYTES:
        raise ValueError(f"{path}: over {MAX_PROMPT_FILE_BYTES} bytes")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise ValueError(f"{path}:{number}: not JSON") from None
        text = item.get("prompt", item.get("text")) if isinstance(item, dict) else None
        if not isinstance(text, str) or not text:
            raise ValueError(f'{path}:{number}: needs a non-empty "prompt" (or "text") string')
        tokens = item.get("max_tokens", item.get("output_tokens"))
        if tokens is not None and not (isinstance(tokens, int) and 1 <= tokens <= MAX_TOKENS):
            raise ValueError(f"{path}:{number}: max_tokens must be an integer from 1 to {MAX_TOKENS}")
        out.append((text, tokens))
    if not out:
        raise ValueError(f"{path}: no prompts")
    return out
