"""Every page renders for the roles that may see it, and answers 404 to those that may not."""

from __future__ import annotations

from typing import Any

import pytest

from registry.services.comparisons import comparison_create
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_sign_in(client: Any, fleet: dict[str, Any]) -> None:
    for url in ("/", f"/runs/{fleet['a'].pk}/", "/compare/", "/agents/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_the_sign_in_page_has_labelled_inputs(client: Any) -> None:
    html = client.get("/accounts/login/").content.decode()
    assert '<label for="id_username">Username</label>' in html
    assert '<label for="id_password">Password</label>' in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_a_viewer_sees_the_catalogue_a_run_the_builder_and_a_comparison(viewer: Any, fleet: dict[str, Any]) -> None:
    client = signed_in(viewer)
    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"]], axis="system", created_by=viewer)
    pages = {
        "/": "Benchmark catalogue",
        f"/runs/{fleet['a'].pk}/": "Steady state",
        "/compare/": "Build a comparison",
        f"/comparisons/{comparison.pk}/": "Request decision report",
    }
    for url, text in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        assert text in response.content.decode(), url


def test_pages_use_one_h1_and_a_skip_link(viewer: Any, fleet: dict[str, Any]) -> None:
    html = signed_in(viewer).get(f"/runs/{fleet['a'].pk}/").content.decode()
    assert html.count("<h1") == 1
    assert 'href="#main"' in html and 'id="main"' in html


def test_unknown_objects_are_404(viewer: Any) -> None:
    client = signed_in(viewer)
    for url in ("/runs/999999/", "/comparisons/999999/", "/reports/999999/status", "/reports/999999/pdf"):
        assert client.get(url).status_code == 404, url
