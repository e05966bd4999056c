"""The procurement flow in a real browser: sign in, filter, open a run, a refused comparison with its reason,
an accepted one, a decision report requested and downloaded. Every page is saved as a screenshot."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Group

from registry.services.submissions import submission_create
from tests.registry.web.conftest import variant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-test-password"


def _user(django_user_model: Any, name: str, role: str) -> Any:
    user = django_user_model.objects.create_user(name, password=PASSWORD)
    user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def runs(django_user_model: Any, server_example: dict[str, Any], offline_example: dict[str, Any]) -> dict[str, Any]:
    lab = _user(django_user_model, "lab-7", "submitter")
    a, _ = submission_create(document=server_example, submitted_by=lab)
    b, _ = submission_create(
        document=variant(
            server_example,
            "lab-h200-02",
            1500.0,
            **{"system.accelerators": [{**server_example["system"]["accelerators"][0], "model": "H200 141GB HBM3e"}]},
        ),
        submitted_by=lab,
    )
    c, _ = submission_create(
        document=variant(server_example, "lab-mi300-01", 1400.0, **{"software.driver.version": "999.1"}),
        submitted_by=lab,
    )
    int8 = variant(server_example, "lab-h100-09", 1600.0, **{"precision.weights": "int8"})
    int8["precision"]["quantization"] = {"method": "dynamic", "granularity": "per-channel", "library": "x"}
    d, _ = submission_create(document=int8, submitted_by=lab)
    e, _ = submission_create(document=offline_example, submitted_by=lab)
    return {"a": a, "b": b, "c": c, "int8": d, "cpu": e}


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(base + "/")
    assert "/accounts/login/" in page.url
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(base + "/")


def tick(page: Any, *runs: Any) -> None:
    for run in runs:
        page.get_by_label(f"Select run {run.pk}", exact=True).check()


def test_a_buyer_filters_compares_and_leaves_with_a_signed_report(
    live_server: Any, page: Any, shoot: Any, runs: dict[str, Any], django_user_model: Any
) -> None:
    _user(django_user_model, "vera", "viewer")
    base = live_server.url
    page.goto(base + "/")
    shoot(page, "01-login")
    sign_in(page, base, "vera")
    assert page.get_by_role("heading", level=1).inner_text() == "Benchmark catalogue"
    shoot(page, "02-catalogue")

    # Filter: int8 only, through the precision facet (it applies on change).
    page.get_by_label("Precision (weights)").select_option("int8")
    page.wait_for_url(re.compile(r"precision=int8"))
    rows = page.locator("table.table--runs tbody tr")
    assert rows.count() == 2 and all("int8" in text for text in rows.all_inner_texts())
    page.get_by_label("Search").fill("h100")
    page.get_by_label("Search").press("Enter")
    page.wait_for_url(re.compile(r"q=h100"))
    assert rows.count() == 1 and "lab-h100-09" in rows.first.inner_text()
    shoot(page, "03-catalogue-filtered")

    # Open a run.
    with page.expect_navigation():  # the reads below do not wait: the run's page must have loaded whole
        page.get_by_role("link", name=f"#{runs['int8'].pk}", exact=True).click()
    assert page.get_by_role("heading", level=1).inner_text().startswith(f"Run {runs['int8'].pk}:")
    assert page.get_by_role("heading", name="Steady state").is_visible()
    page.get_by_text("Show the document").click()
    shoot(page, "04-run")

    # A refused comparison: bf16 against int8 on the system axis.
    page.goto(base + "/")
    tick(page, runs["a"], runs["int8"])
    page.get_by_label("Compare the selected runs along").select_option("system")
    with page.expect_navigation():
        page.get_by_role("button", name="Compare selected").click()
    assert page.get_by_role("heading", level=1).inner_text() == "These runs cannot be compared"
    refusal = page.locator("table.table--refusal").inner_text()
    # Runs are listed newest first, so the int8 run (stored later) comes first.
    assert "precision.weights: int8 vs bf16" in refusal and "must be identical" in refusal
    shoot(page, "05-comparison-refused")

    # An accepted comparison: the three bf16 server runs, through their comparable set.
    page.goto(base + "/")
    with page.expect_navigation():
        page.get_by_role("link", name=re.compile(r"Show these 3 runs")).click()
    assert "These 3 runs answer the same question" in page.locator("#set-heading").inner_text()
    shoot(page, "06-comparable-set")
    tick(page, runs["a"], runs["b"], runs["c"])
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_url(re.compile(r"/comparisons/\d+/$"))
    assert page.get_by_role("heading", name=re.compile("Comparable: these runs answer the same question")).is_visible()
    assert page.get_by_role("heading", name="Statistics").is_visible()
    assert "software.driver.version" in page.locator("#disclosures-heading + div").inner_text()
    shoot(page, "07-comparison")

    # Request a decision report and download it once the status says ready.
    page.get_by_label("Report title").fill("Inference server for decoder-small")
    page.get_by_label("Decision this report supports").fill("Buy two H200 nodes for the serving cluster.")
    page.get_by_role("button", name="Request decision report").click()
    download_link = page.get_by_role("link", name="Download the signed PDF")
    download_link.wait_for(timeout=120_000)
    shoot(page, "08-report-ready")
    with page.expect_download() as info:
        download_link.click()
    pdf = info.value.path().read_bytes()
    assert pdf.startswith(b"%PDF") and b"/ByteRange" in pdf


def test_an_admin_sees_agents_and_jobs_and_the_skip_link_works(
    live_server: Any, page: Any, shoot: Any, runs: dict[str, Any], django_user_model: Any
) -> None:
    _user(django_user_model, "ada", "admin")
    base = live_server.url
    sign_in(page, base, "ada")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to main content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    with page.expect_navigation():  # the reads below do not wait: each page must have loaded whole
        page.get_by_role("link", name="Agents").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Agents"
    shoot(page, "09-agents")
    with page.expect_navigation():
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Jobs").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Jobs"
    shoot(page, "10-jobs")
    with page.expect_navigation():
        page.get_by_role("link", name="Tokens").click()
    shoot(page, "11-tokens")
    page.goto(base + f"/runs/{runs['a'].pk}/")
    page.get_by_label("Reason for withdrawal").fill("Driver bug found after the run")
    with page.expect_navigation():  # the withdrawal posts, then redirects back to the run
        page.get_by_role("button", name=f"Withdraw run {runs['a'].pk}").click()
    assert page.get_by_role("heading", name="Withdrawn").is_visible()
    shoot(page, "12-run-withdrawn")
