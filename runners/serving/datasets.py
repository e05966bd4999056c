"""Workloads read from local files, and a stated shared prefix: ShareGPT conversations, sonnet-style fixed prompts,
trace replay. Nothing is downloaded: every file is on the machine that runs the load, read whole and checked before
the first request is sent; a bad one is refused with the file, the line or record, and the field (DatasetInvalid).

Token counts are the client's: one token per whitespace word, as everywhere in this runner (runners/serving/shapes);
the server's usage report, where sent, replaces them in the figures. The conventions follow the tools engineers use:

- ShareGPT (vLLM `benchmarks/benchmark_dataset.py`, ShareGPTDataset, and `benchmark_serving.py`
  sample_sharegpt_requests): a conversation with fewer than two turns is skipped; the prompt is the first turn, the
  output cap the length of the reply after it; a pair whose prompt or reply is under 4 tokens is skipped (vLLM's
  is_valid_sequence minimum). vLLM's upper bounds (1024 prompt, 2048 total tokens) are its own model's context and
  are not applied here. Multi-turn sessions take every human turn with the length of the gpt reply after it.
- Sonnet (vLLM's SonnetDataset: defaults input 550, prefix 200, output 150 tokens): every prompt is the base prompt
  "Pick as many lines as you can from these poem lines:" followed by the file's first lines up to the prefix length
  (the same for every request) and lines drawn with the seed up to the input length.
- Trace (the Mooncake FAST'25 trace as aiperf's mooncake_trace reads it: JSONL `timestamp` in ms since the first
  request, `input_length`, `output_length`, optional `hash_ids` of 512-token blocks; the Azure LLM inference trace:
  CSV `TIMESTAMP` as a date and time, `ContextTokens`, `GeneratedTokens`): each request is sent at its arrival time
  divided by the speed-up, with its input and output lengths. Requests whose hash_ids share leading blocks share that
  much prompt text, so the trace's prefix reuse reaches the server's cache as it did in production.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .loadgen import Prompt

# ShareGPT_V3_unfiltered_cleaned_split.json, the file vLLM and SGLang benchmark with, is about 670 MB.
MAX_FILE_BYTES = 1024 * 1024 * 1024
MAX_TOKENS = 1_000_000
MIN_SHAREGPT_TOKENS = 4  # vLLM's is_valid_sequence: shorter prompts or replies are skipped
SONNET_BASE = "Pick as many lines as you can from these poem lines:"
MOONCAKE_BLOCK_TOKENS = 512
TIME_UNITS = {"ms": 1e-3, "s": 1.0, "us": 1e-6}
_TRACE_COLUMNS = {
    "timestamp": ("timestamp", "TIMESTAMP"),
    "input": ("input_length", "ContextTokens"),
    "output": ("output_length", "GeneratedTokens"),
}
# Words of prefixes and trace blocks (common English words: a real tokenizer makes about one token of each).
_VOCABULARY = tuple(
    " ".join(
        (
            "time person year way day thing man world life hand part child eye woman place work week case point",
            "government company number group problem fact water room mother area money story month lot right study",
            "book word business issue side kind head house service friend father power hour game line end member law",
            "car city community name",
        )
    ).split()
)


class DatasetInvalid(ValueError):
    """A dataset file cannot be used: `where` is the file and line or record, `field` what is wrong there."""

    def __init__(self, path: Path, where: str, field: str, why: str) -> None:
        self.path, self.where, self.field = path, where, field
        super().__init__(f"{path}{':' + where if where else ''}: {field}: {why}")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _text(path: Path) -> str:
    if not path.is_file():
        raise DatasetInvalid(path, "", "file", "not found (datasets are local files: nothing is downloaded)")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise DatasetInvalid(path, "", "file", f"over {MAX_FILE_BYTES} bytes")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetInvalid(path, "", "file", f"not UTF-8 text (byte {exc.start})") from None


def words(text: str) -> int:
    return len(text.split())


# --- ShareGPT ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """A human turn and the length of the reference reply after it (the output cap)."""

    text: str
    output_tokens: int


@dataclass(frozen=True)
class Conversations:
    """What a ShareGPT file gives: each kept conversation's turns, and how many were skipped (vLLM's rules)."""

    sessions: tuple[tuple[Turn, ...], ...]
    skipped: int


def read_sharegpt(path: Path) -> Conversations:
    """Every conversation of a ShareGPT JSON file (a list of {"conversations": [{"from", "value"}, ...]})."""
    text = _text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetInvalid(path, f"line {exc.lineno}", "JSON", f"{exc.msg} (column {exc.colno})") from None
    if not isinstance(data, list):
        raise DatasetInvalid(path, "", "/", "a ShareGPT file is a JSON list of conversations")
    kept, skipped = [], 0
    for index, item in enumerate(data):
        turns = _sharegpt_turns(path, index, item)
        if turns:
            kept.append(turns)
        else:
            skipped += 1
    if not kept:
        raise DatasetInvalid(path, "", "/", f"no usable conversation ({skipped} skipped: under 2 turns or 4 tokens)")
    return Conversations(tuple(kept), skipped)


def _sharegpt_turns(path: Path, index: int, item: Any) -> tuple[Turn, ...]:
    """A conversation's (human turn, reply length) pairs, in order, up to the first pair vLLM would skip."""
    turns = item.get("conversations") if isinstance(item, dict) else None
    if not isinstance(turns, list):
        raise DatasetInvalid(path, f"record {index}", "conversations", "missing, or not a list")
    for n, turn in enumerate(turns):
        where = f"record {index}"
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise DatasetInvalid(path, where, f"conversations/{n}/value", "missing, or not a string")
        if not isinstance(turn.get("from"), str):
            raise DatasetInvalid(path, where, f"conversations/{n}/from", "missing, or not a string")
    out = []
    for n in range(0, len(turns) - 1, 2):
        asked, answered = turns[n], turns[n + 1]
        if asked["from"] not in ("human", "user") or answered["from"] not in ("gpt", "assistant", "chatgpt"):
            break  # not a human turn answered: the conversation ends here for the benchmark
        prompt, reply = words(asked["value"]), words(answered["value"])
        if prompt < MIN_SHAREGPT_TOKENS or reply < MIN_SHAREGPT_TOKENS or prompt > MAX_TOKENS or reply > MAX_TOKENS:
            break
        out.append(Turn(asked["value"], reply))
    return tuple(out)


def sharegpt_prompts(conversations: Conversations, count: int) -> list[Prompt]:
    """`count` single-turn prompts: each conversation's first turn, in file order, cycled."""
    firsts = [session[0] for session in conversations.sessions]
    return [_prompt(firsts[i % len(firsts)]) for i in range(count)]


def _prompt(turn: Turn) -> Prompt:
    return Prompt(turn.text, turn.output_tokens, words(turn.text))


# --- Sonnet --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sonnet:
    """Fixed prompts from a text file's lines (module docstring): input, prefix and output lengths in tokens."""

    lines: tuple[str, ...]
    input_tokens: int
    prefix_tokens: int
    output_tokens: int

    def prefix_lines(self) -> int:
        """How many of the file's first lines make the fixed prefix (vLLM: round((prefix - base) / mean line))."""
        return max(round((self.prefix_tokens - words(SONNET_BASE)) / self.mean_line()), 0)

    def mean_line(self) -> float:
        return sum(words(line) for line in self.lines) / len(self.lines)

    def fixed_tokens(self) -> int:
        """Tokens every prompt starts with: the base prompt and the prefix lines."""
        return words(SONNET_BASE) + sum(words(line) for line in self.lines[: self.prefix_lines()])

    def prompts(self, count: int, rng: np.random.Generator) -> list[Prompt]:
        fixed = [SONNET_BASE, *self.lines[: self.prefix_lines()]]
        base = sum(words(line) for line in fixed)
        out = []
        for _ in range(count):
            chosen = list(fixed)
            total = base
            while total < self.input_tokens:  # whole lines until the target, the last one cut to it
                line = self.lines[int(rng.integers(len(self.lines)))].split()
                chosen.append(" ".join(line[: self.input_tokens - total]))
                total += min(len(line), self.input_tokens - total)
            out.append(Prompt("\n".join(chosen), self.output_tokens, total))
        return out


def read_sonnet(path: Path, input_tokens: int, prefix_tokens: int, output_tokens: int) -> Sonnet:
    lines = tuple(line.strip() for line in _text(path).splitlines() if line.strip())
    if not lines:
        raise DatasetInvalid(path, "", "lines", "no non-empty line")
    sonnet = Sonnet(lines, input_tokens, prefix_tokens, output_tokens)
    fixed = sonnet.fixed_tokens()
    if not 0 < output_tokens <= MAX_TOKENS:
        raise DatasetInvalid(path, "", "output tokens", f"from 1 to {MAX_TOKENS}, not {output_tokens}")
    if not fixed < input_tokens <= MAX_TOKENS:
        raise DatasetInvalid(
            path, "", "input tokens", f"above the fixed prefix ({fixed} tokens) and at most {MAX_TOKENS}, not "
            f"{input_tokens} (--input-tokens above --sonnet-prefix-tokens)"
        )  # fmt: skip
    return sonnet


# --- Trace ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceRequest:
    """One request of a trace: its arrival (s after the first), input and output tokens, prefix blocks."""

    offset_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


def read_trace(path: Path, time_unit: str = "ms") -> tuple[TraceRequest, ...]:
    """A JSONL or CSV (by suffix) trace; timestamps must not go backwards, lengths must be positive integers."""
    text = _text(path)
    rows = _csv_rows(path, text) if path.suffix.lower() == ".csv" else _jsonl_rows(path, text)
    out: list[TraceRequest] = []
    first: float | None = None
    for where, row in rows:
        stamp = _timestamp(path, where, row, TIME_UNITS[time_unit])
        first = stamp if first is None else first
        if out and stamp - first < out[-1].offset_s:
            raise DatasetInvalid(path, where, _column(row, "timestamp"), "goes backwards (arrivals must be in order)")
        hashes = _hash_ids(path, where, row.get("hash_ids"))
        out.append(TraceRequest(stamp - first, _length(path, where, row, "input"), _length(path, where, row, "output"),
                                hashes))  # fmt: skip
    if len(out) < 2:
        raise DatasetInvalid(path, "", "records", f"a trace needs at least 2 requests, not {len(out)}")
    return tuple(out)


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise DatasetInvalid(path, f"line {number}", "JSON", "not a JSON value") from None
        if not isinstance(row, dict):
            raise DatasetInvalid(path, f"line {number}", "record", "not a JSON object")
        yield f"line {number}", row


def _csv_rows(path: Path, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        for row in reader:
            yield f"line {reader.line_num}", row
    except csv.Error as exc:
        raise DatasetInvalid(path, "", "CSV", str(exc)) from None


def _column(row: dict[str, Any], name: str) -> str:
    return next((c for c in _TRACE_COLUMNS[name] if c in row), _TRACE_COLUMNS[name][0])


def _timestamp(path: Path, where: str, row: dict[str, Any], unit_s: float) -> float:
    column = _column(row, "timestamp")
    value = row.get(column)
    if isinstance(value, str):
        text = value
        try:
            value = float(text)
        except ValueError:
            try:  # a date and time (the Azure trace's TIMESTAMP): seconds since the epoch
                return _datetime(text).timestamp()
            except ValueError:
                raise DatasetInvalid(
                    path, where, column, f"neither a number nor a date and time: {text[:40]!r}"
                ) from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise DatasetInvalid(path, where, column, f"missing, or not a time >= 0 (one of {_TRACE_COLUMNS['timestamp']})")
    return float(value) * unit_s


def _datetime(text: str) -> datetime.datetime:
    stamp = datetime.datetime.fromisoformat(text.strip())
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=datetime.UTC)


def _length(path: Path, where: str, row: dict[str, Any], name: str) -> int:
    column = _column(row, name)
    value = row.get(column)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise DatasetInvalid(path, where, column, f"missing, or not a whole number of tokens from 1 to {MAX_TOKENS}")
    return value


def _hash_ids(path: Path, where: str, value: Any) -> tuple[int, ...]:
    if value is None or value == "":
        return ()
    if not isinstance(value, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in value):
        raise DatasetInvalid(path, where, "hash_ids", "not a list of whole numbers")
    return tuple(value)


def trace_schedule(
    requests: Sequence[TraceRequest], speedup: float, seconds: float, most: int, block_tokens: int
) -> tuple[list[Prompt], np.ndarray]:
    """The prompts and arrival offsets (s) of the trace's first requests, at `speedup` times its pace: those
    arriving within `seconds` of the first (at that pace), at most `most`."""
    offsets = np.asarray([r.offset_s for r in requests]) / speedup
    count = min(most, int(np.searchsorted(offsets, seconds, side="right")))
    blocks: dict[int, list[str]] = {}
    prompts = [_trace_prompt(r, i, block_tokens, blocks) for i, r in enumerate(requests[:count])]
    return prompts, offsets[:count]


def _trace_prompt(request: TraceRequest, index: int, block_tokens: int, blocks: dict[int, list[str]]) -> Prompt:
    """Prompt text of the request's length: its hash_ids' blocks (equal ids, equal text), then words of its own."""
    text: list[str] = []
    for h in request.hash_ids:
        if h not in blocks:
            blocks[h] = seeded_words(block_tokens, ("block", h))
        text += blocks[h]
        if len(text) >= request.input_tokens:
            break
    if len(text) < request.input_tokens:
        text += seeded_words(request.input_tokens - len(text), ("request", index))
    return Prompt(" ".join(text[: request.input_tokens]), request.output_tokens, request.input_tokens)


def seeded_words(count: int, key: tuple[Any, ...]) -> list[str]:
    """`count` words, the same for the same key (a block's hash id, a prefix group)."""
    seed = int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=8).digest(), "big")
    picks = np.random.default_rng(seed).integers(0, len(_VOCABULARY), count)
    return [_VOCABULARY[i] for i in picks]


# --- shared prefix -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SharedPrefix:
    """`ratio` of each prompt's input tokens is a prefix common to its group; `groups` groups, drawn per request."""

    ratio: float
    groups: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.ratio) and 0 <= self.ratio < 1):
            raise ValueError(f"a shared-prefix ratio is from 0 to below 1, not {self.ratio!r}")
        if not 1 <= self.groups <= 10_000:
            raise ValueError(f"shared-prefix groups: 1 to 10,000, not {self.groups!r}")

    def apply(self, prompts: Sequence[Prompt], seed: int) -> list[Prompt]:
        """Each prompt's first round(ratio × its tokens) words replaced by its group's prefix; its own words follow,
        cut so the length stays the one the workload set (a trace's lengths are honoured)."""
        groups = np.random.default_rng(seed).integers(0, self.groups, len(prompts))
        longest = max((p.input_tokens for p in prompts), default=0)
        prefixes = {g: seeded_words(math.ceil(self.ratio * longest), ("prefix", g)) for g in set(groups.tolist())}
        out = []
        for prompt, group in zip(prompts, groups.tolist(), strict=True):
            shared = round(self.ratio * prompt.input_tokens)
            own = prompt.text.split()[: max(prompt.input_tokens - shared, 0)]
            out.append(replace(prompt, text=" ".join(prefixes[group][:shared] + own)))
        return out

    def section(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "groups": self.groups}
