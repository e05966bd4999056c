"""Decisions through the API and services: declared, answered, flagged when a cited run is withdrawn, and the
owner's signed webhook delivered by a real Celery worker on Redis."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient
from standardwebhooks.webhooks import Webhook

from devtools.documents import variant
from registry.celery import app
from registry.models import AuditEntry, Decision, Submission, WebhookDelivery
from registry.services import decisions as decisions_service
from registry.services.decisions import decision_answer, decision_create, decision_refresh
from registry.services.submissions import submission_withdraw
from registry.web.forms import DecisionForm
from tests.conftest import ROOT, load_example

BROKER = os.environ.get("BENCHREG_TEST_BROKER_URL", "")


def _doc(system: str, tput: float, ttft: float = 300.0, model: str = "H100", weights: str = "bf16") -> dict[str, Any]:
    doc = variant(load_example("inference-server-h100-bf16"), system, tput)
    doc["metrics"]["ttft_ms"]["p99"] = ttft
    doc["metrics"]["ttft_ms"]["max"] = max(ttft, doc["metrics"]["ttft_ms"]["max"])
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    doc["system"]["accelerators"][0]["model"] = model
    doc["precision"]["weights"] = weights
    if weights == "fp8":
        doc["precision"]["quantization"] = {"method": "static", "granularity": "per-tensor"}
    return doc


QUESTION = {
    "workload": "decoder-small",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"system_hour": {"1x H100": 98.0, "1x MI300X": 80.0}, "energy_per_kwh": 0.1},
}


def _client(user: Any) -> APIClient:
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    return client


def _user(role: str = "admin") -> Any:
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(f"{role}-{time.monotonic_ns()}", password="x")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def _submit(client: APIClient, docs: list[dict[str, Any]]) -> list[int]:
    ids = []
    for doc in docs:
        response = client.post("/api/v1/submissions", doc, format="json")
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    return ids


@pytest.mark.django_db
def test_a_decision_is_answered_per_configuration_and_refuses_a_wrong_question() -> None:
    user = _user()
    client = _client(user)
    ids = _submit(
        client,
        [_doc(f"h{i}", 1000.0) for i in range(3)] + [_doc(f"m{i}", 1200.0, 500.0, "MI300X", "fp8") for i in range(3)],
    )
    response = client.post("/api/v1/decisions", {"title": "20k tokens/s", "question": QUESTION}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    answer = body["answer"]
    assert body["status"] == "current" and len(answer["candidates"]) == 2
    h100 = next(c for c in answer["candidates"] if c["accelerator_model"] == "H100")
    assert h100["systems_needed"]["value"] == 20 and h100["meets"] == "meets"
    assert sorted(r["id"] for r in h100["runs"]) == ids[:3]
    assert all(r["url"] == f"/runs/{r['id']}/" and r["digest"].startswith("sha256:") for r in h100["runs"])
    assert {"decision.created", "decision.answered"} <= set(AuditEntry.objects.values_list("kind", flat=True))
    assert client.get(f"/api/v1/decisions/{body['id']}").json()["answer"]["digest"] == answer["digest"]
    bad = client.post(
        "/api/v1/decisions",
        {"title": "t", "question": {**QUESTION, "demand": {"value": -1, "unit": "tokens/s"}}},
        format="json",
    )
    assert bad.status_code == 422 and "/question/demand/value" in bad.content.decode()
    assert Decision.objects.count() == 1
    other = _client(_user("viewer"))
    assert other.get(f"/api/v1/decisions/{body['id']}").status_code == 404
    exported = client.get(f"/api/v1/decisions/{body['id']}/export")
    lines = exported.content.decode().splitlines()
    assert exported["content-type"].startswith("text/csv") and len(lines) == 1 + 6
    assert lines[0].startswith("configuration,meets,systems_needed") and f"/runs/{ids[0]}/" in exported.content.decode()
    rows = client.get(f"/api/v1/decisions/{body['id']}/export?as=json").json()["rows"]
    assert {r["run_digest"] for r in rows} == set(Submission.objects.values_list("digest", flat=True))
    assert all(r["run_url"].startswith("http://localhost/runs/") for r in rows)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("address", "status", "code"),
    [
        ("ftp://example.org/hook", 400, "invalid"),
        ("not a url", 400, "invalid"),
        ("https://" + ".".join(["a" * 63] * 5) + "/hook", 422, "undeliverable-address"),  # host over 253 characters
        ("https://" + "a" * 480 + ".org/", 422, "undeliverable-address"),  # a label over 63
        ("https://hooks.example.org/" + "p" * 480, 400, "max_length"),
    ],
)
def test_a_webhook_address_no_request_can_reach_is_refused_with_its_pointer_and_nothing_stored(
    address: str, status: int, code: str
) -> None:
    client = _client(_user())
    response = client.post(
        "/api/v1/decisions", {"title": "t", "question": QUESTION, "webhook_url": address}, format="json"
    )
    assert response.status_code == status, response.content
    errors = response.json()["errors"]
    assert errors[0]["pointer"] == "/webhook_url" and errors[0]["code"] == code
    assert not Decision.objects.exists()


@pytest.mark.django_db
def test_a_long_reachable_webhook_address_is_kept_whole() -> None:
    client = _client(_user())
    address = "https://hooks.example.org/services/" + "T0123/" * 60  # 395 characters, as some chat tools issue
    response = client.post(
        "/api/v1/decisions", {"title": "t", "question": QUESTION, "webhook_url": address}, format="json"
    )
    assert response.status_code == 201, response.content
    assert Decision.objects.get().webhook_url == address


@pytest.mark.django_db
def test_a_new_run_entering_the_question_flags_the_decision_with_what_would_change() -> None:
    user = _user()
    client = _client(user)
    _submit(client, [_doc(f"h{i}", 1000.0) for i in range(3)])
    decision_id = client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").json()["id"]
    _submit(client, [_doc("m0", 1200.0, 500.0, "MI300X", "fp8")])
    body = client.get(f"/api/v1/decisions/{decision_id}").json()
    assert body["status"] == "evidence-changed"
    assert any("a new candidate" in line for line in body["change"]["would_change"])
    page = APIClient(SERVER_NAME="localhost")
    page.force_login(user)
    html = page.get(f"/decisions/{decision_id}/").content.decode()
    assert "evidence changed" in html and "a new candidate" in html


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        type(self).received.append(({k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    _Receiver.received = []
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


@pytest.fixture
def worker(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A real registry Celery worker on Redis, against this test's database.

    The app's connection pools are dropped first: one made earlier in this process (another test, another broker
    URL, or Celery's amqp://localhost default, which the local RabbitMQ would silently accept) would otherwise
    take the webhook task somewhere this worker never looks.
    """
    settings = connection.settings_dict
    env = {
        **os.environ,
        "CELERY_BROKER_URL": BROKER,
        "BENCHREG_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
        "DATABASE_URL": f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}",
    }
    log = (tmp_path / "worker.log").open("wb")
    old = app.conf.task_always_eager, app.conf.broker_url
    app.conf.task_always_eager, app.conf.broker_url = False, BROKER
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    app.control.purge()  # nothing left from an earlier run of this test
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "registry.celery",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "warning",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        app.conf.task_always_eager, app.conf.broker_url = old


@pytest.mark.services
@pytest.mark.postgres
@pytest.mark.skipif(not BROKER, reason="needs Redis: set BENCHREG_TEST_BROKER_URL=redis://...")
@pytest.mark.django_db(transaction=True)
def test_withdrawing_a_cited_run_flags_the_decision_and_a_real_worker_delivers_the_signed_webhook(
    receiver: str, worker: None, settings: Any
) -> None:
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # the receiver is local: allowed explicitly
    user = _user()
    client = _client(user)
    ids = _submit(client, [_doc(f"h{i}", 1000.0) for i in range(3)])
    created = client.post(
        "/api/v1/decisions", {"title": "t", "question": QUESTION, "webhook_url": receiver}, format="json"
    ).json()
    secret = created["webhook_secret"]
    submission_withdraw(submission=Submission.objects.get(pk=ids[0]), reason="driver bug", actor=user)
    decision = Decision.objects.get(pk=created["id"])
    assert decision.status == "evidence-changed" and decision.change["runs"][0]["id"] == ids[0]
    assert any("3 run(s) become 2" in line for line in decision.change["would_change"])
    deadline = time.monotonic() + 180  # a worker starting on 2 shared, busy cores can take a while
    while time.monotonic() < deadline and WebhookDelivery.objects.filter(state="pending").exists():
        time.sleep(0.2)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "delivered", (delivery.state, delivery.attempts, delivery.last_status, delivery.last_error)
    assert delivery.last_status == 204 and delivery.attempts >= 1
    headers, body = _Receiver.received[0]
    event = Webhook(secret).verify(body, headers)
    assert event["type"] == "decision.evidence_changed" and event["data"]["decision"] == decision.pk
    with pytest.raises(Exception, match=r"(?i)signature"):
        Webhook(secret).verify(body.replace(b"driver bug", b"driver fix"), headers)
    kinds = list(AuditEntry.objects.values_list("kind", flat=True))
    assert "decision.evidence_changed" in kinds and "webhook.finished" in kinds
    json.dumps(decision.change)


@pytest.mark.slow  # run early: tests/conftest.py starts slow modules first
@pytest.mark.django_db
def test_reissued_report_verifies_and_the_old_one_still_verifies(
    settings: Any, tmp_path: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from registry.models import AuditHead
    from registry.services.decision_followups import decision_report
    from registry.services.reports import report_bytes, report_verify

    settings.DATA_DIR, settings.BENCHREG_CHECKPOINT_KEY = tmp_path, ""
    AuditHead.objects.get_or_create(id=1)
    user = _user()
    client = _client(user)
    ids = _submit(
        client,
        [_doc(f"h{i}", 1000.0) for i in range(3)] + [_doc(f"m{i}", 1200.0, 500.0, "MI300X", "fp8") for i in range(3)],
    )
    decision = Decision.objects.get(
        pk=client.post("/api/v1/decisions", {"title": "buy", "question": QUESTION}, format="json").json()["id"]
    )
    with django_capture_on_commit_callbacks(execute=True):  # the report renders after commit
        old = decision_report(decision=decision, requested_by=user)
    old.refresh_from_db()
    assert old.status == "ready", old.last_error
    assert "Which systems serve decoder-small" in old.decision and "meets" in old.decision
    old_pdf = report_bytes(old)
    verdict = report_verify(pdf=old_pdf)
    assert verdict.valid and verdict.report["decision"]["answer"] == 1
    assert verdict.report["decision"]["digest"] == decision.answers.get(number=1).digest
    # The answer is stated in the PDF from the evidence it carries: one row per candidate, and the frontier drawn.
    (tmp_path / "old.pdf").write_bytes(old_pdf)
    text = subprocess.run(
        ["pdftotext", "-layout", str(tmp_path / "old.pdf"), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert "answered per candidate" in text and "Pareto frontier over" in text and "frontier" in text
    assert "lower is better on both" in text  # the Pareto chart's caption: drawn only when the chart is
    submission_withdraw(submission=Submission.objects.get(pk=ids[0]), reason="driver bug", actor=user)
    decision.refresh_from_db()
    assert decision.status == "evidence-changed"
    with django_capture_on_commit_callbacks(execute=True):
        new = decision_report(decision=decision, requested_by=user)
    new.refresh_from_db()
    decision.refresh_from_db()
    assert new.status == "ready" and decision.status == "current" and decision.answers.count() == 2
    assert ids[0] not in [m.submission_id for m in new.comparison.members.all()]
    assert report_verify(pdf=report_bytes(new)).valid
    # What was known then: still signed, intact and in the log; the registry's word today is the withdrawal.
    again = report_verify(pdf=old_pdf)
    assert [c.code for c in again.reasons] == ["runs-not-withdrawn"] and "driver bug" in again.reasons[0].message
    assert len(again.checks) > 5 and all(c.ok for c in again.checks if c.code != "runs-not-withdrawn")


@pytest.mark.django_db
def test_a_weak_candidate_becomes_a_plan_whose_runs_flow_back_into_the_decision() -> None:
    from registry.models import Plan
    from tests.registry.agents.conftest import enrol

    user = _user()
    client = _client(user)
    _submit(client, [_doc("h0", 1000.0)])  # one run: too few repetitions
    body = client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").json()
    candidate = body["answer"]["candidates"][0]
    assert "too-few-repetitions" in {g["code"] for g in candidate["gaps"]}
    agent, _ = enrol("rig-d")
    response = client.post(
        f"/api/v1/decisions/{body['id']}/plans",
        {"candidate": candidate["label"], "agents": [agent.pk], "options": {"quick": True}},
        format="json",
    )
    assert response.status_code == 201, response.content
    plan = Plan.objects.get(pk=response.json()["plan"])
    assert (plan.workload, plan.scenario, plan.precisions, plan.repetitions) == ("decoder-small", "server", ["bf16"], 3)
    assert plan.batch_sizes == [8] and plan.jobs.count() == 1
    # the plan's run comes back as new evidence for the question
    _submit(client, [_doc("h1", 1010.0)])
    assert client.get(f"/api/v1/decisions/{body['id']}").json()["status"] == "evidence-changed"
    bad = client.post(
        f"/api/v1/decisions/{body['id']}/plans", {"candidate": "nope", "agents": [agent.pk]}, format="json"
    )
    assert bad.status_code == 400 and "nope" in bad.content.decode()


@pytest.mark.django_db
def test_the_decision_page_issues_the_report_and_plans_runs_for_a_gap() -> None:
    from django.test import Client

    from registry.models import DecisionReport, Plan
    from tests.registry.agents.conftest import enrol

    user = _user()
    api = _client(user)
    _submit(api, [_doc(f"h{i}", 1000.0 + i) for i in range(3)] + [_doc("m0", 1200.0, 500.0, "MI300X", "fp8")])
    decision = api.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").json()
    weak = next(c for c in decision["answer"]["candidates"] if c["accelerator_model"] == "MI300X")  # one run
    agent, _ = enrol("rig-ui")
    web = Client(SERVER_NAME="localhost")
    web.force_login(user)
    page = web.get(f"/decisions/{decision['id']}/").content.decode()
    assert "Issue a signed report of this answer" in page and "Plan runs for this gap" in page and "rig-ui" in page

    issued = web.post(f"/decisions/{decision['id']}/report")
    record = DecisionReport.objects.get(decision_id=decision["id"])
    assert issued.status_code == 302
    assert issued["Location"] == f"/comparisons/{record.report.comparison_id}/#report-{record.report_id}"
    assert f"Report {record.report_id}</a> of answer 1" in web.get(f"/decisions/{decision['id']}/").content.decode()

    refused = web.post(f"/decisions/{decision['id']}/plan", {"candidate": weak["label"], "repetitions": 3})
    assert refused.status_code == 400 and "This field is required" in refused.content.decode()
    assert not Plan.objects.exists()
    planned = web.post(
        f"/decisions/{decision['id']}/plan", {"candidate": weak["label"], "agents": [agent.pk], "repetitions": 4}
    )
    assert planned.status_code == 302 and planned["Location"] == "/jobs/"
    plan = Plan.objects.get()
    assert (plan.repetitions, plan.precisions, plan.jobs.count()) == (4, ["fp8"], 1)


def test_the_verifier_refuses_a_decision_answer_that_does_not_hash_or_cites_other_runs() -> None:
    from protocol import canonicalize, digest_of
    from verifier.evidence import decision_problems

    answer = {"cited": ["sha256:aa"], "candidates": []}
    text = canonicalize(answer).decode()
    section = {"digest": digest_of(text.encode()), "canonical": text}
    assert decision_problems(section, [{"id": 1, "digest": "sha256:aa"}]) == []
    assert "not cited" in decision_problems(section, [{"id": 2, "digest": "sha256:bb"}])[0]
    assert (
        "does not hash"
        in decision_problems({**section, "canonical": text.replace("aa", "ab")}, [{"id": 1, "digest": "sha256:aa"}])[0]
    )


@pytest.mark.django_db
def test_only_a_decision_whose_latest_answer_cites_the_run_is_flagged() -> None:
    from registry.services.decisions import decision_answer, decisions_flag_for_runs

    user = _user()
    client = _client(user)
    ids = _submit(client, [_doc(f"h{i}", 1000.0 + i) for i in range(4)])
    decision = Decision.objects.get(
        pk=client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").json()["id"]
    )
    other = Decision.objects.get(
        pk=client.post("/api/v1/decisions", {"title": "u", "question": QUESTION}, format="json").json()["id"]
    )
    submission_withdraw(submission=Submission.objects.get(pk=ids[0]), reason="bad cable", actor=user)
    decision_answer(decision=decision, actor="t")  # answer 2 no longer cites the withdrawn run; `other` still does
    decision.refresh_from_db()
    assert decision.status == "current"
    flagged = decisions_flag_for_runs(runs=[Submission.objects.get(pk=ids[0])], reason="again")
    assert [d.pk for d in flagged] == [other.pk]
    assert [d.pk for d in decisions_flag_for_runs(runs=[Submission.objects.get(pk=ids[1])], reason="x")] == [
        decision.pk,
        other.pk,
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("table", ["registry_decisionanswer", "registry_decisionevidence"])
@pytest.mark.parametrize("statement", ["UPDATE {t} SET id = id", "DELETE FROM {t}", "TRUNCATE {t} CASCADE"])
def test_postgres_refuses_rewriting_what_a_decision_answered(table: str, statement: str) -> None:
    from django.db import transaction

    from registry.models import DecisionAnswer

    client = _client(_user())
    _submit(client, [_doc(f"h{i}", 1000.0 + i) for i in range(3)])
    assert client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").status_code == 201
    with pytest.raises(Exception, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement.format(t=table))
    assert DecisionAnswer.objects.count() == 1


@pytest.mark.django_db
def test_every_candidate_shows_its_runs_trust_on_the_page_in_the_answer_and_in_the_report_table() -> None:
    """A decision re-answered for a report put an edited copy of a hand-written example on the frontier with no
    word of its trust: trust is shown wherever a candidate is."""
    from django.test import Client

    from registry.reports.context import decision_answer

    user = _user()
    client = _client(user)
    ids = _submit(client, [_doc(f"lab-{i}", 1500.0 + i) for i in range(3)])
    response = client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json")
    assert response.status_code == 201, response.content
    decision = Decision.objects.get(pk=response.json()["id"])
    answer = decision.answers.order_by("-number").first().answer
    cited = [r for c in answer["candidates"] for r in c["runs"]]
    assert {r["id"] for r in cited} == set(ids) and {r["trust"] for r in cited} == {"declared"}
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/decisions/{decision.pk}/").content.decode()
    assert page.count("trust--declared") == 3 and "Runs and their trust" in page
    section = {"canonical": json.dumps(answer), "id": decision.pk, "answer": 1, "digest": "sha256:0"}
    (row,) = decision_answer(section)["rows"]  # type: ignore[index]
    assert sorted(row["members"], key=lambda m: m["id"]) == [{"id": i, "trust": "declared"} for i in sorted(ids)]


def test_the_decision_form_asks_for_the_interactivity_target_and_sends_it_in_the_question() -> None:
    form = DecisionForm(
        data={
            "title": "t",
            "workload": "decoder-small",
            "scenario": "server",
            "demand": "3000",
            "demand_unit": "tokens/s",
            "min_tokens_per_second_per_user": "50",
        }
    )
    assert form.is_valid(), form.errors
    assert form.question()["interactivity"] == {"min_tokens_per_second_per_user": 50.0}


@pytest.mark.django_db
def test_a_price_or_nameplate_that_matches_no_candidate_is_refused_with_the_keys_that_would() -> None:
    """DECISIONS.md: every stated input is used or refused. '8x NVIDIA B200' for a configuration keyed '1x H100' was
    echoed 'as supplied' while every candidate said 'no price stated'. The question is kept (a price may be stated
    for a configuration whose runs arrive later); each answer refuses, by pointer, what matches none of its
    candidates, and says which keys would."""
    user = _user()
    client = _client(user)
    _submit(
        client, [_doc(f"h{i}", 1000.0) for i in range(3)] + [_doc(f"m{i}", 1200.0, 500.0, "MI300X") for i in range(3)]
    )
    question = {
        **QUESTION,
        "prices": {
            "system_hour": {"1x H100": 98.0, "8x NVIDIA B200": 300.0, "*": 50.0},
            "accelerator_hour": {"B200": 4.0},
        },
        "provisioning": {"nameplate_kw": {"1x MI300X": 1.2, "2x MI355X": 3.0}, "pue": 1.3},
    }
    created = client.post("/api/v1/decisions", {"title": "mis-keyed", "question": question}, format="json")
    assert created.status_code == 201, created.content
    answer = created.json()["answer"]
    refused = {r["pointer"]: r["message"] for r in answer["refused_inputs"]}
    assert set(refused) == {
        "/prices/system_hour/8x NVIDIA B200",
        "/prices/accelerator_hour/B200",
        "/provisioning/nameplate_kw/2x MI355X",
    }
    assert (
        "the candidates' configuration keys are '1x H100', '1x MI300X'" in refused["/prices/system_hour/8x NVIDIA B200"]
    )
    assert "accelerator model keys are 'H100', 'MI300X'" in refused["/prices/accelerator_hour/B200"]
    said = "; ".join(answer["assumptions"])
    assert "1x H100: 98 USD per system-hour, as supplied" in said and "B200" not in said and "MI355X" not in said
    web = Client()
    web.force_login(user)
    page = html.unescape(web.get(f"/decisions/{created.json()['id']}/").content.decode())
    assert "Stated inputs not used" in page and "the candidates' configuration keys are '1x H100', '1x MI300X'" in page
    keyed = {**question, "prices": {"system_hour": {"1 × h100": 98.0, "*": 50.0}}, "provisioning": {"pue": 1.3}}
    accepted = client.post("/api/v1/decisions", {"title": "keyed", "question": keyed}, format="json")
    assert accepted.status_code == 201 and accepted.json()["answer"]["refused_inputs"] == []


# --- the recompute: computed outside any transaction, written briefly (issue 42) ----------------------------


def _stale_decision_with_an_entering_run() -> Decision:
    """A decision answered on three runs, then a fourth run of a new configuration stored: stale, not yet flagged."""
    user = _user()
    client = _client(user)
    _submit(client, [_doc(f"h{i}", 1000.0) for i in range(3)])
    decision = decision_create(owner=user, title="t", question=QUESTION)
    _submit(client, [_doc("m0", 1200.0, 500.0, "MI300X", "fp8")])
    decision.refresh_from_db()
    assert decision.stale_since is not None
    return decision


@pytest.mark.django_db
def test_a_recompute_computes_the_answer_with_no_transaction_of_its_own_open(monkeypatch: pytest.MonkeyPatch) -> None:
    decision = _stale_decision_with_an_entering_run()
    outside = len(connection.atomic_blocks)  # the test's own transaction
    depths: list[int] = []
    compute = decisions_service.decision_compute

    def watched(**kwargs: Any) -> Any:
        depths.append(len(connection.atomic_blocks))
        return compute(**kwargs)

    monkeypatch.setattr(decisions_service, "decision_compute", watched)
    assert decision_refresh(decision_id=decision.pk) == "flagged"
    assert depths == [outside], depths
    decision.refresh_from_db()
    assert decision.status == "evidence-changed" and decision.stale_since is None


@pytest.mark.django_db
def test_a_recompute_whose_decision_was_answered_meanwhile_computes_again_and_flags_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another answer lands between the compute and the write (it takes the new run in): the flag computed against
    the older answer would be wrong, so the recompute checks under the row lock and computes again there."""
    decision = _stale_decision_with_an_entering_run()
    compute = decisions_service.decision_compute
    calls: list[int] = []

    def answered_meanwhile(**kwargs: Any) -> Any:
        calls.append(len(calls))
        result = compute(**kwargs)
        if len(calls) == 1:
            decision_answer(decision=Decision.objects.get(pk=decision.pk), actor="someone else")
        return result

    monkeypatch.setattr(decisions_service, "decision_compute", answered_meanwhile)
    assert decision_refresh(decision_id=decision.pk) == "recomputed"
    decision.refresh_from_db()
    assert decision.status == "current" and decision.change is None
    assert decision.answers.count() == 2


@pytest.mark.django_db
def test_a_new_run_marks_stale_only_the_decisions_of_its_question_not_already_waiting(settings: Any) -> None:
    # Issue 42: the mark is SQL now (decisions._mark_stale); what it marks, and what it keeps, are pinned here on
    # both databases: a decision already stale waits for its task, unless the task failed or stayed away too long.
    from datetime import timedelta

    from django.utils import timezone

    user = _user()
    (run_id,) = _submit(_client(user), [_doc("h0", 1000.0)])
    names = ["fresh", "waiting", "lost", "failed", "other"]
    ids = {name: decision_create(owner=user, title=name, question=QUESTION).pk for name in names}
    now = timezone.now()
    long_ago = now - timedelta(seconds=settings.BENCHREG_DECISION_RECOMPUTE_RETRY_S + 60)
    recent = now - timedelta(seconds=1)
    states = {
        "fresh": {"stale_since": None, "recompute_error": ""},
        "waiting": {"stale_since": recent, "recompute_error": ""},
        "lost": {"stale_since": long_ago, "recompute_error": ""},
        "failed": {"stale_since": recent, "recompute_error": "boom"},
        "other": {"stale_since": None, "recompute_error": "", "workload_name": "another-workload"},
    }
    for name, values in states.items():
        Decision.objects.filter(pk=ids[name]).update(**values)

    marked = decisions_service.decisions_flag_for_new_runs(runs=[Submission.objects.get(pk=run_id)])

    after = {name: Decision.objects.get(pk=ids[name]) for name in names}
    assert marked == 3
    assert after["fresh"].stale_since is not None and after["fresh"].stale_since >= now
    assert after["waiting"].stale_since == recent  # left waiting for its task
    assert after["lost"].stale_since == long_ago  # marked again (dispatched), since kept
    assert after["failed"].stale_since == recent and after["failed"].recompute_error == ""
    assert after["other"].stale_since is None
