"""The pages' answers to errors: an error page, and a page without templates when the database is gone.

registry.urls routes Django's 404 and 500 handlers here for everything outside /api/ (the API answers
problem+json from registry.api.exception_handlers).
"""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from registry.exceptions import database_unavailable, unavailable_headers


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "registry/error.html", {"status": 404, "message": "There is nothing here."}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 handler; it runs inside the `except` that caught the error, so sys.exc_info() is that error."""
    if database_unavailable(sys.exc_info()[1]):
        # No template: rendering the site's layout reads the session, which needs the database that is down.
        return HttpResponse(
            "<!doctype html><title>503 Service unavailable</title><h1>Service unavailable</h1>"
            "<p>The registry cannot reach its database right now. Try again in a moment.</p>",
            status=503,
            headers=unavailable_headers(),
        )
    return render(
        request,
        "registry/error.html",
        {"status": 500, "message": "The registry failed to answer. The error is logged."},
        status=500,
    )
