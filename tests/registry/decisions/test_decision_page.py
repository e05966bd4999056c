"""The decision page reads like its signed report's cover (issue 40, "read the answer first"): the plain conclusion
comes before the candidates' table and is the same text the PDF's cover prints (extracted from a really issued,
signed report); a caveat every candidate shares is said once; no field path or JSON pointer reaches a reader; a
mixed-precision set is named by all its precisions; a verdict reads alike on a comparison page and in its PDF; the
report is offered only where one can be issued; and the comparison-report form prices configurations the way
decisions do, refusing a price that matches no run with the keys that would."""

from __future__ import annotations

import html
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from rest_framework.test import APIClient

from devtools.documents import variant as doc_variant
from registry.models import AuditHead, Decision, Report, Submission
from registry.presentation import answers
from registry.presentation.words import outcome_words
from registry.services.comparisons import comparison_create
from registry.services.decision_followups import decision_report
from registry.services.reports import report_bytes, report_request
from registry.web.forms import DecisionForm
from tests.conftest import load_example

pytestmark = pytest.mark.django_db
QUESTION = {
    "workload": "decoder-small",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"system_hour": {"1x H100": 98.0, "1x MI300X": 80.0}, "energy_per_kwh": 0.1},
}


def _doc(system: str, tput: float, ttft: float = 300.0, model: str = "H100", weights: str = "bf16") -> dict[str, Any]:
    """The server example on `system` with `model` accelerators at `weights` precision, meeting a 0.99 target."""
    doc = doc_variant(load_example("inference-server-h100-bf16"), system, tput)
    doc["metrics"]["ttft_ms"]["p99"] = ttft
    doc["metrics"]["ttft_ms"]["max"] = max(ttft, doc["metrics"]["ttft_ms"]["max"])
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    doc["system"]["accelerators"][0]["model"] = model
    doc["precision"]["weights"] = weights
    if weights == "fp8":
        doc["precision"]["quantization"] = {"method": "static", "granularity": "per-tensor"}
    return doc


def _user() -> Any:
    user = get_user_model().objects.create_user(f"buyer-{time.monotonic_ns()}", password="pw-for-tests-only")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return user


def _client(user: Any) -> APIClient:
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    return client


def _submit(client: APIClient, docs: list[dict[str, Any]]) -> list[int]:
    ids = []
    for doc in docs:
        response = client.post("/api/v1/submissions", doc, format="json")
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    return ids


def _mixed(prefix: str = "") -> list[dict[str, Any]]:
    """Three H100 bf16 runs, three MI300X fp8 runs and one L40S bf16 run: a mixed-precision set of candidates."""
    return [
        *(_doc(f"{prefix}h{i}", 1000.0 + i) for i in range(3)),
        *(_doc(f"{prefix}m{i}", 1200.0 + i, 500.0, "MI300X", "fp8") for i in range(3)),
        _doc(f"{prefix}g0", 900.0, 400.0, "L40S"),
    ]


MIS_KEYED = {**QUESTION, "prices": {"system_hour": {"1x H100": 98.0, "1x MI300X": 80.0, "8x NVIDIA B200": 300.0}}}


def _text(markup: str) -> str:
    """A page's or a PDF's words as a reader reads them: tags dropped, entities decoded, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def _pdf_text(pdf: bytes, tmp_path: Path, first: int | None = None, last: int | None = None) -> str:
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    pages = [*(["-f", str(first)] if first else []), *(["-l", str(last)] if last else [])]
    out = subprocess.run(["pdftotext", *pages, str(path), "-"], capture_output=True, text=True, check=True).stdout
    return " ".join(out.split())


def _decision(question: dict[str, Any] = MIS_KEYED, docs: list[dict[str, Any]] | None = None) -> tuple[Any, Decision]:
    user = _user()
    docs = _mixed() if docs is None else docs
    client = _client(user)
    _submit(client, docs)
    response = client.post("/api/v1/decisions", {"title": "20k tokens/s", "question": question}, format="json")
    assert response.status_code == 201, response.content
    return user, Decision.objects.get(pk=response.json()["id"])


def _page(user: Any, decision: Decision) -> str:
    web = Client(SERVER_NAME="localhost")
    web.force_login(user)
    response = web.get(f"/decisions/{decision.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_opens_with_the_conclusion_the_signed_reports_cover_prints(
    settings: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    settings.DATA_DIR, settings.BENCHREG_CHECKPOINT_KEY = tmp_path, ""
    AuditHead.objects.get_or_create(id=1)
    user, decision = _decision()
    page = _page(user, decision)
    said = answers.conclusion(decision.answers.get(number=1).answer)
    # Who meets the question, the cheapest with the price it rests on, what would change it: before the table.
    assert said["headline"] == "2 of the 3 candidates meet the question's objectives: MI300X, fp8; H100, bf16."
    cheapest = said["why"][0]
    assert cheapest.startswith("Of those, the lowest cost per million tokens: MI300X, fp8, 18.89 USD with 17 systems")
    assert "(80 USD per system-hour for 1x MI300X, as supplied)" in cheapest
    shown = _text(page)
    table = shown.index("Configuration Meets Systems (95% CI)")  # the candidates' table, by its header row
    assert shown.index(said["headline"]) < shown.index(cheapest) < shown.index("What to do next") < table

    with django_capture_on_commit_callbacks(execute=True):  # the report renders after commit
        report = decision_report(decision=decision, requested_by=user)
    report.refresh_from_db()
    assert report.status == "ready", report.last_error
    cover = _pdf_text(report_bytes(report), tmp_path, last=1)
    for sentence in [said["headline"], *said["why"], *said["next"]]:
        assert sentence in cover, sentence
        assert sentence in shown, sentence


def test_a_caveat_every_candidate_shares_is_said_once_and_no_field_path_reaches_a_reader(
    settings: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    settings.DATA_DIR, settings.BENCHREG_CHECKPOINT_KEY = tmp_path, ""
    AuditHead.objects.get_or_create(id=1)
    user, decision = _decision()
    shown = _text(_page(user, decision))
    # Every candidate was measured at one offered load: one line for all, not one per candidate.
    assert shown.count("every run was measured at one offered load") == 1
    assert shown.count("All 3 candidates were measured at one offered load only") == 1
    assert "one offered load only (no sweep)" not in shown  # the table's Gaps column leaves it out of each row
    assert "fewer than 3 runs" in shown  # a gap of one candidate stays in its own row and sentence
    # What is shown beside each candidate's figures is in words, never the contract's pointers or field paths.
    assert "/metrics/" not in shown and "metrics.quality" not in shown and "precision.weights" not in shown
    assert (
        "quality measured as token-agreement-vs-fp32" in shown
        and "quality target (ratio of the reference) 0.99" in shown
    )

    with django_capture_on_commit_callbacks(execute=True):
        report = decision_report(decision=decision, requested_by=user)
    report.refresh_from_db()
    assert report.status == "ready", report.last_error
    pdf = _pdf_text(report_bytes(report), tmp_path)
    assert "/metrics/" not in pdf and "metrics.quality" not in pdf
    assert pdf.count("Every candidate: one offered load only (no sweep).") == 1
    assert "Gaps: one offered load only" not in pdf
    # The price keyed by no candidate is refused in the PDF too, with the keys that would match.
    assert "Not used: the price per system-hour for '8x NVIDIA B200' matches no candidate" in pdf


def test_a_mixed_precision_set_is_named_by_every_precision_on_the_page_and_the_cover(
    settings: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    settings.DATA_DIR, settings.BENCHREG_CHECKPOINT_KEY = tmp_path, ""
    AuditHead.objects.get_or_create(id=1)
    user, decision = _decision()
    scope = "3 candidate configurations, in fp8 weights with bf16 activations and bf16."  # MI300X, fp8 first
    shown = _text(_page(user, decision))
    assert scope in shown and shown.index(scope) < shown.index("Configuration Meets Systems (95% CI)")
    with django_capture_on_commit_callbacks(execute=True):
        report = decision_report(decision=decision, requested_by=user)
    report.refresh_from_db()
    cover = _pdf_text(report_bytes(report), tmp_path, last=1)
    assert f"Candidates {scope}" in cover
    assert "server @ 20 req/s, bf16; fp8 weights with bf16 activations" in cover  # the runs' Workload row


def test_the_report_is_offered_only_where_it_can_be_issued_and_the_page_says_why_not() -> None:
    """One run in all: no two runs to compare, so the report service would refuse. The page says so beforehand."""
    user, decision = _decision(QUESTION, [_doc("solo-h0", 1000.0)])
    page = _text(_page(user, decision))
    assert "Issue a signed report of this answer" not in page
    assert "A signed report of this answer cannot be issued now: a decision report needs at least two" in page
    # Where it can be issued, it is offered.
    other_user, other = _decision(QUESTION, _mixed("other-")[:4])
    assert "Issue a signed report of this answer" in _page(other_user, other)


def test_the_report_is_not_offered_to_whoever_has_too_many_reports_pending(settings: Any) -> None:
    user, decision = _decision(QUESTION, _mixed()[:4])
    settings.BENCHREG_REPORTS_PENDING_PER_PERSON = 1
    stored, _ = comparison_create(runs=list(Submission.objects.order_by("id")[:2]), axis="system", created_by=user)
    Report.objects.create(
        comparison=stored,
        title="t",
        decision="d",
        requested_by=user,
        requested_by_name=user.username,
        created_at=stored.created_at,
    )
    page = _text(_page(user, decision))
    assert "Issue a signed report of this answer" not in page and "you have 1 reports queued or rendering" in page


def test_a_verdict_reads_alike_on_the_comparison_page_and_in_its_signed_report(
    settings: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """Two configurations whose runs differ by noise only: "not distinguishable from noise" on the page and in the
    PDF, never "no difference beyond the noise" in one of them."""
    from tests.registry.reports.conftest import variant

    settings.DATA_DIR, settings.BENCHREG_CHECKPOINT_KEY = tmp_path, ""
    AuditHead.objects.get_or_create(id=1)
    user = _user()
    client = _client(user)
    docs = [variant(name, 1400.0, seed=i) for i, name in enumerate(["lab-h100-a", "lab-h200-b"] * 3)]
    for doc in docs[1::2]:
        doc["system"]["accelerators"][0]["model"] = "H200"  # another system, measured alike: a tie
    ids = _submit(client, docs)
    runs = list(Submission.objects.filter(pk__in=ids).order_by("id"))
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user)
    outcome = comparison.result["conclusion"]["outcome"]
    assert outcome == "indistinguishable", comparison.result["conclusion"]
    with django_capture_on_commit_callbacks(execute=True):
        report = report_request(comparison=comparison, title="t", decision="d", requested_by=user)
    report.refresh_from_db()
    assert report.status == "ready", report.last_error
    web = Client(SERVER_NAME="localhost")
    web.force_login(user)
    page = _text(web.get(f"/comparisons/{comparison.pk}/").content.decode()).casefold()
    pdf = _pdf_text(report_bytes(report), tmp_path).casefold()
    words = outcome_words(outcome)
    assert f"conclusion: {words}" in page and f"the statistics' conclusion: {words}" in pdf
    assert "beyond the noise" not in page and "beyond the noise" not in pdf
    assert "within noise (interval" not in pdf  # the pairwise table's words are the same table's too


def test_the_report_form_prices_configurations_as_decisions_do_and_refuses_a_price_no_run_has(
    django_capture_on_commit_callbacks: Any,
) -> None:

    user = _user()
    ids = _submit(_client(user), [_doc("lab-h100-01", 1000.0), _doc("lab-h200-02", 1200.0, model="H200")])
    comparison, _ = comparison_create(
        runs=list(Submission.objects.filter(pk__in=ids).order_by("id")), axis="system", created_by=user
    )
    web = Client(SERVER_NAME="localhost")
    web.force_login(user)
    page = _text(web.get(f"/comparisons/{comparison.pk}/").content.decode())
    assert "Hourly prices per configuration" in page and "This comparison's configurations: 1x H100, 1x H200." in page
    form = {"title": "t", "decision": "d", "prices": "1x H100 = 3.0\n8x NVIDIA B200 = 30"}
    refused = web.post(f"/comparisons/{comparison.pk}/reports", form)
    said = _text(refused.content.decode())
    assert refused.status_code == 400
    assert "the price for '8x NVIDIA B200' matches no run of this comparison" in said
    assert "the runs' configuration keys are '1x H100', '1x H200' (or '*' for any system)" in said
    with django_capture_on_commit_callbacks(execute=True):
        priced = web.post(f"/comparisons/{comparison.pk}/reports", {**form, "prices": "1 × h100 = 3.0\n* = 4.5"})
    assert priced.status_code == 302
    report = Report.objects.get(requested_by=user)
    # The comparison's cost is per system, as its contract keys it: each run's system priced by its configuration.
    assert report.comparison.inputs["prices"] == {"lab-h100-01": 3.0, "lab-h200-02": 4.5}


def test_the_decision_form_takes_the_same_price_lines() -> None:

    form = DecisionForm(
        data={
            "title": "t",
            "workload": "decoder-small",
            "scenario": "server",
            "demand": "3000",
            "demand_unit": "tokens/s",
            "prices": "8x H100 = 98\n* = 50",
        }
    )
    assert form.is_valid(), form.errors
    assert form.question()["prices"] == {"system_hour": {"8x H100": 98.0, "*": 50.0}}
    wrong = DecisionForm(data={**form.data, "prices": "8x H100 costs 98"})
    assert not wrong.is_valid() and "configuration = price per system-hour" in str(wrong.errors["prices"])


def test_the_reports_api_refuses_a_price_no_compared_run_has_naming_the_keys_that_would_match() -> None:
    user = _user()
    client = _client(user)
    ids = _submit(client, [_doc("api-h100-01", 1000.0), _doc("api-h200-02", 1200.0, model="H200")])
    comparison, _ = comparison_create(
        runs=list(Submission.objects.filter(pk__in=ids).order_by("id")), axis="system", created_by=user
    )
    body = {"comparison": comparison.pk, "title": "t", "decision": "d", "prices": {"8x NVIDIA B200": 30.0}}
    refused = client.post("/api/v1/reports", body, format="json")
    assert refused.status_code == 422 and refused.json()["code"] == "price-matches-no-run"
    assert refused.json()["errors"][0]["pointer"] == "/prices/8x NVIDIA B200"
    assert "'1x H100', '1x H200'" in refused.json()["detail"] and not Report.objects.exists()


def test_the_report_is_not_offered_while_the_registry_cannot_sign_and_the_page_says_why(
    settings: Any, tmp_path: Path
) -> None:
    user, decision = _decision(QUESTION, _mixed("unsigned-")[:4])
    settings.BENCHREG_REPORT_KEY = str(tmp_path / "missing-key.pem")
    settings.BENCHREG_REPORT_CERT = str(tmp_path / "missing-cert.pem")
    page = _text(_page(user, decision))
    assert "Issue a signed report of this answer" not in page
    assert "cannot be issued now: the registry cannot sign reports now" in page and "missing-key.pem" in page
