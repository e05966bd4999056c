"""What the endpoint tells about itself, and a check that it streams, before any load is sent.

GET /v1/models (must list the model), GET /version (vLLM's version, when answered), GET /metrics (Prometheus text,
when exposed: vLLM's and SGLang's counters and gauges are kept), then one streamed request of two tokens that
must come back as well-formed server-sent events ending in [DONE]. Each failure raises EndpointError with a
sentence saying what went wrong and where.

Every side request is bounded: a whole answer within SIDE_DEADLINE_S (or --timeout, if shorter) however slowly it
drips, and at most MAX_SIDE_BYTES of body, read as it comes and refused beyond (never read whole into memory). A
redirect is refused by name, never followed.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from .loadgen import Prompt, Record, Target, client, redirect_refusal, send, streams

MAX_METRICS = 60
MAX_SIDE_BYTES = 8 * 1024 * 1024  # a real vLLM /metrics is ~100 KB, a model list a few KB
SIDE_DEADLINE_S = 30.0
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_KEPT_PREFIXES = ("vllm:", "sglang:", "tgi_", "trtllm")


class EndpointError(Exception):
    """The endpoint cannot be measured; the message says why."""


@dataclass(frozen=True)
class EndpointInfo:
    models: list[str]
    version: str | None
    metrics: dict[str, float] | None
    notes: dict[str, str] = field(default_factory=dict)


def public_url(url: str) -> str:
    """scheme://host:port of `url`, no credentials, path or query; ValueError for anything but http(s)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--endpoint must be an http(s) URL like http://host:8000, not {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port}"


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus samples of the serving engines, summed over labels (histogram buckets left out)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or not m.group(1).startswith(_KEPT_PREFIXES) or m.group(1).endswith("_bucket"):
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if math.isfinite(value) and (m.group(1) in out or len(out) < MAX_METRICS):
            out[m.group(1)] = out.get(m.group(1), 0.0) + value
    return out


@dataclass(frozen=True)
class Answer:
    """A side request's answer, read whole within the bounds."""

    status: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


async def bounded_get(http: httpx.AsyncClient, path: str, deadline_s: float) -> Answer:
    """GET `path`: EndpointError for a redirect, a body over MAX_SIDE_BYTES or an answer not complete within
    `deadline_s` (the whole answer, not each chunk: a slow drip cannot hold the run); httpx.HTTPError passes."""
    url = f"{http.base_url}".rstrip("/") + path
    try:
        async with asyncio.timeout(deadline_s), http.stream("GET", path) as response:
            if 300 <= response.status_code < 400:
                raise EndpointError(redirect_refusal(response.status_code, url, response.headers.get("location")))
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_SIDE_BYTES:
                    raise EndpointError(
                        f"{url} sent more than {MAX_SIDE_BYTES // (1024 * 1024)} MiB; benchreg reads at most that "
                        "much of an endpoint's side answers"
                    )
    except TimeoutError:
        raise EndpointError(f"{url} did not answer whole within {deadline_s:g} s") from None
    return Answer(response.status_code, bytes(body))


def side_deadline(target: Target) -> float:
    return min(SIDE_DEADLINE_S, target.timeout_s)


async def metrics(http: httpx.AsyncClient, deadline_s: float = SIDE_DEADLINE_S) -> dict[str, float] | None:
    """The endpoint's serving counters, or None where /metrics is not answered within the bounds."""
    try:
        answer = await bounded_get(http, "/metrics", deadline_s)
    except (httpx.HTTPError, EndpointError):
        return None
    return parse_metrics(answer.text) if answer.status == 200 else None


async def describe(target: Target) -> EndpointInfo:
    """What the endpoint says of itself (no generation); raises EndpointError naming what is wrong."""
    deadline = side_deadline(target)
    async with client(target, 4) as http:
        try:
            answer = await bounded_get(http, "/v1/models", deadline)
        except httpx.HTTPError as exc:
            raise EndpointError(f"cannot reach {target.base_url}: {type(exc).__name__}: {exc}") from None
        if answer.status != 200:
            raise EndpointError(f"{target.base_url}/v1/models answered HTTP {answer.status}: {answer.text[:200]!r}")
        models = _model_ids(answer, target.base_url)
        if target.model not in models:
            raise EndpointError(f"{target.base_url} does not serve {target.model!r}; it serves: {', '.join(models)}")
        version = await _version(http, deadline)
        found = await _described_metrics(http, deadline)
    return EndpointInfo(models, version, found)


async def _described_metrics(http: httpx.AsyncClient, deadline_s: float) -> dict[str, float] | None:
    """/metrics before the run: absent is fine (None), but one past the bounds is refused by name, as it would be
    read again around every level."""
    try:
        answer = await bounded_get(http, "/metrics", deadline_s)
    except httpx.HTTPError:
        return None
    return parse_metrics(answer.text) if answer.status == 200 else None


async def check_streaming(target: Target) -> None:
    """One streamed request of two tokens must come back as well-formed SSE ending in [DONE]."""
    async with streams(target, 1) as http:
        record = await send(http, target, Prompt("hello " * 8, 2, 8), Record(0, 0.0))
    if record.outcome != "completed":
        what = "streamed request" if record.outcome != "timeouts" else "streamed request timed out"
        raise EndpointError(f"the {what} to {target.base_url}{target.path} failed: {record.detail}")


def _model_ids(answer: Answer, base: str) -> list[str]:
    try:
        data = json.loads(answer.body)["data"]
        return [str(m["id"])[:500] for m in data]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise EndpointError(f"{base}/v1/models is not an OpenAI model list: {answer.text[:200]!r}") from None


async def _version(http: httpx.AsyncClient, deadline_s: float) -> str | None:
    try:
        answer = await bounded_get(http, "/version", deadline_s)
        value = json.loads(answer.body).get("version") if answer.status == 200 else None
    except (httpx.HTTPError, EndpointError, ValueError, AttributeError, RecursionError):
        return None
    return str(value)[:500] if value else None
