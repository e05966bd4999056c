"""A scaling plan's page in Chromium: axe-core (no serious or critical violation), both widths, no page overflow at
390 px (its eight-column table folds into cards, its chart shrinks), and the run page's link leads to it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group

from devtools.documents import scaling_plan_documents as plan_documents
from registry.services.submissions import submission_create
from tests.browser.test_catalogue_tasks import NARROW, PASSWORD, WIDE, User

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_scaling_page_passes_axe_fits_a_phone_and_is_reached_from_a_run(
    live_server: Any, chromium: Any, django_user_model: Any, tmp_path: Any
) -> None:
    vera = django_user_model.objects.create_user("vera", password=PASSWORD)
    vera.groups.add(Group.objects.get(name="viewer"))
    runs = [submission_create(document=d, submitted_by=vera)[0] for d in plan_documents("weak-1-2-4", [1, 2, 4])]
    context = chromium.new_context(viewport={"width": WIDE, "height": 900})
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.get_by_label("Username").fill("vera")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(live_server.url + "/")
    page.goto(f"{live_server.url}/runs/{runs[-1].pk}/")
    page.get_by_role("link", name="The plan's throughput and efficiency by device count").click()
    page.wait_for_url(live_server.url + "/scaling/weak-1-2-4/")
    assert page.locator("h1").count() == 1 and page.locator("svg.benchreg-chart").count() == 1
    assert page.get_by_role("table", name="Each device count of the plan").locator("tbody tr").count() == 3
    User(page, live_server.url, tmp_path).check("scaling")
    page.set_viewport_size({"width": NARROW, "height": 844})
    chart = page.locator("svg.benchreg-chart").bounding_box()
    assert chart is not None and chart["width"] <= NARROW, chart
    context.close()
