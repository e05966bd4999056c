"""`benchreg run serving` against hostile or broken endpoints: real HTTP servers (aiohttp, in a thread of this
process) that redirect, drip, send without end or lie in their usage counts. Each is refused in words with the
exit status the command documents, or (a bad count) its request is counted as failed and the level goes on;
nothing half-written is ever left."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from runners.cli import main
from tests.runners.serving.test_cli import DEPLOYMENT

Handler = Callable[[web.Request], Any]


class Server:
    """An aiohttp application served from its own thread and event loop (the command runs its own)."""

    def __init__(self, routes: dict[tuple[str, str], Handler]) -> None:
        self.hits: list[str] = []
        self.app = web.Application()
        for (method, path), handler in routes.items():
            self.app.router.add_route(method, path, self._counted(handler))
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def _counted(self, handler: Handler) -> Handler:
        async def counted(request: web.Request) -> Any:
            self.hits.append(f"{request.method} {request.path}")
            return await handler(request)

        return counted

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.runner = web.AppRunner(self.app, handle_signals=False)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.ready.set()
        self.loop.run_forever()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(**overrides: Handler) -> Server:
        routes = {
            ("GET", "/v1/models"): models,
            ("GET", "/version"): version,
            ("POST", "/v1/chat/completions"): stream(lambda body, n: None),
        }
        for key, handler in overrides.items():
            method, path = key.split(" ", 1)
            routes[(method, path)] = handler
        server = Server(routes)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


async def models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": "simulated", "object": "model"}]})


async def version(request: web.Request) -> web.Response:
    return web.json_response({"version": "1.0"})


def stream(usage_of: Callable[[dict[str, Any], int], Any]) -> Handler:
    """A well-formed token stream of `max_tokens` chunks; its usage event says `usage_of(body, request number)`
    completion tokens where that is not None (or is that usage event, where it is a dict), else the truth."""
    seen = [0]

    async def handler(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen[0] += 1
        n = int(body["max_tokens"])
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for _ in range(n):
            chunk = {"choices": [{"index": 0, "delta": {"content": "word "}}]}
            await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        told = usage_of(body, seen[0])
        usage = (
            told if isinstance(told, dict) else {"prompt_tokens": 16, "completion_tokens": n if told is None else told}
        )
        await response.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        return response

    return handler


def _run(url: str, out: Path, *extra: str) -> int:
    args = ["run", "serving", "--endpoint", url, "--model", "simulated", "--input-tokens", "16", "--output-tokens",
            "6", "--duration", "1", "--min-requests", "12", "--timeout", "2", "--out", str(out), *DEPLOYMENT,
            *extra]  # fmt: skip
    return main(args)


def test_it_refuses_a_redirect_by_name_and_sends_nothing_to_where_it_points(serve, tmp_path, capsys):
    other = serve()

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(other.url + request.path)

    hostile = serve(**{"GET /v1/models": moved})
    assert _run(hostile.url, tmp_path, "--concurrency", "1") == 2
    err = capsys.readouterr().err
    assert (
        f"the endpoint answered 307 to {hostile.url}/v1/models; benchreg does not follow redirects: point it at "
        f"{other.url}/v1/models if that is the server you mean"
    ) in err
    assert other.hits == [] and list(tmp_path.iterdir()) == []


def test_it_refuses_a_redirected_stream_before_any_load(serve, tmp_path, capsys):
    other = serve()

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(other.url + request.path)

    hostile = serve(**{"POST /v1/chat/completions": moved})
    assert _run(hostile.url, tmp_path, "--concurrency", "1") == 2
    err = capsys.readouterr().err
    assert "refused before any load was sent" in err
    assert f"answered 307 to {hostile.url}/v1/chat/completions; benchreg does not follow redirects" in err
    assert other.hits == [] and list(tmp_path.iterdir()) == []


async def drip(request: web.Request) -> web.StreamResponse:
    """One byte every 0.2 s, without end: each read is quick, the answer never whole."""
    response = web.StreamResponse(headers={"content-type": "application/json"})
    await response.prepare(request)
    while True:
        await response.write(b" ")
        await asyncio.sleep(0.2)


async def endless(request: web.Request) -> web.StreamResponse:
    """A body without end, 1 MiB at a time."""
    response = web.StreamResponse(headers={"content-type": "text/plain"})
    await response.prepare(request)
    block = b"#" * (1024 * 1024)
    while True:
        await response.write(block)


@pytest.mark.parametrize("path", ["/v1/models", "/metrics"])
def test_a_slow_drip_side_answer_is_refused_at_its_deadline_not_waited_for(serve, tmp_path, capsys, path):
    hostile = serve(**{f"GET {path}": drip})
    started = time.monotonic()
    assert _run(hostile.url, tmp_path, "--concurrency", "1") == 2
    assert time.monotonic() - started < 15
    assert f"{hostile.url}{path} did not answer whole within 2 s" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", ["/v1/models", "/metrics"])
def test_a_side_answer_without_end_is_refused_past_its_size_cap(serve, tmp_path, capsys, path):
    hostile = serve(**{f"GET {path}": endless})
    assert _run(hostile.url, tmp_path, "--concurrency", "1") == 2
    err = capsys.readouterr().err
    assert f"{hostile.url}{path} sent more than 8 MiB; benchreg reads at most that much" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("told", "words"),
    [
        (-3, "usage.completion_tokens is -3, outside 0 to 6"),
        (10**400, "usage.completion_tokens is a number of 401 digits, outside 0 to 6"),
        (5.5, "usage.completion_tokens is '5.5', not a whole number of tokens"),
        ("6", "usage.completion_tokens is '6', not a whole number of tokens"),
    ],
)
def test_a_bad_usage_count_fails_its_request_in_words_and_the_level_goes_on(serve, tmp_path, told, words):
    # Every third request of the level (never the 2-token probe) reports `told`.
    hostile = serve(**{"POST /v1/chat/completions": stream(lambda body, n: told if n % 3 == 0 else None)})
    assert _run(hostile.url, tmp_path, "--concurrency", "1") == 0
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    requests = doc["metrics"]["requests"]
    assert requests["errors"] >= 3 and requests["completed"] + requests["errors"] == requests["sent"]
    failed = json.loads(doc["software"]["notes"]["failed_requests"])
    (reason,) = failed
    assert reason.startswith(words) and failed[reason] == requests["errors"]
    assert doc["metrics"]["token_counts"]["output_total"] == 6 * requests["completed"]


@pytest.mark.parametrize(
    ("cached", "words"),
    [
        (-1, "usage.prompt_tokens_details.cached_tokens is -1, outside 0 to 16"),
        (17, "usage.prompt_tokens_details.cached_tokens is 17, outside 0 to 16"),
        ("8", "usage.prompt_tokens_details.cached_tokens is '8', not a whole number of tokens"),
    ],
)
def test_a_bad_cached_token_count_fails_its_request_in_words(serve, tmp_path, cached, words):
    def usage(body: dict[str, Any], n: int) -> dict[str, Any]:
        said = cached if n % 3 == 0 else 8
        return {"prompt_tokens": 16, "completion_tokens": body["max_tokens"],
                "prompt_tokens_details": {"cached_tokens": said}}  # fmt: skip

    hostile = serve(**{"POST /v1/chat/completions": stream(usage)})
    assert _run(hostile.url, tmp_path, "--concurrency", "1") == 0
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    requests = doc["metrics"]["requests"]
    (reason,) = json.loads(doc["software"]["notes"]["failed_requests"])
    assert requests["errors"] >= 3 and reason.startswith(words)
    cache = doc["metrics"]["prefix_cache"]  # the completed requests' honest reports: 8 of 16 cached
    assert cache["hit_rate"] == 0.5 and cache["requests_reporting"] == cache["requests"] == requests["completed"]


def test_a_rate_whose_level_would_last_under_a_second_is_refused_before_any_load(serve, tmp_path, capsys):
    hostile = serve()
    assert _run(hostile.url, tmp_path, "--request-rates", "100", "--max-requests", "20") == 2
    err = capsys.readouterr().err
    assert "at 100 req/s, 20 requests (--max-requests) span 0.19 s, under the protocol's 1 s window" in err
    assert hostile.hits == [] and list(tmp_path.iterdir()) == []


def test_a_measured_level_shorter_than_a_second_is_not_written_and_says_why(serve, tmp_path, capsys):
    # A closed loop stops at --max-requests however early: 12 quick requests take well under a second.
    hostile = serve()
    assert _run(hostile.url, tmp_path, "--concurrency", "4", "--max-requests", "12") == 1
    err = capsys.readouterr().err
    assert "level 0 (4 users) was measured (12 of 12 requests completed in 0." in err
    assert "/conditions/window/seconds" in err and "not written" in err
    assert list(tmp_path.iterdir()) == []


def test_a_reasoning_count_beyond_the_completion_fails_its_request_in_words(serve, tmp_path):
    # Reasoning tokens are a part of the completion tokens: a usage stating more of them than the completion has
    # is a broken count, refused for that request like any other (every third request; never the 2-token probe).
    seen = [0]

    async def handler(request: web.Request) -> web.StreamResponse:
        n, seen[0] = int((await request.json())["max_tokens"]), seen[0] + 1
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for kind in ["reasoning_content"] * (n // 2) + ["content"] * (n - n // 2):
            chunk = {"choices": [{"index": 0, "delta": {kind: "word "}}]}
            await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        details = {"reasoning_tokens": n + 3 if seen[0] % 3 == 0 else n // 2}
        usage = {"prompt_tokens": 16, "completion_tokens": n, "completion_tokens_details": details}
        await response.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        return response

    hostile = serve(**{"POST /v1/chat/completions": handler})
    assert _run(hostile.url, tmp_path, "--concurrency", "1") == 0
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    requests = doc["metrics"]["requests"]
    assert requests["errors"] >= 3 and requests["completed"] + requests["errors"] == requests["sent"]
    failed = json.loads(doc["software"]["notes"]["failed_requests"])
    assert failed == {"usage.completion_tokens_details.reasoning_tokens is 9, outside 0 to 6 (the completion "
                      "tokens they are a part of)": requests["errors"]}  # fmt: skip
    assert doc["metrics"]["token_counts"]["reasoning_total"] == 3 * requests["completed"]
