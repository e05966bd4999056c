"""Templates decide what to show from `can_*` flags that registry.policy computes, never from role names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.registry.web.conftest import signed_in

TEMPLATES = Path(__file__).resolve().parents[3] / "registry" / "templates"


@pytest.mark.django_db
def test_the_navigation_offers_what_the_policy_allows(viewer: Any, submitter: Any) -> None:
    html = signed_in(viewer).get("/compare/").content.decode()
    assert 'href="/tokens/"' in html and 'href="/agents/"' not in html and 'href="/jobs/"' not in html
    html = signed_in(submitter).get("/compare/").content.decode()
    assert all(f'href="/{page}/"' in html for page in ("tokens", "agents", "jobs"))


def test_no_page_template_tests_a_role_name() -> None:
    role_test = re.compile(r"\{%\s*if[^%]*('(viewer|submitter|admin)'|\bin roles\b|\bis_admin\b|\bgroups\b)")
    offenders = [
        str(path.relative_to(TEMPLATES))
        for path in TEMPLATES.rglob("*.html")
        if "admin" not in path.relative_to(TEMPLATES).parts[:1] and role_test.search(path.read_text())
    ]
    assert offenders == []
