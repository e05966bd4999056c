"""The catalogue tasks as a user does them in Chromium: the overview matrix, facets that apply on change (and without
JavaScript), sets named by their question, refusals that lead with the root cause, comparison sentences against a
chosen baseline, exports, and the run page. Each page is checked with axe-core (no serious or critical violation),
shot at 1280 and 390 px wide (under pytest's tmp dir), and measured at 390 px for horizontal page overflow."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group

from registry.services.submissions import submission_create
from tests.registry.web.conftest import variant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-test-password"
WIDE, NARROW = 1280, 390


def _user(django_user_model: Any, name: str, role: str) -> Any:
    user = django_user_model.objects.create_user(name, password=PASSWORD)
    user.groups.add(Group.objects.get(name=role))
    return user


def _on(doc: dict[str, Any], model: str, vendor: str = "NVIDIA") -> dict[str, Any]:
    doc["system"]["accelerators"][0].update(model=model, vendor=vendor)
    return doc


@pytest.fixture
def fleet(django_user_model: Any, server_example: dict[str, Any], offline_example: dict[str, Any]) -> dict[str, Any]:
    """Three H100 and three H200 bf16 server runs (one set), an MI300X with another driver, an int8 H100 run, a run
    that never reached steady state (a set that reads the same but for that), an offline CPU run."""
    lab = _user(django_user_model, "lab-7", "submitter")

    def store(doc: dict[str, Any]) -> Any:
        return submission_create(document=doc, submitted_by=lab)[0]

    origin = {"kind": "other", "round": "v5.0", "division": "closed", "availability": "available"}
    runs: dict[str, Any] = {
        "h100": [store(server_example)]
        + [store(variant(server_example, f"lab-h100-0{i}", v)) for i, v in ((2, 1250.0), (3, 1270.0))]
    }
    runs["h200"] = [
        store(_on(variant(server_example, f"lab-h200-0{i}", v, **{"provenance.origin": origin}), "H200 141GB HBM3e"))
        for i, v in ((1, 1500.0), (2, 1520.0), (3, 1490.0))
    ]
    runs["mi300"] = store(
        _on(
            variant(server_example, "lab-mi300-01", 1400.0, **{"software.driver.version": "999.1"}),
            "Instinct MI300X",
            "AMD",
        )
    )
    int8 = variant(server_example, "lab-h100-09", 1600.0, **{"precision.weights": "int8"})
    int8["precision"]["quantization"] = {"method": "dynamic", "granularity": "per-channel", "library": "x"}
    runs["int8"] = store(int8)
    unsteady = variant(server_example, "lab-h100-05", 1900.0)
    unsteady["conditions"]["steady_state"].update(reached=False, reasons=["throughput still rising"])
    runs["unsteady"] = store(unsteady)
    runs["cpu"] = store(offline_example)
    return runs


class User:
    """A signed-in browser user whose clicks are counted and whose every page is checked and shot."""

    def __init__(self, page: Any, base: str, shots: Path) -> None:
        self.page, self.base, self.shots, self.clicks = page, base, shots, 0
        from axe_playwright_python.sync_playwright import Axe

        self.axe = Axe()

    def click(self, locator: Any) -> None:
        self.clicks += 1
        locator.click()

    def choose(self, label: str, value: str) -> None:
        """Pick a facet value: one click on the list (the form applies it on change)."""
        self.clicks += 1
        with self.page.expect_navigation():
            self.page.get_by_label(label, exact=True).select_option(value)

    def check(self, name: str) -> None:
        """axe-core (no serious or critical violation), a screenshot at 1280 and at 390 px, no page overflow at
        390 px (a wide table scrolls inside its own box)."""
        page = self.page
        result = self.axe.run(page)
        bad = [v for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
        assert not bad, f"{name}: " + "; ".join(
            f"{v['id']}: {v['help']} at {[n['target'] for n in v['nodes']][:3]}" for v in bad
        )
        page.set_viewport_size({"width": WIDE, "height": 900})
        page.screenshot(path=str(self.shots / f"{name}-1280.png"), full_page=True)
        page.set_viewport_size({"width": NARROW, "height": 844})
        page.wait_for_timeout(50)
        width = page.evaluate("document.documentElement.scrollWidth")
        wide = page.evaluate(
            """w => Array.from(document.querySelectorAll('body *')).filter(e =>
            e.getBoundingClientRect().right > w + 0.5 && !e.closest('.table-wrap, .table, pre'))
            .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""",
            NARROW,
        )
        assert width <= NARROW, f"{name}: the page is {width} px wide at {NARROW} px: {wide}"
        page.screenshot(path=str(self.shots / f"{name}-390.png"), full_page=True)
        page.set_viewport_size({"width": WIDE, "height": 900})


@pytest.fixture
def user(live_server: Any, chromium: Any, django_user_model: Any, tmp_path_factory: Any, fleet: dict[str, Any]) -> Any:
    _user(django_user_model, "vera", "viewer")
    shots = tmp_path_factory.mktemp("screenshots")
    context = chromium.new_context(viewport={"width": WIDE, "height": 900}, accept_downloads=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.get_by_label("Username").fill("vera")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(live_server.url + "/")
    yield User(page, live_server.url, shots)
    context.close()


def _download(page: Any, link: Any) -> bytes:
    with page.expect_download() as info:
        link.click()
    return Path(info.value.path()).read_bytes()


def test_a_filtered_comparable_set_in_three_clicks_and_its_name_and_permalink(
    user: User, fleet: dict[str, Any]
) -> None:
    page = user.page
    assert page.get_by_role("heading", level=1).inner_text() == "Benchmark catalogue"
    assert page.get_by_role("link", name="benchreg", exact=True).count() == 1  # the logo's accessible name
    user.check("catalogue")
    # The facets apply on change: no Apply button with JavaScript on, and the URL holds the state.
    assert not page.get_by_role("button", name="Apply filters").is_visible()
    user.choose("Scenario", "server")
    user.choose("Precision (weights)", "bf16")
    assert re.search(r"scenario=server", page.url) and re.search(r"precision=bf16", page.url)
    assert "q=" not in page.url  # empty fields stay out of the URL
    options = page.get_by_label("Precision (weights)", exact=True).locator("option").all_inner_texts()
    assert "int8 (1)" in options and "bf16 (8)" in options  # counts given the other filters
    assert page.evaluate("document.activeElement.id") == "f-precision"  # the changed control keeps the focus
    # Sets are named by their question; two that would read the same are told apart by the field that differs.
    sets = page.locator("table").first.inner_text()
    assert "decoder-small · server · bf16 · batch 8 · steady state reached" in sets
    assert "decoder-small · server · bf16 · batch 8 · steady state not reached" in sets
    assert "Set A" not in sets
    user.click(page.get_by_role("link", name=re.compile(r"^Show these 7 runs")))
    assert "These 7 runs answer the same question" in page.locator("#set-heading").inner_text()
    assert user.clicks <= 3, user.clicks
    user.check("comparable-set")
    # The permalink names the set only: the same whatever the filters were.
    permalink = page.get_by_role("link", name="Permalink to this set").get_attribute("href")
    assert permalink.startswith("/?set=sha256") and "precision" not in permalink
    page.goto(user.base + permalink)
    assert "These 7 runs answer the same question" in page.locator("#set-heading").inner_text()
    # Export the view: every run with its digest and address.
    rows = list(csv.DictReader(io.StringIO(_download(page, page.get_by_role("link", name="CSV")).decode())))
    assert len(rows) == 7 and all(r["digest"].startswith("sha256:") and r["url"].startswith("http") for r in rows)
    document = json.loads(_download(page, page.get_by_role("link", name="JSON", exact=True)))
    assert {r["run"] for r in document["runs"]} == {int(r["run"]) for r in rows}


def test_the_overview_matrix(user: User, fleet: dict[str, Any]) -> None:
    page = user.page
    user.click(page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview"))
    assert page.get_by_role("heading", level=1).inner_text().startswith("Overview")
    table = page.locator("table.table--matrix")
    headers = table.locator("thead").inner_text()
    assert "inference" in headers and "server" in headers and "offline" in headers  # grouped by phase
    h200 = table.locator("tbody tr", has=page.get_by_role("rowheader", name=re.compile("H200"))).inner_text()
    assert "1,503" in h200 and "95% CI" in h200 and "declared" in h200 and "steady" in h200  # geometric mean, CI
    user.check("matrix")
    # Filter the matrix by division, a facet of its own (from provenance.origin).
    user.choose("Division", "closed")
    assert "division=closed" in page.url
    assert table.locator("tbody tr").count() == 1 and "H200" in table.locator("tbody").inner_text()
    user.check("matrix-filtered")
    # A cell opens its set.
    user.click(table.get_by_role("link").first)
    assert "answer the same question" in page.locator("#set-heading").inner_text()
    page.go_back()
    lines = list(csv.DictReader(io.StringIO(_download(page, page.get_by_role("link", name="CSV")).decode())))
    assert len(lines) == 3 and {r["configuration"] for r in lines} == {"H200 141GB HBM3e"}
    assert all(r["digest"].startswith("sha256:") and "/runs/" in r["url"] for r in lines)
    cells = json.loads(_download(page, page.get_by_role("link", name="JSON", exact=True)))["cells"]
    assert cells[0]["ci_low"] < cells[0]["estimate"] < cells[0]["ci_high"] and len(cells[0]["runs"]) == 3


def test_on_a_phone_the_facets_fold_away_until_a_filter_is_in_force(user: User, fleet: dict[str, Any]) -> None:
    page = user.page
    page.set_viewport_size({"width": NARROW, "height": 844})
    page.goto(user.base + "/")
    scenario = page.get_by_label("Scenario", exact=True)
    assert not scenario.is_visible()  # the results come first; the panel's summary says what it holds
    results = page.locator("table").first.bounding_box()
    assert results is not None and results["y"] < 844  # the first table starts on the first screen
    user.click(page.locator("summary", has_text="Filter runs"))
    with page.expect_navigation():
        scenario.select_option("server")
    assert "scenario=server" in page.url
    assert page.get_by_label("Scenario", exact=True).is_visible()  # a filter in force keeps the panel open
    assert "(1 in force)" in page.locator("summary", has_text="Filter runs").inner_text()
    page.set_viewport_size({"width": WIDE, "height": 900})
    page.goto(user.base + "/")
    assert page.get_by_label("Scenario", exact=True).is_visible()  # beside the results there is room: open


def test_facets_work_without_javascript(
    live_server: Any, chromium: Any, django_user_model: Any, fleet: dict[str, Any]
) -> None:
    _user(django_user_model, "nojs", "viewer")
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.get_by_label("Username").fill("nojs")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Precision (weights)", exact=True).select_option("int8")
    assert "precision=" not in page.url  # nothing applies until the form is sent
    with page.expect_navigation():  # waits for the new page's load, not just its URL (which commits first)
        page.get_by_role("button", name="Apply filters").click()
    assert "precision=int8" in page.url
    rows = page.locator("table.table--runs tbody tr")
    assert rows.count() == 2 and all("int8" in text for text in rows.all_inner_texts())
    context.close()


def test_a_refusal_leads_with_the_root_cause_and_hints_only_what_helps(user: User, fleet: dict[str, Any]) -> None:
    page = user.page
    # An offline CPU run against a server GPU run: the scenario changes the question; it comes first.
    page.get_by_label(f"Select run {fleet['cpu'].pk}", exact=True).check()
    page.get_by_label(f"Select run {fleet['mi300'].pk}", exact=True).check()
    with page.expect_navigation():  # the reads below do not wait: the refusal page must have loaded whole
        page.get_by_role("button", name="Compare selected").click()
    assert page.get_by_role("heading", level=1).inner_text() == "These runs cannot be compared"
    first = page.locator("table.table--refusal tbody tr").first.inner_text()
    assert re.match(r"(phase|workload|scenario)", first), first
    assert "They ask different questions" in page.locator("section[role=alert]").inner_text()
    assert page.get_by_role("button", name=re.compile("Compare (by|at)")).count() == 0  # no axis would help
    user.check("refusal-root-cause")
    # bf16 against int8 on the system axis: the precision axis accepts them, and so does equal quality (both state
    # their measured quality), so those two (and only those) are offered.
    page.goto(user.base + "/")
    page.get_by_label(f"Select run {fleet['h100'][0].pk}", exact=True).check()
    page.get_by_label(f"Select run {fleet['int8'].pk}", exact=True).check()
    with page.expect_navigation():  # the reads below do not wait: the refusal page must have loaded whole
        page.get_by_role("button", name="Compare selected").click()
    assert "precision.weights: int8 vs bf16" in page.locator("table.table--refusal").inner_text()
    offered = page.get_by_role("button", name=re.compile("Compare (by|at)"))
    assert offered.all_inner_texts() == ["Compare by numeric precision", "Compare at equal quality"]
    user.check("refusal-precision")
    offered.first.click()
    page.wait_for_url(re.compile(r"/comparisons/\d+/$"))
    assert "by numeric precision" in page.get_by_role("heading", level=1).inner_text()


def test_a_comparison_reads_as_sentences_against_the_chosen_baseline(user: User, fleet: dict[str, Any]) -> None:
    page = user.page
    page.goto(user.base + "/compare/")
    ids = [r.pk for r in (*fleet["h100"], *fleet["h200"])]
    page.get_by_label("Run ids").fill(", ".join(map(str, ids)))
    page.get_by_role("button", name="Compare", exact=True).click()
    page.wait_for_url(re.compile(r"/comparisons/\d+/$"))
    sentence = page.locator("ul.sentences li").first.inner_text()
    # H200 (~1503) against the H100 baseline (~1260): about +19% throughput, higher is better, so "better"
    assert re.search(
        r"H200 141GB HBM3e: \+19% throughput vs H100 80GB HBM3 \(95% CI \+\d+% to \+\d+%; "
        r"higher is better\) — better than the baseline",
        sentence,
    ), sentence
    user.check("comparison")
    # Choose the other baseline: the sentence turns round.
    page.get_by_label("State every ratio against").select_option(label="H200 141GB HBM3e")
    page.get_by_role("button", name="Restate").click()
    page.wait_for_url(re.compile(r"/comparisons/\d+/$"))
    assert "Against the baseline: H200 141GB HBM3e" in page.locator("#conclusion").inner_text()
    turned = page.locator("ul.sentences li").first.inner_text()
    assert re.search(r"H100 80GB HBM3: −16% throughput vs H200 141GB HBM3e .* — worse than the baseline", turned)
    lines = list(csv.DictReader(io.StringIO(_download(page, page.get_by_role("link", name="CSV")).decode())))
    assert len(lines) == 6 and all(r["digest"].startswith("sha256:") for r in lines)
    assert {r["configuration"] for r in lines if r["baseline"] == "True"} == {"H200 141GB HBM3e"}


def test_the_run_page_reads_as_the_document(user: User, fleet: dict[str, Any]) -> None:
    page = user.page
    run = fleet["h100"][0]
    page.goto(user.base + f"/runs/{run.pk}/")
    assert page.locator("#comparable input[type=checkbox]:checked").count() == 0  # nothing pre-ticked
    metrics = page.locator("#metrics").inner_text()
    assert "1,261" in metrics and "1260.800" not in metrics  # significant digits, thousands grouped
    assert re.search(r"energy\.joules\s+58,320\s+J", metrics) and re.search(
        r"energy\.average_power_w\s+486\s+W", metrics
    )
    headings = page.locator("#metrics table").nth(1).locator("thead").inner_text()
    assert "P99.9" not in headings.upper()  # no distribution states it: no empty column
    software = page.locator("#software").inner_text()
    assert "_" in software and "num threads" not in software  # keys as written
    history = page.get_by_role("link", name="History of this configuration")  # the series view
    assert history.count() == 1 and history.get_attribute("href").endswith(f"/runs/{run.pk}/history/")
    page.get_by_text("Show the document").click()
    user.check("run")


def test_a_decision_is_declared_in_its_form_and_its_answer_reads_at_both_widths(
    user: User, fleet: dict[str, Any]
) -> None:
    """The decision form and page, as the analyst uses them: every candidate of the question in one table that
    scrolls in its own box on a phone, its rows no taller than a few lines."""
    page = user.page
    page.goto(user.base + "/decisions/")
    user.check("decisions")
    # The inference question's form; the training question has its own below it, with its own labels.
    form = page.get_by_role("region", name="Declare a decision: size inference serving")
    form.get_by_label("Title").fill("Serve 3,000 tokens/s of decoder-small")
    form.get_by_label("Workload").fill("decoder-small")
    form.get_by_label("Scenario").select_option("server")
    form.get_by_label("p99 TTFT at most (ms)").fill("2000")
    form.get_by_label("Demand at peak").fill("3000")
    form.get_by_label("Demand unit").select_option("tokens/s")
    form.get_by_label("Price per system-hour (any system)").fill("98")
    user.click(form.get_by_role("button", name="Answer it"))
    page.wait_for_url(re.compile(r"/decisions/\d+/$"))
    candidates = page.locator("table").first.inner_text()
    assert "H200 141GB HBM3e, bf16" in candidates and "H100 80GB HBM3, int8" in candidates
    # The never-steady H100 run is its own candidate, and its label says so (it read "H100 80GB HBM3, bf16 ()")
    assert "H100 80GB HBM3, bf16, steady state not reached" in candidates and "()" not in candidates
    # The plain conclusion (the signed report's cover words) comes first, before the candidates' table
    assert page.locator("#conclusion").bounding_box()["y"] < page.locator("table").first.bounding_box()["y"]
    # What every candidate shares is said once above the table, not on every row, in words (never a field's path)
    shared = page.locator("p.small", has_text="Beside every candidate's figures").inner_text()
    assert "activations bf16" in shared and "precision.activations" not in shared
    # What the figures rest on is printed with them: the stated price, and the sustained demand taken as the peak
    assumed = page.locator("p.small", has_text="Assumptions").inner_text()
    assert "*: 98 USD per system-hour, as supplied" in assumed and "sustained demand taken equal to it" in assumed
    user.check("decision")
    page.set_viewport_size({"width": NARROW, "height": 844})
    tallest = page.evaluate("""() => Math.max(...Array.from(document.querySelectorAll('table')[0]
        .querySelectorAll('tbody tr')).map(r => r.getBoundingClientRect().height))""")
    # Squeezed to the phone's width, a row with a gap stood 752 px tall; scrolled in its own box, ~220 px.
    assert tallest < 260, f"a candidate's row is {tallest:.0f} px tall at {NARROW} px"
    page.set_viewport_size({"width": WIDE, "height": 900})


@pytest.mark.parametrize("path", ["/compare/", "/runs/{h100}/history/", "/alerts/", "/tokens/", "/agents/", "/jobs/"])
def test_the_other_pages_pass_axe_and_fit_a_phone(
    user: User, fleet: dict[str, Any], path: str, django_user_model: Any
) -> None:
    """Every page a signed-in user can open, not only the tasks' pages: axe, both widths, no page overflow (the
    agents' and jobs' pages as an admin, the only role that sees them)."""
    if path in ("/agents/", "/jobs/"):
        django_user_model.objects.get(username="vera").groups.add(Group.objects.get(name="admin"))
    response = user.page.goto(user.base + path.format(h100=fleet["h100"][0].pk))
    assert response.status == 200 and user.page.locator("h1").count() == 1, response.status
    user.check(path.strip("/").replace("/", "-").replace("{h100}", "run") or "home")


def test_the_sign_in_page_passes_axe_and_fits_a_phone(live_server: Any, chromium: Any, tmp_path: Path) -> None:
    context = chromium.new_context(viewport={"width": WIDE, "height": 900})
    page = context.new_page()
    page.goto(live_server.url + "/accounts/login/")
    User(page, live_server.url, tmp_path).check("sign-in")
    context.close()
