"""Sweep pages: a run that is one level of a sweep shows the sweep's frontier and the level used at a stated
interactivity; a decision on sweeps shows where each capacity was read and draws the frontier; a comparison of two
sweeps' levels compares them at ?per_user= in words. Documents follow tests/protocol/serving_law.py."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.protocol.serving_law import sweep_docs
from tests.registry.web.conftest import signed_in
from tests.registry.web.conftest import store_through_api as _store

pytestmark = pytest.mark.django_db
NOISE = (0.98, 1.0, 1.02)


def _user() -> Any:
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user("sweeper", password="x")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return user


def test_the_run_page_of_a_level_shows_its_sweep_and_the_level_used_at_a_target() -> None:
    user = _user()
    ids = _store(user, sweep_docs((1, 2, 4, 8, 16, 32)))
    web = signed_in(user, SERVER_NAME="localhost")
    page = web.get(f"/runs/{ids[0]}/?per_user=48").content.decode()
    assert "Load sweep" in page and "sweep-a" in page and "<svg" in page
    assert "At 48 tok/s per user, 8×B200 delivers 50 output tokens/s per accelerator" in page
    assert "not measured" in page and all(f'href="/runs/{i}/"' in page for i in ids)
    bad = web.get(f"/runs/{ids[0]}/?per_user=fast")
    assert bad.status_code == 200 and "per_user: a positive number" in bad.content.decode()


def test_the_decision_page_reads_a_sweep_at_its_knee_and_draws_the_frontier() -> None:
    user = _user()
    _store(user, sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=NOISE))
    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    question = {
        "workload": "decoder-small",
        "scenario": "server",
        "interactivity": {"min_tokens_per_second_per_user": 30},
        "demand": {"value": 20000, "unit": "tokens/s"},
        "prices": {"system_hour": {"8x B200": 100}},
        "provisioning": {"nameplate_kw": {"8x B200": 14.3}, "pue": 1.25},
    }
    response = api.post("/api/v1/decisions", {"title": "sweep", "question": question}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    (c,) = body["answer"]["candidates"]
    assert c["sweep"]["knee"]["level"]["load"] == 16.0 and c["systems_needed"]["value"] == 38  # by hand: see
    # tests/protocol/test_decisions_sweeps.py (C = 533.3 tokens/s at concurrency 16)
    page = signed_in(user, SERVER_NAME="localhost").get(f"/decisions/{body['id']}/").content.decode()
    assert "Load sweeps" in page and "capacity read at concurrency 16" in page and "<svg" in page
    assert "per provisioned MW" in page
    unknown = api.post(
        "/api/v1/decisions", {"title": "t", "question": {**question, "interactivity": {"p99": 1}}}, format="json"
    )
    assert unknown.status_code == 422 and "/interactivity/p99" in unknown.content.decode()


def test_two_sweeps_are_compared_at_equal_interactivity_on_their_page() -> None:
    """Two sweeps that measured the same thing on two systems (contract 1.2: their sweep ids are only disclosed)
    are set side by side on /sweeps/compare/, with the ratio at the stated interactivity in words."""
    user = _user()
    _store(user, sweep_docs((1, 2, 4, 8, 16), sweep="a", noise=NOISE))
    law_b = {"accelerators": 2, "model": "MI355X", "u0": 80, "c0": 4}
    _store(user, sweep_docs((1, 2, 4, 8, 16), sweep="b", noise=NOISE, **law_b))
    web = signed_in(user, SERVER_NAME="localhost")
    page = web.get("/sweeps/compare/?sweep=a&sweep=b&per_user=48").content.decode()
    assert "<svg" in page and "delivers 0.93" in page and "95% CI 0.896–0.981" in page and "not interpolated" in page
    missing = web.get("/sweeps/compare/?sweep=a&sweep=nowhere")
    assert missing.status_code == 400 and "no stored run names this sweep" in missing.content.decode()
    long = web.get("/sweeps/compare/?sweep=" + "x" * 101)
    assert long.status_code == 400 and "at most 100 characters" in long.content.decode()


def notices(page: str) -> list[str]:
    """The page's refusals, as the reader sees them."""
    return [html.unescape(n) for n in re.findall(r'<p class="notice notice--error" role="note">(.*?)</p>', page)]


def _shaped(docs: list[dict[str, Any]], shape: dict[str, Any]) -> list[dict[str, Any]]:
    for doc in docs:
        doc["workload"]["request_shape"] = shape
    return docs


FIXED = {
    "kind": "fixed",
    "input_tokens": {"mean": 1000, "distribution": "constant"},
    "output_tokens": {"mean": 200, "distribution": "constant"},
}
AGENTIC = {"kind": "agentic-multi-turn", "turns": "multi"}


def test_sweeps_with_different_request_shapes_are_refused_in_words_and_given_no_ratio() -> None:
    user = _user()
    _store(user, _shaped(sweep_docs((1, 2, 4, 8, 16), sweep="a", noise=NOISE), FIXED))
    law_b = {"accelerators": 2, "model": "MI355X", "u0": 80, "c0": 4}
    _store(user, _shaped(sweep_docs((1, 2, 4, 8, 16), sweep="b", noise=NOISE, **law_b), AGENTIC))
    page = signed_in(user, SERVER_NAME="localhost").get("/sweeps/compare/?sweep=a&sweep=b&per_user=48").content.decode()
    assert notices(page) == [
        "Not like for like on the system under test axis: request shape differs: 1000/200 fixed (8×B200 (a)) vs "
        "agentic multi-turn (2×MI355X (b)). No ratio is given: each sweep's frontier is shown as measured, not set "
        "against the other."
    ]
    assert "delivers" not in page and "<svg" in page  # each frontier is still drawn, as measured


def test_the_levels_of_two_sweeps_at_one_load_form_one_comparison() -> None:
    """Contract 1.2: the sweep a level belongs to is disclosed, so the same load on two systems is comparable."""
    user = _user()
    a = _store(user, sweep_docs((8, 16), sweep="a"))
    b = _store(user, sweep_docs((8, 16), sweep="b", accelerators=2, model="MI355X"))
    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    response = api.post("/api/v1/comparisons", {"runs": [a[1], b[1]], "axis": "system"}, format="json")
    assert response.status_code == 201, response.content
    disclosed = [d["words"] for d in response.json()["result"]["disclosures"]]
    assert "scenario.sweep.id: a vs b" in disclosed
    refused = api.post("/api/v1/comparisons", {"runs": [a[0], b[1]], "axis": "system"}, format="json")
    assert refused.status_code == 422 and "scenario.concurrency: 8 vs 16" in refused.content.decode()


def test_the_shared_kimi_and_glm_sweeps_are_not_like_for_like(tmp_path: Any) -> None:
    """The real aiperf sweeps of ../shared/data/serving: both agentic multi-turn, but two models (and two
    workload versions and weight formats): the page says so and gives no ratio."""
    from registry.importers import serving
    from registry.models import Submission
    from registry.services.imports_serving import serving_import
    from tests.registry.importers.serving.test_aiperf_sweeps import DATA, GLM, KIMI, deployment_file

    if not DATA.exists():
        pytest.skip("the shared serving data is not beside this checkout")
    user = _user()
    for sweep in (KIMI, GLM):
        serving_import(
            paths=[DATA / sweep], deployment=serving.load(deployment_file(tmp_path, sweep), {}), submitted_by=user
        )
    ids = {
        r.document["system"]["accelerators"][0]["model"]: r.document["scenario"]["sweep"]["id"]
        for r in Submission.objects.all()
    }
    page = signed_in(user, SERVER_NAME="localhost").get(
        f"/sweeps/compare/?sweep={ids['B200']}&sweep={ids['Instinct MI355X']}&per_user=30"
    )
    text = page.content.decode()
    assert page.status_code == 200 and notices(text)[0].startswith("Not like for like on the system under test axis")
    assert "served model differs" in text and "workload.version: 060226" in text
    assert "delivers" not in text


def test_guidellm_sweeps_imported_through_the_command_show_their_frontiers(tmp_path: Any) -> None:
    """guidellm's levels carry tokens/s per user (1000 / its per-request TPOT p50), so two of its runs imported
    through `benchreg import serving` sit on /sweeps/compare/ with their frontiers."""
    from protocol.numbers import Style, number
    from tests.registry.importers.serving.test_tool_fixtures import GUIDELLM, run_import

    user = _user()
    docs = run_import(tmp_path, GUIDELLM / "concurrent" / "benchmarks.json", GUIDELLM / "sweep")
    sweeps = list(dict.fromkeys(d["scenario"]["sweep"]["id"] for d in docs))
    page = (
        signed_in(user, SERVER_NAME="localhost")
        .get(f"/sweeps/compare/?sweep={sweeps[0]}&sweep={sweeps[1]}")
        .content.decode()
    )
    assert "<svg" in page and "filled points are its frontier" in page
    rows = re.findall(r'<tr><th scope="row">.*?</tr>', page, re.S)
    assert len(rows) == len(docs) == 6 and sum(">frontier" in r for r in rows) >= 2
    for doc in docs:  # each level's tokens/s per user as the page shows it: 1000 / the file's TPOT p50
        assert number(1000 / doc["metrics"]["tpot_ms"]["p50"], Style.SIGNIFICANT) in page


def test_the_compare_page_offers_the_sweeps_stored_lately_newest_first() -> None:
    user = _user()
    _store(user, sweep_docs((1, 2), sweep="older"))
    _store(user, sweep_docs((1, 2), sweep="newer"))
    page = signed_in(user, SERVER_NAME="localhost").get("/sweeps/compare/").content.decode()
    assert '<option value="newer">' in page and '<option value="older">' in page
    assert page.index('<option value="newer">') < page.index('<option value="older">')
