"""Signing in: what django-axes records of a failed attempt, and the page it shows once an account is locked out.

The sign-in and sign-out pages themselves are Django's (registry.web.urls)."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The name django-axes records a failed sign-in under (AXES_USERNAME_CALLABLE): cut to its column's 255
    characters. No account has a longer name (usernames are at most 150), and Django's sign-in form does not
    enforce that length, so a 20,000-character guess reached the INSERT (a 500 on PostgreSQL)."""
    raw = credentials.get("username") if credentials else request.POST.get("username")
    return None if raw is None else str(raw)[:255]


def login_locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """django-axes' answer once an account or an address has too many failed sign-ins: the sign-in page again,
    with a message that says why and for how long, status 429 and Retry-After. The right password does not
    help until the cool-off ends."""
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    response = render(
        request,
        "registration/login.html",
        {
            "form": AuthenticationForm(request),
            "next": request.POST.get("next", ""),
            "locked_out": True,
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "cooloff_minutes": minutes,
        },
        status=429,
    )
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
