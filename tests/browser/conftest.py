"""Playwright driving Debian's Chromium against pytest-django's live server.

Screenshots of every page go to test-artifacts/screenshots/ (gitignored). The tests skip where Chromium or
Playwright is missing (in CI, .ci/run installs Chromium and a skipped browser test fails the run).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Recreates the role groups and the audit head after transactional flushes, and lets PostgreSQL's append-only
# triggers be bypassed for the flush itself (see tests/registry/conftest.py).
from tests.registry.conftest import evidence_tables_can_be_reset  # noqa: F401

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run inside one unless told
# that it is safe, which it is here: one thread, no concurrent coroutines touching the connection.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


# Per module, not per session: while Playwright's sync API is open, its event loop counts as running in this
# thread, so asyncio.run() fails in every later test of the xdist worker (pyHanko signs and verifies reports
# with asyncio.run: a report test that ran after a browser test failed "the signature cannot be checked").
# pytest-randomly shuffles modules but keeps each one together, so the loop is gone before the next module.
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"needs Debian's Chromium at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def shoot() -> Any:
    """shoot(page, "name"): a full-page screenshot under test-artifacts/screenshots/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture(autouse=True)
def _fresh_catalogue_cache() -> Iterator[None]:
    """The catalogue caches per data version; test databases reuse ids between tests, so start empty."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
