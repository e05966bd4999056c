"""Every page with a real MLPerf round imported, as a reader sees it in Chromium at 1,280 and 390 px: no page wider
than its window (a wide table scrolls inside its own box, its hidden labels with it), axe-core finds nothing serious,
the runs table shows each run as a card on a phone, the overview matrix shows a page of columns that fits and names
the others, and a comparison's charts keep their text legible.

The round is four submitters of the trimmed Inference v5.1 round (../shared/data/mlperf-rounds), copied to a temporary
folder: long system names, a dozen workload × scenario columns, MLPerf units, in a few seconds of import.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from registry.models import Submission
from registry.selectors.matrix import COLUMNS_PER_PAGE
from registry.services.imports import mlperf_import

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
# BENCHREG_MLPERF_ROUNDS points at rounds kept elsewhere (one folder per round), as in the importer's round tests.
ROUNDS = Path(
    os.environ.get("BENCHREG_MLPERF_ROUNDS") or Path(__file__).resolve().parents[3] / "shared/data/mlperf-rounds"
)
ROUND = ROUNDS / "inference_v5.1"
SUBMITTERS = ("closed/Lenovo", "closed/MangoBoost", "closed/AMD", "closed/Intel")
PASSWORD = "a-long-browser-test-password"
WIDE, NARROW = 1280, 390
# A comparison chart is drawn with 8 pt text (10.7 px at its own size): shown at 93% of that or more, its text is
# at least 10 px.
CHART_SCALE = 0.93


@pytest.fixture
def round_imported(tmp_path: Path, django_user_model: Any) -> Any:
    if not ROUND.is_dir():
        pytest.skip(f"needs the trimmed MLPerf round at {ROUND}")
    tree = tmp_path / "inference_v5.1"
    for folder in SUBMITTERS:
        shutil.copytree(ROUND / folder, tree / folder)
    admin = django_user_model.objects.create_superuser("ada", "ada@example.org", PASSWORD)
    result = mlperf_import(root=tree, submitted_by=admin, round_name="v5.1")
    stored = [o for o in result.outcomes if getattr(o, "status", None) == "stored"]
    assert Submission.objects.count() >= 15, (len(stored), Submission.objects.count())
    return admin


@pytest.fixture
def reader(live_server: Any, chromium: Any, round_imported: Any) -> Any:
    context = chromium.new_context(viewport={"width": WIDE, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    yield page
    context.close()


def _fits_and_passes_axe(page: Any, name: str, shoot: Any) -> None:
    """At both widths: the page no wider than the window, and no serious or critical axe-core violation."""
    from axe_playwright_python.sync_playwright import Axe

    for width in (WIDE, NARROW):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(50)
        # the page's width, and (to say what widened it) the first elements past the window outside a scroll box
        overflow = page.evaluate(
            """() => ({width: document.documentElement.scrollWidth, window: innerWidth,
            past: Array.from(document.querySelectorAll('body *')).filter(e => {
              const r = e.getBoundingClientRect(); return r.width > 0 && r.right > innerWidth + 0.5 &&
                !e.closest('.table-wrap, .chart-scroll, pre, .table--cards > thead'); })
              .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))
            })"""
        )
        assert overflow["width"] <= overflow["window"], f"{name} at {width} px: {overflow}"
        result = Axe().run(page)
        bad = [v for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
        assert not bad, f"{name} at {width} px: " + "; ".join(
            f"{v['id']}: {v['help']} at {[n['target'] for n in v['nodes']][:3]}" for v in bad
        )
        shoot(page, f"round-{name}-{width}")
    page.set_viewport_size({"width": WIDE, "height": 900})


def _largest_set() -> tuple[str, list[int]]:
    key, _ = Counter(Submission.objects.values_list("comparability_key", flat=True)).most_common(1)[0]
    return key, list(Submission.objects.filter(comparability_key=key).values_list("pk", flat=True))


def _compare(page: Any, base: str, key: str) -> None:
    page.goto(f"{base}/?set={key}")
    for box in page.locator("table.table--runs input[type=checkbox]").all():
        box.check()
    with page.expect_navigation():
        page.get_by_role("button", name="Compare selected").click()


def _decide(page: Any, base: str, workload: str) -> None:
    page.goto(base + "/decisions/")
    page.locator("[name=title]").fill("Serving for the support bot")
    page.locator("[name=workload]").fill(workload)
    page.locator("[name=scenario]").select_option("offline")
    page.locator("[name=demand]").fill("50000")
    with page.expect_navigation():  # the inference form's button (the training form below has its own)
        page.get_by_role("region", name="Declare a decision: size inference serving").get_by_role(
            "button", name="Answer it"
        ).click()


def test_every_page_of_an_imported_round_fits_its_window_at_1280_and_390_px_and_passes_axe(
    reader: Any, live_server: Any, shoot: Any
) -> None:
    page, base = reader, live_server.url
    key, runs = _largest_set()
    run = Submission.objects.filter(pk__in=runs).first()
    assert run is not None and len(runs) >= 2
    pages = {
        "catalogue": "/",
        "catalogue-set": f"/?set={key}",
        "matrix": "/matrix/",
        "matrix-page-2": "/matrix/?cols=2",
        "run": f"/runs/{run.pk}/",
        "history": f"/runs/{run.pk}/history/",
        "compare": "/compare/",
        "alerts": "/alerts/",
        "agents": "/agents/",
        "jobs": "/jobs/",
        "tokens": "/tokens/",
    }
    for name, path in pages.items():
        page.goto(base + path)
        _fits_and_passes_axe(page, name, shoot)
    _compare(page, base, key)
    assert re.search(r"/comparisons/\d+/$", page.url), page.url
    _fits_and_passes_axe(page, "comparison", shoot)
    _decide(page, base, run.workload_name)
    assert re.search(r"/decisions/\d+/$", page.url), page.url
    _fits_and_passes_axe(page, "decision", shoot)
    page.goto(base + "/decisions/")
    _fits_and_passes_axe(page, "decisions", shoot)


def test_the_runs_table_on_a_phone_shows_each_runs_workload_system_headline_with_unit_and_trust(
    reader: Any, live_server: Any
) -> None:
    page = reader
    page.set_viewport_size({"width": NARROW, "height": 844})
    page.goto(live_server.url + "/")
    card = page.locator("table.table--runs tbody tr").first
    for part in (".runs__id a", ".runs__id .badge", ".runs__workload", ".runs__system", ".runs__headline"):
        box = card.locator(part).first.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= NARROW, (part, box)
    assert card.locator(".runs__id .badge").inner_text() == "imported"
    headline = card.locator(".runs__headline").inner_text()
    assert re.search(r"\d[\d,.]* ?(samples/s|tokens/s|queries/s|ms|s)\b", headline), headline
    assert card.locator(".runs__system").inner_text().strip()


def test_the_matrix_of_a_round_shows_a_page_of_columns_that_fits_and_names_the_rest(
    reader: Any, live_server: Any
) -> None:
    page = reader
    page.goto(live_server.url + "/matrix/")
    headers = page.locator("table.table--matrix thead tr").nth(1).locator("th[scope=col]")
    assert 2 <= headers.count() - 1 <= COLUMNS_PER_PAGE  # less the "Configuration" column
    said = page.locator(".matrix-shown").inner_text()
    found = re.search(r"Columns 1–\d+ of (\d+)", said)
    assert found, said
    total = int(found.group(1))
    assert total > COLUMNS_PER_PAGE and f"the other {total - COLUMNS_PER_PAGE} are on the other pages" in said
    box = page.locator(".table-wrap").first
    assert box.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the matrix scrolls at 1,280 px"
    first = headers.nth(1).inner_text()
    with page.expect_navigation():
        page.get_by_role("navigation", name="Pages of columns").get_by_role("link", name=re.compile(r"^6–")).click()
    assert "Columns 6–" in page.locator(".matrix-shown").inner_text()
    assert page.locator("table.table--matrix thead tr").nth(1).locator("th[scope=col]").nth(1).inner_text() != first
    assert page.get_by_role("link", name=re.compile(r"← Columns 1–5")).count() == 1


def test_a_comparisons_charts_keep_their_text_legible_at_1280_and_390_px(reader: Any, live_server: Any) -> None:
    page = reader
    key, _ = _largest_set()
    _compare(page, live_server.url, key)
    for width in (WIDE, NARROW):
        page.set_viewport_size({"width": width, "height": 900})
        images = page.locator(".chart img")
        assert images.count() >= 1
        for image in images.all():
            image.scroll_into_view_if_needed()
            page.wait_for_function("e => e.complete && e.naturalWidth > 0", arg=image.element_handle())
            shown, natural = image.evaluate("e => [e.getBoundingClientRect().width, e.naturalWidth]")
            assert shown / natural >= CHART_SCALE, (
                f"a chart drawn at {shown / natural:.3f} of its size at {width} px ({shown} of {natural} px)"
            )
