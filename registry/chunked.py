"""Request bodies sent chunked (`Transfer-Encoding: chunked`, no Content-Length), made readable to Django.

Django reads CONTENT_LENGTH bytes of wsgi.input and no more, and a chunked request has no CONTENT_LENGTH: every
endpoint saw an empty body. A document streamed by `curl -T -`, or by a client that sends a generator, was refused
as missing every field it held, and a chunked artifact upload as 0 bytes. gunicorn (`benchreg serve`) takes the
chunks apart itself and says so with `wsgi.input_terminated` (an extension of PEP 3333 that servers set when
wsgi.input ends where the body ends). `ChunkedBodies` reads such a body whole, into memory up to SPOOL_BYTES and into
a temporary file beyond, and hands Django the same request with its length stated. Every endpoint then refuses or
takes it as it would the same body sent with Content-Length: the same limits, the same answers.

Two bodies are refused here, before Django sees them, as problem+json:
- 413 when the body grows past the most any endpoint at its path accepts (`body_limit`): nothing more is kept, and
  reading stops at twice that;
- 411 when the server does not say it ended the body (Django's runserver): its wsgi.input holds the raw chunks.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from django.conf import settings
from django.urls import Resolver404, resolve

from registry.api.exception_handlers import PROBLEM, problem

SPOOL_BYTES = 1024 * 1024  # a body up to this stays in memory; a larger one goes to a temporary file
READ_BYTES = 64 * 1024
_ARTIFACT_ROUTE = "api-submission-artifact"

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def body_limit(path: str) -> int:
    """The most a chunked body to `path` is read before it is refused: the artifact upload's limit on its route,
    elsewhere the largest of the other bodies' limits (a batch, a report to verify, a document or form)."""
    try:
        route = resolve(path).url_name
    except Resolver404:
        route = None
    if route == _ARTIFACT_ROUTE:
        return int(settings.MAX_ARTIFACT_BYTES)
    return max(
        settings.MAX_SUBMISSION_BYTES,
        settings.MAX_BATCH_BYTES,
        settings.BENCHREG_MAX_VERIFY_BYTES,
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    )


def is_chunked(environ: dict[str, Any]) -> bool:
    """Whether the request's body comes chunked, with no length stated."""
    codings = environ.get("HTTP_TRANSFER_ENCODING", "")
    return not environ.get("CONTENT_LENGTH") and "chunked" in codings.lower()


class ChunkedBodies:
    """WSGI middleware around Django's application: see the module's docstring."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if not is_chunked(environ):
            return self.app(environ, start_response)
        if not environ.get("wsgi.input_terminated"):
            return _refuse(
                start_response,
                411,
                "length-required",
                "this server cannot read a chunked body: send the request with a Content-Length header",
            )
        limit = body_limit(environ.get("PATH_INFO", "/"))
        # Open past this call: _Closing closes it when the server closes the response.
        body = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, dir=settings.FILE_UPLOAD_TEMP_DIR)  # noqa: SIM115
        try:
            size = _spool(environ["wsgi.input"], body, limit)
        except BaseException:
            body.close()
            raise
        if size > limit:
            body.close()
            # The rest is read and dropped, up to as much again: a server that closes a connection with bytes of
            # the request still unread makes the kernel reset it, and the client may lose this answer.
            _discard(environ["wsgi.input"], limit)
            return _refuse(
                start_response,
                413,
                "payload-too-large",
                f"the chunked body is larger than {limit:,} bytes, the most this path accepts; nothing was stored",
            )
        body.seek(0)
        environ["CONTENT_LENGTH"] = str(size)
        environ["wsgi.input"] = body
        return _Closing(self.app(environ, start_response), body)


def _spool(stream: IO[bytes], into: IO[bytes], limit: int) -> int:
    """Copy `stream` into `into` until it ends or passes `limit`; the bytes read (limit + 1 or more: too long)."""
    size = 0
    while size <= limit and (chunk := stream.read(READ_BYTES)):
        size += len(chunk)
        into.write(chunk)
    return size


def _discard(stream: IO[bytes], most: int) -> None:
    """Read and drop `stream` until it ends or `most` bytes have gone."""
    dropped = 0
    while dropped < most and (chunk := stream.read(READ_BYTES)):
        dropped += len(chunk)


def _refuse(start_response: StartResponse, status: int, code: str, detail: str) -> list[bytes]:
    phrase = {411: "Length Required", 413: "Content Too Large"}[status]
    body = json.dumps(problem(status, code, detail), separators=(",", ":")).encode()
    # The unread rest of the body is not waited for: the connection closes after the answer.
    start_response(
        f"{status} {phrase}",
        [("Content-Type", PROBLEM), ("Content-Length", str(len(body))), ("Connection", "close")],
    )
    return [body]


class _Closing:
    """The application's response, and the spooled body closed with it (PEP 3333: the server calls close())."""

    def __init__(self, response: Iterable[bytes], body: IO[bytes]) -> None:
        self.response, self.body = response, body

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.response)

    def close(self) -> None:
        try:
            close = getattr(self.response, "close", None)
            if close is not None:
                close()
        finally:
            self.body.close()
