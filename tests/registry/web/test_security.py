"""Escaping, CSRF, and the cookie and header settings in force with DEBUG off (as in these tests)."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from registry.services.comparisons import comparison_create
from registry.services.submissions import submission_create
from tests.registry.web.conftest import signed_in, variant

pytestmark = pytest.mark.django_db
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def hostile(submitter: Any, server_example: dict[str, Any]) -> list[Any]:
    """Two comparable runs whose user-supplied names are markup."""
    doc = variant(
        server_example,
        "<img src=x onerror=alert(2)>",
        **{"workload.name": SCRIPT, "provenance.submitter": "<b>lab</b>"},
    )
    a, _ = submission_create(document=doc, submitted_by=submitter)
    b, _ = submission_create(document=variant(doc, "x<svg onload=alert(3)>", 1500.0), submitted_by=submitter)
    return [a, b]


def test_a_script_workload_name_shows_as_text_everywhere(viewer: Any, hostile: list[Any]) -> None:
    client = signed_in(viewer)
    comparison, _ = comparison_create(runs=hostile, axis="system", created_by=viewer)
    pages = [
        "/",
        f"/?workload={SCRIPT}",
        f"/?q={SCRIPT}",
        f"/runs/{hostile[0].pk}/",
        f"/comparisons/{comparison.pk}/",
        "/?set=" + hostile[0].comparability_key,
    ]
    for url in pages:
        html = client.get(url).content.decode()
        assert SCRIPT not in html and "<img src=x" not in html and "<svg onload" not in html, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url


def test_a_refusal_escapes_the_values_it_quotes(
    viewer: Any, hostile: list[Any], submitter: Any, server_example: dict[str, Any]
) -> None:
    other, _ = submission_create(document=server_example, submitted_by=submitter)
    html = signed_in(viewer).post("/compare/", {"run": [hostile[0].pk, other.pk], "axis": "system"}).content.decode()
    assert SCRIPT not in html and "&lt;script&gt;" in html


def test_every_form_needs_a_csrf_token(viewer: Any, admin_user: Any, fleet: dict[str, Any]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"]], axis="system", created_by=admin_user)
    posts = {
        "/compare/": {"run": [fleet["a"].pk, fleet["b"].pk], "axis": "system"},
        f"/comparisons/{comparison.pk}/reports": {"title": "t", "decision": "d"},
        f"/runs/{fleet['a'].pk}/withdraw": {"reason": "r"},
        "/tokens/": {"name": "n", "scopes": ["submit"]},
        "/accounts/logout/": {},
    }
    for url, data in posts.items():
        assert client.post(url, data).status_code == 403, url
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post("/accounts/login/", {"username": "x", "password": "y"}).status_code == 403


def test_forms_carry_their_csrf_token(viewer: Any, fleet: dict[str, Any]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)
    page = client.get("/")
    token = page.cookies[settings.CSRF_COOKIE_NAME].value
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()
    response = client.post(
        "/compare/", {"csrfmiddlewaretoken": token, "run": [fleet["a"].pk, fleet["b"].pk], "axis": "system"}
    )
    assert response.status_code == 302


def test_cookies_are_secure_and_headers_strict_with_debug_off(viewer: Any) -> None:
    assert settings.DEBUG is False
    client = Client()
    response = client.post("/accounts/login/", {"username": viewer.username, "password": "pw-for-tests-only"})
    assert response.status_code == 302
    session = response.cookies[settings.SESSION_COOKIE_NAME]
    assert session["secure"] and session["httponly"] and session["samesite"] == "Lax"
    page = client.get("/")
    csrf = page.cookies.get(settings.CSRF_COOKIE_NAME) or client.cookies[settings.CSRF_COOKIE_NAME]
    assert csrf["secure"] and csrf["samesite"] == "Lax"
    assert page["X-Frame-Options"] == "DENY"
    assert page["X-Content-Type-Options"] == "nosniff"
    assert page["Referrer-Policy"] == "same-origin"
    assert page["Cross-Origin-Opener-Policy"] == "same-origin"


def test_the_status_endpoint_is_not_cached(viewer: Any, fleet: dict[str, Any]) -> None:
    from registry.models import Report

    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"]], axis="system", created_by=viewer)
    report = Report.objects.create(
        comparison=comparison,
        title="t",
        decision="d",
        requested_by=viewer,
        requested_by_name=viewer.username,
        created_at=comparison.created_at,
    )
    response = signed_in(viewer).get(f"/reports/{report.pk}/status")
    assert response["Cache-Control"] == "no-store" and response.json()["status"] == "queued"
