"""A decision never weighs one request shape's load against another's (shared/DECISIONS.md, "Which runs answer it":
same workload, scenario and constraints; the request shape is controlled on the iso-quality axis), as it never
weighs one served model against another.

The evidence: files aiperf 0.13.0 wrote against the simulated endpoint, imported through `benchreg import serving`
(`import_results serving`) under one deployment that states no shape, so each run's shape is what its files say:
the single-turn concurrency sweep of tests/fixtures/serving/aiperf-0.13.0 (1, 4, 16: 64/32 fixed) and the
three-turn conversations of tests/fixtures/serving/more/aiperf-multiturn (concurrency 2: the same 64/32 a turn, the
prompts growing with the conversation).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from registry.models import AuditHead, Decision, Submission
from registry.services.decision_followups import decision_report

from .signed_pdf import signed_report_words

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "serving"
SINGLE = FIXTURES / "aiperf-0.13.0" / "concurrency"
MULTI = FIXTURES / "more" / "aiperf-multiturn"
QUESTION: dict[str, Any] = {
    "workload": "simulated-64-32",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p50", "max_ms": 200}],
    "demand": {"value": 50, "unit": "requests/s"},
    "prices": {"system_hour": {"*": 4.0}},
}


DEPLOYMENT: dict[str, Any] = {
    "system": {"accelerators": {"vendor": "NVIDIA", "model": "H100", "count": 1}},
    "engine": {"name": "benchreg-simulated", "version": "1"},
    "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "bf16"},
    "parallelism": {"tensor": 1},
    "workload": {"name": "simulated-64-32"},
}


@pytest.fixture
def both(tmp_path: Path) -> dict[str, set[int]]:
    deployment = tmp_path / "deployment.json"
    deployment.write_text(json.dumps(DEPLOYMENT))
    for folder in (SINGLE, MULTI):
        call_command("import_results", "serving", str(folder), "--deployment", str(deployment))
    runs = {"single": set(), "multi": set()}
    for run in Submission.objects.all():
        runs[run.document["workload"]["request_shape"]["turns"]].add(run.pk)
    assert (len(runs["single"]), len(runs["multi"])) == (3, 1)
    return runs


def _post(user: Any, question: dict[str, Any]) -> Any:
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    return client.post("/api/v1/decisions", {"title": "50 req/s", "question": question}, format="json")


def _shape(run_id: int) -> dict[str, Any]:
    return Submission.objects.get(pk=run_id).document["workload"]["request_shape"]


def test_a_question_that_names_no_shape_over_two_shapes_is_refused_with_the_shapes_listed(user, both) -> None:
    response = _post(user, QUESTION)
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["errors"][0]["pointer"] == "/question/request_shape"
    assert "have 2 request shapes" in body["detail"] and "never weighs one load against another" in body["detail"]
    assert "64/32 fixed (3 run(s) on 1x H100)" in body["detail"]
    assert "64/32 fixed, multi-turn (1 run(s) on 1x H100)" in body["detail"]
    assert not Decision.objects.exists()  # nothing half-stored
    # the shape the refusal gives, pasted as it is, answers
    example = json.loads(
        body["detail"].split("workload.request_shape, e.g. ", 1)[1].split("); the shapes stored", 1)[0]
    )
    assert _post(user, {**QUESTION, "request_shape": example}).status_code == 201


@pytest.mark.parametrize("asked", ["single", "multi"])
def test_a_question_naming_a_shape_answers_from_its_runs_and_says_why_the_others_are_left_out(
    user, both, asked
) -> None:
    other = "multi" if asked == "single" else "single"
    shape = _shape(min(both[asked]))
    shape = {k: v for k, v in shape.items() if k != "notes"}  # each run's own words: never part of the shape
    response = _post(user, {**QUESTION, "request_shape": shape})
    assert response.status_code == 201, response.content
    answer = response.json()["answer"]
    cited = {r["id"] for c in answer["candidates"] for r in c["runs"]}
    levels = {
        r["id"] for c in answer["candidates"] for lv in (c.get("sweep") or {}).get("levels", []) for r in lv["runs"]
    }
    assert cited | levels <= both[asked] and cited
    assert {x["run"]["id"] for x in answer["left_out"]} == both[other]
    words = {"single": "64/32 fixed", "multi": "64/32 fixed, multi-turn"}
    assert {x["reason"] for x in answer["left_out"]} == {
        f"requests of {words[other]}, the question asks for {words[asked]}"
    }
    assert f"for requests of {words[asked]} at 50 requests/s" in answer["question"]


@pytest.mark.parametrize("shape", ["64/32", {}, {"kind": "fixed", "input_tokens": {"mean": 2**70}}])
def test_a_request_shape_that_is_no_shape_is_refused_by_field(user, both, shape) -> None:
    response = _post(user, {**QUESTION, "request_shape": shape})
    assert response.status_code == 422, response.content
    # (an integer no double holds is refused where it stands, before the question is read)
    assert response.json()["errors"][0]["pointer"].startswith("/question/request_shape")
    assert not Decision.objects.exists()


def test_the_decision_page_refuses_two_shapes_in_words_and_answers_the_shape_pasted_into_its_form(user, both) -> None:
    client = APIClient(SERVER_NAME="localhost")
    client.force_login(user)
    form = {"title": "50 req/s", "workload": "simulated-64-32", "scenario": "server", "demand": "50"}
    form |= {"demand_unit": "requests/s", "price_per_system_hour": "4"}
    refused = client.post("/decisions/", form)
    assert refused.status_code == 400 and not Decision.objects.exists()
    page = refused.content.decode()
    assert "have 2 request shapes" in page and "64/32 fixed, multi-turn (1 run(s) on 1x H100)" in page

    shape = {k: v for k, v in _shape(min(both["multi"])).items() if k != "notes"}
    answered = client.post("/decisions/", {**form, "request_shape": json.dumps(shape)})
    assert answered.status_code == 302, answered.content.decode()[:2000]
    decision = Decision.objects.get()
    assert decision.question["request_shape"] == shape
    page = client.get(answered["Location"]).content.decode()
    assert "for requests of 64/32 fixed, multi-turn" in page
    assert "requests of 64/32 fixed, the question asks for 64/32 fixed, multi-turn" in page

    for wrong in ("{not json", "[1, 2]", '{"kind": NaN}'):
        bad = client.post("/decisions/", {**form, "request_shape": wrong})
        assert bad.status_code == 400 and "The request shape is" in bad.content.decode()
    assert Decision.objects.count() == 1


@pytest.mark.slow  # a signed PDF: run early (tests/conftest.py starts slow modules first)
def test_a_signed_report_of_a_question_naming_a_shape_says_the_shape_and_leaves_the_other_out(
    user, tmp_path, settings, django_capture_on_commit_callbacks
) -> None:
    """The meeting of the two features: single-turn sweeps of two systems (aiperf's files on one, guidellm's on the
    other: the same files imported under two deployments would be one measurement, the newer superseding the older),
    beside a conversation run on the first; a question naming the single-turn shape answers from the two sweeps,
    and its signed report states the shape in its question, compares like for like and still verifies."""
    settings.DATA_DIR, settings.BENCHREG_CHECKPOINT_KEY = tmp_path, ""
    AuditHead.objects.get_or_create(id=1)
    guidellm = FIXTURES / "guidellm" / "concurrent" / "benchmarks.json"
    for model, vendor, folders in (("H100", "NVIDIA", (SINGLE, MULTI)), ("MI300X", "AMD", (guidellm,))):
        deployment = tmp_path / f"{model}.json"
        deployment.write_text(
            json.dumps({**DEPLOYMENT, "system": {"accelerators": {"vendor": vendor, "model": model, "count": 1}}})
        )
        for folder in folders:
            call_command("import_results", "serving", str(folder), "--deployment", str(deployment))
    single = next(r for r in Submission.objects.all() if r.document["workload"]["request_shape"]["turns"] == "single")
    shape = {k: v for k, v in _shape(single.pk).items() if k != "notes"}
    response = _post(user, {**QUESTION, "request_shape": shape})
    assert response.status_code == 201, response.content
    answer = response.json()["answer"]
    assert len(answer["candidates"]) == 2 and len(answer["left_out"]) == 1
    with django_capture_on_commit_callbacks(execute=True):
        report = decision_report(decision=Decision.objects.get(), requested_by=user)
    report.refresh_from_db()
    assert report.status == "ready", report.last_error
    compared = [m.submission.document["workload"]["request_shape"]["turns"] for m in report.comparison.members.all()]
    assert compared and set(compared) == {"single"}  # the conversation run is in no comparison of the report
    flat = signed_report_words(report, tmp_path)
    assert "for requests of 64/32 fixed at 50 requests/s" in flat
    assert "64/32 fixed, multi-turn" not in flat  # the run of another shape is neither cited nor compared
    assert "1 run matched the workload but not the question" in flat
    # the long question and the six gaps named make a cover set closer, never one that spills onto a second page
    cover = signed_report_words(report, tmp_path, last_page=1)
    assert "WHAT TO DO NEXT" in cover and "Appendix B says how to verify it" in cover
