"""A small HTTP/1.1 server on asyncio streams, for the project's own OpenAI-compatible endpoints.

Only what the reference and simulated endpoints need: keep-alive, a JSON body of bounded size, JSON answers
with Content-Length and streamed answers with chunked transfer encoding (what vLLM sends for SSE). It is not
a general web server; it exists so the endpoints (and the agent) need nothing beyond the standard library,
and so one process can hold thousands of open streams (one coroutine each, no thread per connection).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 8 * 1024 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large"}
_REASONS |= {500: "Internal Server Error", 503: "Service Unavailable"}


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Response:
    """A whole answer (`body`) or a streamed one (`stream`: chunks written as they come)."""

    status: int = 200
    content_type: str = "application/json"
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None

    @classmethod
    def of_json(cls, value: Any, status: int = 200) -> Response:
        return cls(status=status, body=json.dumps(value).encode())


Handler = Callable[[HttpRequest], Awaitable[Response]]


class BadRequest(Exception):
    pass


async def _read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None  # the client closed the connection between requests
    except asyncio.LimitOverrunError:
        raise BadRequest("request headers too large") from None
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, path, _version = lines[0].split(" ", 2)
    except ValueError:
        raise BadRequest("malformed request line") from None
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            key, value = line.split(":", 1)
            headers[key.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    if length > MAX_BODY_BYTES:
        raise BadRequest(f"request body over {MAX_BODY_BYTES} bytes")
    body = await reader.readexactly(length) if length else b""
    return HttpRequest(method, path.split("?", 1)[0], headers, body)


async def _write(writer: asyncio.StreamWriter, response: Response, keep_alive: bool) -> None:
    reason = _REASONS.get(response.status, "Status")
    head = [f"HTTP/1.1 {response.status} {reason}", f"Content-Type: {response.content_type}"]
    head.append("Connection: keep-alive" if keep_alive else "Connection: close")
    if response.stream is None:
        head.append(f"Content-Length: {len(response.body)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + response.body)
        await writer.drain()
        return
    head += ["Transfer-Encoding: chunked", "Cache-Control: no-cache"]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    async for chunk in response.stream:
        if chunk:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


def serve_connection(handler: Handler) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """The asyncio.start_server callback answering every request of one connection with `handler`."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Each streamed chunk goes out when written: without TCP_NODELAY, Nagle holds a chunk until the client
        # ACKs the headers, and the client delays that ACK (40 ms on Linux), which reads as 40 ms of TTFT. asyncio
        # sets it only for sockets it created itself, not for those accepted on a listener made by `listen`.
        sock = writer.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    request = await _read_request(reader)
                except BadRequest as exc:
                    await _write(writer, Response.of_json({"error": {"message": str(exc)}}, 400), False)
                    return
                if request is None:
                    return
                keep_alive = request.headers.get("connection", "").lower() != "close"
                await _write(writer, await handler(request), keep_alive)
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return  # the client went away mid-answer: nothing to tell it
        finally:
            writer.close()

    return connection


async def start(handler: Handler, host: str, port: int) -> asyncio.Server:
    """Listen on host:port (0: any free port) and answer with `handler`."""
    return await start_on(handler, listen(host, port))


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (0: any free port), which forked workers may share."""
    return socket.create_server((host, port), backlog=4096)


async def start_on(handler: Handler, listener: socket.socket) -> asyncio.Server:
    """Answer with `handler` the connections accepted on `listener`."""
    return await asyncio.start_server(serve_connection(handler), sock=listener, limit=MAX_HEADER_BYTES)
