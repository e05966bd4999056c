"""The OpenAI-compatible API of the project's endpoints (reference and simulated), over `httpserver`.

    GET  /v1/models             the one served model
    GET  /version               {"version": ...} as vLLM answers it
    GET  /metrics               Prometheus text: request and token counters, requests running and waiting
    POST /v1/completions        {"model", "prompt", "max_tokens", "stream", "stream_options": {"include_usage"}}
    POST /v1/chat/completions   {"model", "messages", "max_tokens" | "max_completion_tokens", "stream", ...}

Streaming answers are server-sent events, one token per event, ended by `data: [DONE]`, with a final usage
event when `stream_options.include_usage` is set (as vLLM and OpenAI do). The tokenizer is whitespace words: a
prompt of N words is N input tokens, and each generated token is one word, so counts are exact on both sides.

`StreamStyle` shapes a chat stream as reasoning models and tool calls do: the first `reasoning_tokens` tokens of
each request go out as `delta.reasoning_content` (DeepSeek's API, vLLM before 0.11) or `delta.reasoning` (vLLM
since 0.11), and the answer as `delta.content` or as `delta.tool_calls` (OpenAI's streamed tool call: the first
event names the function, with an id, and each later event carries a fragment of its JSON arguments). The usage
event then reports `completion_tokens_details.reasoning_tokens`, as OpenAI and vLLM do. The completions API has
no deltas: its text carries every token.

`prefix_cache` (PrefixCache) reports `usage.prompt_tokens_details.cached_tokens` as vLLM's automatic prefix caching
does: a prompt's leading whole blocks of BLOCK_TOKENS tokens that an earlier prompt began with are cached (a hit
counts whole blocks only). `log` writes one JSON line per generation request as it arrives (wall time, prompt
tokens, messages, max_tokens): what the endpoint received, for tests of what a workload sends.

`fault` makes an endpoint misbehave on purpose, for the load generator's bad-input tests: "no-stream" (answers
whole JSON even when asked to stream), "errors" (HTTP 500 on every request), "malformed" (broken SSE),
"truncate" (closes the stream before [DONE]), "bad-delta" (a chat delta whose `tool_calls` is not a list).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

import orjson

from .httpserver import HttpRequest, Response

FAULTS = ("none", "no-stream", "errors", "malformed", "truncate", "bad-delta")
REASONING_FIELDS = ("reasoning_content", "reasoning")
ANSWERS = ("text", "tool-call")
TOOL_NAME = "get_weather"
MAX_TOKENS_LIMIT = 65_536


class Engine(Protocol):
    """What generates tokens behind the API."""

    model: str
    engine: str
    version: str

    def generate(self, prompt: str, max_tokens: int) -> AsyncIterator[str]:
        """The text of each generated token, as it is generated (waits for a free slot first)."""
        ...

    def gauges(self) -> dict[str, float]:
        """Engine gauges for /metrics (requests running, waiting)."""
        ...


@dataclass(frozen=True)
class StreamStyle:
    """How a chat stream presents its tokens (module docstring): the reasoning tokens first, then the answer."""

    reasoning_tokens: int = 0
    reasoning_field: str = "reasoning_content"
    answer: str = "text"

    def __post_init__(self) -> None:
        if self.reasoning_tokens < 0 or self.reasoning_field not in REASONING_FIELDS or self.answer not in ANSWERS:
            raise ValueError(
                f"a stream style needs reasoning tokens >= 0, a reasoning field of {', '.join(REASONING_FIELDS)} "
                f"and an answer of {', '.join(ANSWERS)}, not {self}"
            )

    def delta(self, position: int, text: str, call_id: str) -> dict[str, Any]:
        """The chat delta of the token at `position` (0-based) of a request's stream."""
        if position < self.reasoning_tokens:
            return {self.reasoning_field: text}
        if self.answer == "text":
            return {"content": text}
        if position == self.reasoning_tokens:  # the call's first event: its id, its function, a first fragment
            call = {"index": 0, "id": call_id, "type": "function", "function": {"name": TOOL_NAME, "arguments": text}}
            return {"tool_calls": [call]}
        return {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}

    def finish(self) -> str:
        return "tool_calls" if self.answer == "tool-call" else "length"


@dataclass
class Counters:
    requests: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    started: float = field(default_factory=time.time)


def _error(message: str, status: int) -> Response:
    return Response.of_json({"error": {"message": message, "type": "invalid_request_error", "code": status}}, status)


def _prompt_text(body: dict[str, Any], chat: bool) -> str:
    if not chat:
        prompt = body.get("prompt")
        if isinstance(prompt, list):
            prompt = " ".join(str(p) for p in prompt)
        if not isinstance(prompt, str):
            raise ValueError("'prompt' must be a string")
        return prompt
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("'messages' must be a non-empty list")
    parts = []
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):  # content parts: keep the text ones
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return " ".join(parts)


class PrefixCache:
    """Whole blocks of prompt tokens seen before, by the digest of the prompt up to each block's end (bounded)."""

    BLOCK_TOKENS = 16  # vLLM's default KV block size
    MAX_BLOCKS = 1_000_000

    def __init__(self) -> None:
        self.blocks: set[bytes] = set()

    def cached(self, words: list[str]) -> int:
        """Tokens of `words` cached by earlier prompts (leading whole blocks); the prompt's blocks are cached now."""
        digest, hit, cached = hashlib.blake2b(digest_size=16), True, 0
        for end in range(self.BLOCK_TOKENS, len(words) + 1, self.BLOCK_TOKENS):
            digest.update(" ".join(words[end - self.BLOCK_TOKENS : end]).encode() + b"\n")
            key = digest.copy().digest()
            hit = hit and key in self.blocks
            cached += self.BLOCK_TOKENS if hit else 0
            if len(self.blocks) < self.MAX_BLOCKS:
                self.blocks.add(key)
        return cached


class OpenAIApi:
    """Routes requests to an Engine; `fault` injects one misbehaviour (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        fault: str = "none",
        style: StreamStyle | None = None,
        prefix_cache: PrefixCache | None = None,
        log: IO[str] | None = None,
    ) -> None:
        if fault not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join(FAULTS)}, not {fault!r}")
        self.engine, self.fault, self.counters = engine, fault, Counters()
        self.style = style or StreamStyle()
        self.prefix_cache, self.log = prefix_cache, log

    async def __call__(self, request: HttpRequest) -> Response:
        route = (request.method, request.path)
        if route == ("GET", "/v1/models"):
            return Response.of_json(self._models())
        if route == ("GET", "/version"):
            return Response.of_json({"version": self.engine.version})
        if route == ("GET", "/metrics"):
            return Response(content_type="text/plain; version=0.0.4", body=self._metrics().encode())
        if route == ("GET", "/health"):
            return Response()
        if route in (("POST", "/v1/completions"), ("POST", "/v1/chat/completions")):
            return self._generate(request, chat=request.path.endswith("chat/completions"))
        return _error(f"no route {request.method} {request.path}", 404)

    def _models(self) -> dict[str, Any]:
        created = int(self.counters.started)
        model = {"id": self.engine.model, "object": "model", "created": created, "owned_by": self.engine.engine}
        return {"object": "list", "data": [model]}

    def _metrics(self) -> str:
        c, name = self.counters, self.engine.model
        lines = [
            f'vllm:request_success_total{{model_name="{name}"}} {c.requests}',
            f'vllm:prompt_tokens_total{{model_name="{name}"}} {c.prompt_tokens}',
            f'vllm:generation_tokens_total{{model_name="{name}"}} {c.generation_tokens}',
        ]
        lines += [f'vllm:{k}{{model_name="{name}"}} {v}' for k, v in self.engine.gauges().items()]
        return "\n".join(lines) + "\n"

    def _generate(self, request: HttpRequest, chat: bool) -> Response:
        try:
            body = request.json()
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            prompt = _prompt_text(body, chat)
            max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        except (ValueError, TypeError) as exc:
            return _error(f"bad request: {exc}", 400)
        if body.get("model") != self.engine.model:
            return _error(f"model {body.get('model')!r} is not served here (serving {self.engine.model!r})", 404)
        if not 1 <= max_tokens <= MAX_TOKENS_LIMIT:
            return _error(f"max_tokens must be between 1 and {MAX_TOKENS_LIMIT}", 400)
        if self.fault == "errors":
            return _error("simulated engine failure", 500)
        call = _Call(self, chat, prompt, max_tokens, body)
        if self.log is not None:
            messages = len(body["messages"]) if chat else 0
            said = {"t": time.time(), "prompt_tokens": call.prompt_tokens, "max_tokens": max_tokens,
                    "messages": messages, "cached_tokens": call.cached_tokens}  # fmt: skip
            self.log.write(json.dumps(said) + "\n")
            self.log.flush()
        if not body.get("stream") or self.fault == "no-stream":
            return Response(stream=call.whole())
        return Response(content_type="text/event-stream", stream=call.events())


class _Call:
    """One generation request: the token stream shaped as SSE events or as one JSON answer."""

    def __init__(self, api: OpenAIApi, chat: bool, prompt: str, max_tokens: int, body: dict[str, Any]) -> None:
        self.api, self.chat, self.prompt, self.max_tokens = api, chat, prompt, max_tokens
        words = prompt.split()
        self.prompt_tokens = len(words)
        self.cached_tokens = api.prefix_cache.cached(words) if api.prefix_cache is not None else None
        options = body.get("stream_options")
        self.usage_wanted = isinstance(options, dict) and bool(options.get("include_usage"))
        self.id = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        self.generated = 0

    def _chunk(self, text: str | None, finish: str | None) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        if self.chat:
            choice["delta"] = (
                self.api.style.delta(self.generated - 1, text, f"call-{self.id}") if text is not None else {}
            )
        else:
            choice["text"] = text or ""
        kind = "chat.completion.chunk" if self.chat else "text_completion"
        return {"id": self.id, "object": kind, "created": int(time.time()), "model": self.api.engine.model,
                "choices": [choice]}  # fmt: skip

    def _usage(self) -> dict[str, Any]:
        total = self.prompt_tokens + self.generated
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.generated,
            "total_tokens": total,
        }
        if self.chat and self.api.style.reasoning_tokens:
            reasoning = min(self.generated, self.api.style.reasoning_tokens)
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage

    def _count(self) -> None:
        c = self.api.counters
        c.requests, c.prompt_tokens, c.generation_tokens = (
            c.requests + 1,
            c.prompt_tokens + self.prompt_tokens,
            c.generation_tokens + self.generated,
        )

    async def events(self) -> AsyncIterator[bytes]:
        fault = self.api.fault
        async for text in self.api.engine.generate(self.prompt, self.max_tokens):
            self.generated += 1
            if fault == "malformed" and self.generated == 2:
                yield b'data: {"id": "broken", "choices": [{"delta": \n\n'
                continue
            if fault == "bad-delta" and self.generated == 2:
                broken = {**self._chunk(None, None), "choices": [{"index": 0, "delta": {"tool_calls": "get_weather"}}]}
                yield b"data: " + json.dumps(broken).encode() + b"\n\n"
                continue
            yield b"data: " + orjson.dumps(self._chunk(text, None)) + b"\n\n"  # compact, as vLLM writes it
            if fault == "truncate" and self.generated * 2 >= self.max_tokens:
                return
        finish = self.api.style.finish() if self.chat else "length"
        yield b"data: " + orjson.dumps(self._chunk(None, finish)) + b"\n\n"
        if self.usage_wanted:
            usage = {**self._chunk(None, None), "choices": [], "usage": self._usage()}
            yield b"data: " + orjson.dumps(usage) + b"\n\n"
        self._count()
        yield b"data: [DONE]\n\n"

    async def whole(self) -> AsyncIterator[bytes]:
        texts = [text async for text in self.api.engine.generate(self.prompt, self.max_tokens)]
        self.generated = len(texts)
        self._count()
        content = "".join(texts)
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": content}
        else:
            choice["text"] = content
        kind = "chat.completion" if self.chat else "text_completion"
        answer = {"id": self.id, "object": kind, "created": int(time.time()), "model": self.api.engine.model,
                  "choices": [choice], "usage": self._usage()}  # fmt: skip
        yield json.dumps(answer).encode()
