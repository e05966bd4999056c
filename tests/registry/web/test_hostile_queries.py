"""Every browsing page answers a hostile query string, never with a 500: each parameter its forms and links name
gets NUL (PostgreSQL refuses it in any text), a value that is no number, and a number no column holds. Found by
fuzzing the pages: /sweeps/compare/?sweep=%00 and /scaling/a%00b/ reached PostgreSQL with a NUL, and
/matrix/?batch=x compiled a filter nothing matches, which Django refuses to turn into SQL."""

from __future__ import annotations

import re
from html import unescape
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
from django.test import Client

from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db

HOSTILE = ("\x00", "x", "9" * 40)
ALWAYS = ("page", "cursor", "sort", "q", "set", "sweep", "batch")  # read by pages, whether or not a form names them


def _parameters(html: str) -> set[str]:
    """The query parameters a page's forms and links name."""
    names = set(re.findall(r'name="([A-Za-z_][\w\-]*)"', html)) - {"csrfmiddlewaretoken"}
    for href in re.findall(r'href="([^"]*\?[^"]+)"', html):
        names |= {name for name, _ in parse_qsl(urlsplit(unescape(href)).query)}
    return names | set(ALWAYS)


def test_no_page_answers_a_hostile_query_with_a_server_error(admin_user: Any, fleet: dict[str, Any]) -> None:
    client = signed_in(admin_user)
    client.raise_request_exception = False  # a 500 is counted, not raised
    run = fleet["a"].pk
    pages = [
        "/",
        "/matrix/",
        f"/runs/{run}/",
        f"/runs/{run}/history/",
        f"/runs/{run}/sizes/",
        "/compare/",
        "/decisions/",
        "/alerts/",
        "/agents/",
        "/jobs/",
        "/tokens/",
        "/audit/",
        f"/audit/runs/{run}/",
        "/sweeps/compare/",
    ]
    failures = []
    for page in pages:
        answer = client.get(page)
        assert answer.status_code == 200, page
        for name in sorted(_parameters(answer.content.decode())):
            for value in HOSTILE:
                url = f"{page}?{quote(name)}={quote(value, safe='')}"
                status = client.get(url).status_code
                if status >= 500:
                    failures.append(f"{url[:120]}: {status}")
    assert failures == []


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/matrix/?batch=x", 200),
        ("/sweeps/compare/?sweep=%00", 400),
        ("/sweeps/compare/?sweep=a%00b&sweep=c", 400),
        ("/scaling/a%00b/", 404),
    ],
)
def test_what_fuzzing_found_is_answered_in_words(admin_user: Any, fleet: dict[str, Any], url: str, status: int) -> None:
    client: Client = signed_in(admin_user)
    answer = client.get(url)
    assert answer.status_code == status
    if status == 400:
        assert "no stored run names this sweep" in answer.content.decode()
