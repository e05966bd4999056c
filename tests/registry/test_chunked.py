"""registry/chunked.py: a body sent chunked, without Content-Length, reaches Django with its length stated; one
longer than its path accepts is refused while it is read, and a server that leaves the chunks in wsgi.input is told
to send Content-Length. (Through gunicorn, `benchreg serve`: tests/registry/ops/test_embedded_worker.py.)"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.conf import settings
from django.urls import reverse

from registry.chunked import READ_BYTES, SPOOL_BYTES, ChunkedBodies, body_limit


class Seen:
    """A WSGI application that keeps what it was given: the environ and the body it read."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], bytes]] = []
        self.streams: list[Any] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        stream = environ["wsgi.input"]
        self.streams.append(stream)
        self.calls.append((dict(environ), stream.read(length)))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]


class Endless(io.RawIOBase):
    """A body that never ends, counting what was read of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = READ_BYTES if size is None or size < 0 else size
        self.read_bytes += size
        return b"x" * size


def call(app: Any, environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes, Any]:
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        answer["status"], answer["headers"] = status, dict(headers)

    response = app(environ, start_response)
    body = b"".join(response)
    return answer["status"], answer["headers"], body, response


def environ_for(body: Any, *, path: str = "/api/v1/submissions", terminated: bool = True, **extra: str) -> dict:
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "wsgi.input": body, **extra}
    if terminated:
        environ["wsgi.input_terminated"] = True
    return environ


def test_a_body_with_its_length_passes_untouched() -> None:
    seen, body = Seen(), io.BytesIO(b'{"a": 1}')
    status, _, _, _ = call(ChunkedBodies(seen), environ_for(body, CONTENT_LENGTH="8", HTTP_TRANSFER_ENCODING=""))
    ((environ, read),) = seen.calls
    assert status == "200 OK" and read == b'{"a": 1}' and environ["CONTENT_LENGTH"] == "8" and seen.streams == [body]


@pytest.mark.parametrize("size", [0, 10, SPOOL_BYTES + 12345])
def test_a_chunked_body_reaches_django_whole_with_its_length(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
    seen = Seen()
    status, _, _, response = call(ChunkedBodies(seen), environ_for(io.BytesIO(data), HTTP_TRANSFER_ENCODING="chunked"))
    ((environ, read),) = seen.calls
    assert status == "200 OK" and environ["CONTENT_LENGTH"] == str(size) and read == data
    spooled = seen.streams[0]
    assert spooled._rolled == (size > SPOOL_BYTES)  # a large body waits in a temporary file, not in memory
    response.close()
    assert spooled.closed  # closed with the response, as the server closes it


def test_a_chunked_body_longer_than_its_path_takes_is_refused_and_an_endless_one_not_read_forever() -> None:
    seen, endless = Seen(), Endless()
    limit = body_limit("/api/v1/submissions")
    status, headers, body, _ = call(ChunkedBodies(seen), environ_for(endless, HTTP_TRANSFER_ENCODING="Chunked"))
    problem = json.loads(body)
    assert status.startswith("413") and headers["Content-Type"] == "application/problem+json"
    assert problem["code"] == "payload-too-large" and f"{limit:,} bytes" in problem["detail"]
    # Nothing past the limit is kept; the rest is read and dropped up to as much again, then reading stops.
    assert seen.calls == [] and 2 * limit <= endless.read_bytes <= 2 * limit + 2 * READ_BYTES


def test_the_rest_of_a_body_too_long_is_read_so_the_client_can_read_the_refusal() -> None:
    """A connection closed with request bytes unread is reset by the kernel, and the client may lose the 413."""
    limit = body_limit("/api/v1/submissions")
    body = io.BytesIO(b"x" * (limit + 5 * READ_BYTES + 7))
    status, _, _, _ = call(ChunkedBodies(Seen()), environ_for(body, HTTP_TRANSFER_ENCODING="chunked"))
    assert status.startswith("413") and body.read() == b""


def test_a_server_that_leaves_the_chunks_in_its_input_is_asked_for_a_length() -> None:
    seen = Seen()
    environ = environ_for(io.BytesIO(b"5\r\nhello\r\n0\r\n\r\n"), terminated=False, HTTP_TRANSFER_ENCODING="chunked")
    status, headers, body, _ = call(ChunkedBodies(seen), environ)
    assert status.startswith("411") and headers["Content-Type"] == "application/problem+json"
    assert json.loads(body)["code"] == "length-required" and "Content-Length" in json.loads(body)["detail"]
    assert seen.calls == []


def test_an_artifact_upload_may_be_as_large_as_an_artifact_and_every_other_path_as_its_largest_body() -> None:
    artifact = reverse("api-submission-artifact", args=[7, "ab" * 32])
    assert body_limit(artifact) == settings.MAX_ARTIFACT_BYTES
    others = max(settings.MAX_SUBMISSION_BYTES, settings.MAX_BATCH_BYTES, settings.BENCHREG_MAX_VERIFY_BYTES)
    for path in ("/api/v1/submissions", "/api/v1/reports/verify", "/no/such/page"):
        assert body_limit(path) >= others and body_limit(path) < settings.MAX_ARTIFACT_BYTES
