"""The comparison's conclusion (protocol.comparability, `result["conclusion"]`) as the UI shows it: the statement
and its blocking reasons in one box, and the baseline the requester picked in the comparison builder.

These rest on the conclusion and `baseline` that the statistics work adds to compare() and comparison_create()
(see the agreed interface); they pass once both are merged."""

from __future__ import annotations

import pytest

from registry.models import Comparison

from .conftest import signed_in

pytestmark = pytest.mark.django_db


def test_the_comparison_page_shows_the_statement_with_its_reasons_in_one_box(viewer, fleet):
    client = signed_in(viewer)
    answer = client.post("/compare/", {"runs": f"{fleet['a'].pk}, {fleet['b'].pk}", "axis": "system"})
    assert answer.status_code == 302
    comparison = Comparison.objects.latest("pk")
    stated = comparison.result["conclusion"]
    page = client.get(answer["Location"]).content.decode()
    box = page[page.index('id="conclusion"') :]
    box = box[: box.index("</div>")]
    assert f'data-outcome="{stated["outcome"]}"' in page
    assert stated["statement"].replace("'", "&#x27;") in box
    for reason in stated["reasons"]:
        assert reason["message"].replace("'", "&#x27;") in box


def test_the_builders_baseline_becomes_the_comparisons_baseline(viewer, fleet):
    client = signed_in(viewer)
    runs = [fleet["a"], fleet["b"], fleet["c"]]
    chosen = fleet["b"]
    answer = client.post(
        "/compare/", {"runs": ", ".join(str(r.pk) for r in runs), "axis": "software", "baseline": chosen.pk}
    )
    assert answer.status_code in (302, 422), answer.content[:500]
    if answer.status_code == 302:
        comparison = Comparison.objects.latest("pk")
        arms = comparison.result["arms"]
        baseline = comparison.result["conclusion"]["baseline"]
        assert runs.index(chosen) in arms[baseline]["runs"]
        assert all(p["baseline"] == baseline for p in comparison.result["pairwise"] if p.get("statement"))


def test_the_api_detail_gives_the_stored_conclusion_while_every_run_stands(api, fleet):
    created = api.post(
        "/api/v1/comparisons", {"runs": [fleet["a"].pk, fleet["b"].pk], "axis": "system"}, format="json"
    ).json()
    body = api.get(f"/api/v1/comparisons/{created['id']}").json()
    stored = body["result"]["conclusion"]
    assert body["conclusion"]["outcome"] == stored["outcome"] and body["conclusion"]["statement"] == stored["statement"]
