"""The history page in a real browser: a scheduled series over two software versions with one change point,
read at 1280 px and at 390 px (screenshots under test-artifacts/screenshots/history-*.png)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group

from registry.models import Alert, Job
from registry.services.agents import agent_heartbeat
from registry.services.jobs import job_claim
from registry.services.schedule_firing import schedules_tick
from registry.services.schedules import schedule_create, schedule_update
from registry.services.submissions import submission_create
from tests.registry.agents.conftest import enrol, make_plan
from tests.registry.agents.test_jobs import job_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-test-password"
T0 = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
# (throughput, torch version, sleep_ms): an upgrade that changes nothing, then a setting that costs 20%.
RUNS = [
    (1000, "2.12.0", 0),
    (1010, "2.12.0", 0),
    (990, "2.12.0", 0),
    (1005, "2.12.0", 0),
    (995, "2.12.0", 0),
    (1002, "2.12.0", 0),
    (1003, "2.13.0", 0),
    (998, "2.13.0", 0),
    (800, "2.13.0", 5),
    (805, "2.13.0", 5),
    (798, "2.13.0", 5),
    (802, "2.13.0", 5),
]


@pytest.fixture
def series_runs(django_user_model: Any, offline_example: dict[str, Any]) -> list[Any]:
    lab = django_user_model.objects.create_user("lab-7", password=PASSWORD)
    lab.groups.add(Group.objects.get(name="submitter"))
    agent = agent_heartbeat(agent=enrol("rig-h")[0])
    plan = make_plan(lab, [agent], repetitions=3)
    plan.jobs.all().delete()
    schedule = schedule_create(created_by=lab, plan=plan, cron="0 2 * * *", agents=[agent], name="nightly", now=T0)
    runs = []
    for day, (value, torch, sleep) in enumerate(RUNS, start=1):
        if sleep and not runs[-1].document["software"]["settings"].get("runner.sleep_ms"):
            schedule_update(schedule=schedule, actor="lab-7", options={"sleep_ms": float(sleep)})
        schedules_tick(now=T0 + timedelta(days=day))
        job = Job.objects.get(plan__schedule_fire__due_at=T0 + timedelta(days=day))
        job_claim(job=job, claimant="rig-h@host:1", lease_seconds=60)
        doc = job_document(offline_example, job)
        doc["metrics"]["throughput"]["value"] = value
        doc["software"]["frameworks"] = {"torch": torch}
        run, _ = submission_create(document=doc, submitted_by=agent.user, token=agent.token)
        runs.append(run)
    return runs


def test_the_history_page_shows_the_series_its_change_point_and_fits_a_phone(
    live_server: Any, page: Any, shoot: Any, series_runs: list[Any]
) -> None:
    alert = Alert.objects.get()
    assert alert.run_id == series_runs[8].pk
    base = live_server.url
    page.goto(base + "/accounts/login/")
    page.get_by_label("Username").fill("lab-7")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(base + "/")

    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{base}/runs/{series_runs[-1].pk}/history/")
        assert page.get_by_role("heading", level=1).inner_text().startswith("History: mlp-classifier")
        lead = page.locator(".page-head").inner_text()
        assert "series" in lead and "nightly" in lead and "rig-h" in lead and "1 change point" in lead
        alerts = page.locator("#alerts-heading + ul").inner_text()
        assert f"Run {alert.run_id}" in alerts and "/software/settings/runner.sleep_ms" in alerts
        assert page.locator("svg.benchreg-chart").count() == 2
        software = page.locator("#software-heading ~ .table-wrap table").inner_text()
        assert "torch 2.12.0" in software and "torch 2.13.0" in software
        rows = page.locator("#runs-heading ~ .table-wrap tbody tr")
        assert rows.count() == len(RUNS) and "change ×0.8" in rows.nth(3).inner_text()  # newest first
        # Charts have their space before they draw (inline SVG with a viewBox) and nothing overflows the page.
        box = page.locator(".chart--history svg").first.bounding_box()
        assert box is not None and box["width"] <= width and box["height"] > 100
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shoot(page, f"history-{width}")

    page.goto(f"{base}/alerts/")
    assert f"run {alert.run_id}" in page.locator("table").inner_text()
    shoot(page, "history-alerts-390")
