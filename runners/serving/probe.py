"""What the endpoint tells about itself, and a check that it streams, before any load is sent.

GET /v1/models (must list the model), GET /version (vLLM's version, when answered), GET /metrics (Prometheus text,
when exposed: vLLM's and SGLang's counters and gauges are kept), then one streamed request of two tokens that
must come back as well-formed server-sent events ending in [DONE]. Each failure raises EndpointError with a
sentence saying what went wrong and where.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from .loadgen import Prompt, Record, Target, client, send, streams

MAX_METRICS = 60
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


async def metrics(http: httpx.AsyncClient) -> dict[str, float] | None:
    try:
        answer = await http.get("/metrics")
    except httpx.HTTPError:
        return None
    return parse_metrics(answer.text) if answer.status_code == 200 else None


async def describe(target: Target) -> EndpointInfo:
    """What the endpoint says of itself (no generation); raises EndpointError naming what is wrong."""
    async with client(target, 4) as http:
        try:
            answer = await http.get("/v1/models")
        except httpx.HTTPError as exc:
            raise EndpointError(f"cannot reach {target.base_url}: {type(exc).__name__}: {exc}") from None
        if answer.status_code != 200:
            raise EndpointError(
                f"{target.base_url}/v1/models answered HTTP {answer.status_code}: {answer.text[:200]!r}"
            )
        models = _model_ids(answer, target.base_url)
        if target.model not in models:
            raise EndpointError(f"{target.base_url} does not serve {target.model!r}; it serves: {', '.join(models)}")
        version = await _version(http)
        found = await metrics(http)
    return EndpointInfo(models, version, found)


async def check_streaming(target: Target) -> None:
    """One streamed request of two tokens must come back as well-formed SSE ending in [DONE]."""
    async with streams(target, 1) as http:
        record = await send(http, target, Prompt("hello " * 8, 2, 8), Record(0, 0.0))
    if record.outcome != "completed":
        what = "streamed request" if record.outcome != "timeouts" else "streamed request timed out"
        raise EndpointError(f"the {what} to {target.base_url}{target.path} failed: {record.detail}")


def _model_ids(answer: httpx.Response, base: str) -> list[str]:
    try:
        data = answer.json()["data"]
        return [str(m["id"]) for m in data]
    except (ValueError, KeyError, TypeError):
        raise EndpointError(f"{base}/v1/models is not an OpenAI model list: {answer.text[:200]!r}") from None


async def _version(http: httpx.AsyncClient) -> str | None:
    try:
        answer = await http.get("/version")
        value = answer.json().get("version") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return str(value)[:500] if value else None
