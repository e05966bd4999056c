"""The one place registry errors become HTTP: RFC 9457 problem details (application/problem+json)."""

from __future__ import annotations

import html
import logging
import sys
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from protocol.errors import printable, printable_data
from registry.exceptions import RegistryError, database_unavailable, unavailable_headers

PROBLEM = "application/problem+json"
log = logging.getLogger(__name__)

_TITLES = {
    400: "Bad request",
    401: "Not authenticated",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    409: "Conflict",
    411: "Length required",
    413: "Payload too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}
UNAVAILABLE_DETAIL = (
    "the registry cannot reach its database right now; nothing was stored by this request "
    "(a submission is known by its digest, so sending it again is safe)"
)


def problem(status: int, code: str, detail: str, errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A problem+json body. What it quotes of the request is made printable (a lone surrogate in a key would make
    the answer itself fail to encode)."""
    body: dict[str, Any] = {
        "type": f"https://benchreg.dev/problems/{code}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "code": code,
        "detail": printable(detail),
    }
    if errors is not None:
        body["errors"] = printable_data(errors)
    return body


# Field error codes of values the OpenAPI description allows but the registry cannot take (a number no double
# holds, inside an object kept as given): a schema-valid request, so 422 rather than 400.
UNPROCESSABLE = frozenset({"integer-out-of-range"})


def _drf_errors(detail: Any, prefix: str = "") -> list[dict[str, Any]]:
    """Flatten DRF's nested validation errors into {pointer, code, message} items."""
    if isinstance(detail, dict):
        return [e for key, value in detail.items() for e in _drf_errors(value, f"{prefix}/{key}")]
    if isinstance(detail, list):
        if all(isinstance(d, exceptions.ErrorDetail) for d in detail):
            return [{"pointer": prefix, "code": d.code, "message": str(d)} for d in detail]
        return [e for i, value in enumerate(detail) for e in _drf_errors(value, f"{prefix}/{i}")]
    return [{"pointer": prefix, "code": getattr(detail, "code", "invalid"), "message": str(detail)}]


def problem_details_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    own = _registry_response(exc)
    if own is not None:
        return own
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None:
        return None
    assert isinstance(exc, exceptions.APIException)
    if isinstance(exc, exceptions.ValidationError):
        errors = _drf_errors(exc.detail)
        if errors and all(e["code"] in UNPROCESSABLE for e in errors):
            response.status_code = 422
            body = problem(422, "unprocessable-value", "the request is well-formed but holds a value the registry "
                           "cannot store", errors)  # fmt: skip
        else:
            body = problem(400, "invalid-request", "the request is not valid", _drf_errors(exc.detail))
    else:
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        body = problem(response.status_code, exc.default_code.replace("_", "-"), detail)
    response.data = body
    response.content_type = PROBLEM
    return response


def _registry_response(exc: Exception) -> Response | None:
    """The answer to what DRF does not know: the database down, the registry's own errors, a body Django refused."""
    if database_unavailable(exc):
        log.warning("database unavailable: %s: %s", type(exc).__name__, exc)
        return Response(
            problem(503, "database-unavailable", UNAVAILABLE_DETAIL),
            status=503,
            content_type=PROBLEM,
            headers=unavailable_headers(),
        )
    if isinstance(exc, RegistryError):
        body = problem(exc.status, exc.code, exc.message, exc.errors or None)
        retry_after = getattr(exc, "retry_after", None)  # a quota refusal (429) says when to ask again
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        return Response(body, status=exc.status, content_type=PROBLEM, headers=headers)
    if isinstance(exc, SuspiciousOperation):  # raised by Django while reading the body (request.data)
        status, code, detail = request_refusal(exc)
        return Response(problem(status, code, detail), status=status, content_type=PROBLEM)
    return None


def request_refusal(exc: SuspiciousOperation) -> tuple[int, str, str]:
    """Status, code and words for what Django refuses while reading a request: a body over
    DATA_UPLOAD_MAX_MEMORY_SIZE is 413 (Django says 400), too many form fields or files 400."""
    if isinstance(exc, RequestDataTooBig):
        return (
            413,
            "payload-too-large",
            f"the body is larger than the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes for this endpoint",
        )
    return 400, "bad-request", str(exc) or "the request cannot be read"


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 400 handler: what it refused before a view ran (a body too large, too many fields, a bad
    host...). The API answers problem+json, pages a plain page, and a body too large is 413 either way."""
    if isinstance(exception, SuspiciousOperation):
        status, code, detail = request_refusal(exception)
    else:
        status, code, detail = 400, "bad-request", "the request cannot be read"
    if request.path.startswith("/api/"):
        return JsonResponse(problem(status, code, detail), status=status, content_type=PROBLEM)
    words = html.escape(detail[:1].upper() + detail[1:])
    return HttpResponse(
        f"<!doctype html><title>{status} {_TITLES[status]}</title><h1>{_TITLES[status]}</h1><p>{words}.</p>",
        status=status,
    )


def api_not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(
        problem(404, "not-found", f"no such resource: {request.path}"), status=404, content_type=PROBLEM
    )


def api_server_error(request: HttpRequest) -> JsonResponse:
    if database_unavailable(sys.exc_info()[1]):  # raised outside a DRF view (middleware): still a 503
        return JsonResponse(
            problem(503, "database-unavailable", UNAVAILABLE_DETAIL),
            status=503,
            content_type=PROBLEM,
            headers=unavailable_headers(),
        )
    log.error("unhandled error serving %s", request.path)
    return JsonResponse(
        problem(500, "server-error", "the registry failed; the error is logged"), status=500, content_type=PROBLEM
    )
