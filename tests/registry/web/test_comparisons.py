"""The comparison builder: refusals explained field by field, accepted comparisons stored and shown."""

from __future__ import annotations

from typing import Any

import pytest

from registry.models import Comparison
from registry.services.comparisons import comparison_create
from registry.services.submissions import submission_withdraw
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_a_refused_comparison_names_each_blocking_field_with_both_values(viewer: Any, fleet: dict[str, Any]) -> None:
    response = signed_in(viewer).post("/compare/", {"run": [fleet["a"].pk, fleet["int8"].pk], "axis": "system"})
    assert response.status_code == 422
    html = response.content.decode()
    assert "These runs cannot be compared" in html
    assert "precision.weights: bf16 vs int8" in html
    assert "Numeric precision" in html and "must be identical when comparing by system under test" in html
    assert not Comparison.objects.exists()


def test_the_same_runs_compare_along_the_precision_axis(
    viewer: Any, submitter: Any, server_example: dict[str, Any]
) -> None:
    import copy

    from registry.services.submissions import submission_create

    bf16, _ = submission_create(document=server_example, submitted_by=submitter)
    doc = copy.deepcopy(server_example)
    doc["precision"]["weights"] = "int8"
    doc["precision"]["quantization"] = {"method": "dynamic", "granularity": "per-channel", "library": "x"}
    int8, _ = submission_create(document=doc, submitted_by=submitter)
    response = signed_in(viewer).post("/compare/", {"runs": f"{bf16.pk}, {int8.pk}", "axis": "precision"})
    assert response.status_code == 302, response.content.decode()[:2000]


def test_an_accepted_comparison_is_stored_and_shown_with_statistics(viewer: Any, fleet: dict[str, Any]) -> None:
    client = signed_in(viewer)
    response = client.post(
        "/compare/", {"run": [fleet["a"].pk, fleet["b"].pk], "runs": str(fleet["c"].pk), "axis": "system"}
    )
    assert response.status_code == 302
    comparison = Comparison.objects.get()
    assert response["Location"] == f"/comparisons/{comparison.pk}/"
    html = client.get(response["Location"]).content.decode()
    for text in (
        "Comparable: these runs answer the same question",
        "Statistics",
        "Side by side",
        "software.driver.version",
        "Caveats",
        "Request decision report",
        f'<img src="/comparisons/{comparison.pk}/charts/headline.svg"',
    ):
        assert text in html, text


def test_charts_are_drawn_on_their_own_requests_not_the_pages(
    viewer: Any, fleet: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from registry.presentation import charts

    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"], fleet["c"]], axis="system", created_by=viewer)
    drawn: list[str] = []
    draw = charts.throughput_chart
    monkeypatch.setattr(charts, "throughput_chart", lambda *a: drawn.append("headline") or draw(*a))
    client = signed_in(viewer)
    html = client.get(f"/comparisons/{comparison.pk}/").content.decode()
    assert drawn == [] and "<svg" not in html
    urls = [
        u
        for u in (f"/comparisons/{comparison.pk}/charts/{n}.svg" for n in ("headline", "latency", "load", "derived"))
        if u in html
    ]
    assert urls[0].endswith("/headline.svg")
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml", url
        assert response.content.startswith(b"<svg") and b"<script" not in response.content
        assert "default-src 'none'" in response["Content-Security-Policy"]
    client.get(urls[0])
    assert drawn == ["headline"]  # once per comparison digest, then from the cache
    assert client.get(f"/comparisons/{comparison.pk}/charts/nonsense.svg").status_code == 404
    from django.test import Client

    assert Client().get(urls[0]).status_code == 302  # to the sign-in page, like the comparison page itself


def test_fewer_than_two_runs_is_explained(viewer: Any, fleet: dict[str, Any]) -> None:
    response = signed_in(viewer).post("/compare/", {"runs": str(fleet["a"].pk), "axis": "system"})
    assert response.status_code == 400 and "Choose two or more runs" in response.content.decode()


def test_unknown_runs_are_named(viewer: Any, fleet: dict[str, Any]) -> None:
    response = signed_in(viewer).post("/compare/", {"runs": f"{fleet['a'].pk} 999999", "axis": "system"})
    assert response.status_code == 400 and "no run 999999" in response.content.decode()


def test_a_withdrawn_run_cannot_be_compared(viewer: Any, admin_user: Any, fleet: dict[str, Any]) -> None:
    submission_withdraw(submission=fleet["b"], reason="bad cooling", actor=admin_user)
    response = signed_in(viewer).post("/compare/", {"run": [fleet["a"].pk, fleet["b"].pk], "axis": "system"})
    assert response.status_code == 422 and "bad cooling" in response.content.decode()


def test_the_builder_prefills_runs_from_the_query_string(viewer: Any) -> None:
    html = signed_in(viewer).get("/compare/?run=3&run=5").content.decode()
    assert 'value="3, 5"' in html


def test_caveats_name_each_run_by_its_id_as_the_report_does(viewer: Any, fleet: dict[str, Any]) -> None:
    """A caveat of one run names it by its registry id (linked), never by where it stood ("Run 1 of 2"); a caveat
    every run shares is said once, with each id. Runs given out of id order, so positions and ids differ."""
    import re

    runs = [fleet["c"], fleet["a"], fleet["b"]]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=viewer)
    caveats = comparison.result["caveats"]
    assert any(c.get("run") is not None for c in caveats), caveats  # the case this test is about
    html = signed_in(viewer).get(f"/comparisons/{comparison.pk}/").content.decode()
    section = html[html.index('id="caveats-heading"') : html.index("</ul>", html.index('id="caveats-heading"'))]
    assert not re.search(r"Runs? \d+ of \d+", section), section
    items = re.findall(r"<li>(.*?)</li>", section, flags=re.S)
    for message in {c["message"] for c in caveats}:
        said = [item for item in items if message in item]
        assert len(said) == 1, (message, said)  # said once, however many runs it concerns
        ids = [runs[c["run"]].pk for c in caveats if c["message"] == message and c.get("run") is not None]
        for pk in ids:
            assert f'<a href="/runs/{pk}/">{pk}</a>' in said[0], (pk, said[0])
