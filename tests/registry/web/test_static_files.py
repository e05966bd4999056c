"""The pages' own static files are served (WhiteNoise, registry/web/static_files.py), and the table of them is built
once per process and settings, not once per middleware chain."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from whitenoise.middleware import WhiteNoiseMiddleware

from registry.web.static_files import StaticFilesMiddleware

STATIC = Path(__file__).resolve().parents[3] / "registry" / "static"


def _stylesheet(client: Client) -> str:
    """The stylesheet URL a page links to, as a browser would find it."""
    html = client.get("/accounts/login/").content.decode()
    match = re.search(r'<link rel="stylesheet" href="([^"]+)"', html)
    assert match, html[:500]
    return match.group(1)


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times WhiteNoise's own listing of the finders' files ran, from an empty cache."""
    monkeypatch.setattr(StaticFilesMiddleware, "_found", {})
    calls: list[int] = []
    listing = WhiteNoiseMiddleware.add_files_from_finders

    def counted(self: WhiteNoiseMiddleware) -> None:
        calls.append(1)
        listing(self)

    monkeypatch.setattr(WhiteNoiseMiddleware, "add_files_from_finders", counted)
    return calls


@pytest.mark.django_db
def test_the_stylesheet_a_page_links_to_is_served_whole_with_its_type_and_a_304_when_unchanged() -> None:
    client = Client()
    url = _stylesheet(client)
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/css")
    body = b"".join(response.streaming_content)
    assert body == (STATIC / "registry" / "app.css").read_bytes()
    again = client.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


@pytest.mark.django_db
def test_every_chain_of_a_process_shares_one_listing_until_a_setting_it_depends_on_changes(
    listings: list[int], settings: Any
) -> None:
    first, second = Client(), Client()  # each client builds its own middleware chain on its first request
    assert first.get("/static/registry/app.css").status_code == 200
    assert second.get("/static/registry/app.css").status_code == 200
    assert len(listings) == 1

    settings.STATIC_URL = "assets/"
    moved = Client()
    assert moved.get("/assets/registry/app.css").status_code == 200
    assert len(listings) == 2  # another prefix, another table: the old one is not served under the new one
    assert moved.get("/static/registry/app.css").status_code == 404
    assert Client().get("/assets/registry/copy-value.js")["Content-Type"].startswith("text/javascript")
    assert len(listings) == 2
