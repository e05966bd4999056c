"""Browsing pages. They call selectors only; business rules live in services."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from registry.api.exception_handlers import api_not_found, api_server_error


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_not_found(request, exception)
    return render(request, "registry/error.html", {"status": 404, "message": "There is nothing here."},
                  status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_server_error(request)
    return render(request, "registry/error.html",
                  {"status": 500, "message": "The registry failed to answer. The error is logged."}, status=500)
