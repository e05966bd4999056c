"""Hostile probes: ten identical requests at once, against PostgreSQL. Each answers what one request would
(the normal answer or a problem+json 409/429), never a 500, and the losers store nothing."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from registry.models import (
    Agent,
    ApiToken,
    AuditEntry,
    Decision,
    DecisionAnswer,
    DecisionReport,
    EnrolmentToken,
    Report,
    Withdrawal,
)
from registry.services.agents import enrolment_token_create
from tests.registry.concurrency import in_thread
from tests.registry.hostile.evidence import QUESTION, server_run
from tests.registry.hostile.people import person, signed_in

N = 10


def _quiet(client: APIClient) -> APIClient:
    client.raise_request_exception = False
    return client


def _submit(client: APIClient, doc: dict[str, Any]) -> int:
    response = client.post("/api/v1/submissions", doc, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def _at_once(request: Callable[[int], Any]) -> list[tuple[int, str]]:
    """Send request(i) for i in 0..N-1 from N threads released together; (status, problem code) of each.

    Each client answers a server error as a 500 instead of re-raising it: the test client learns of exceptions
    through a process-wide signal, so re-raising would blame every request in flight for one that failed."""
    barrier = threading.Barrier(N)

    @in_thread
    def one(i: int) -> tuple[int, str]:
        barrier.wait()
        response = request(i)
        if response.status_code >= 400:
            assert response["Content-Type"].startswith("application/problem+json"), response.content
            return response.status_code, response.json()["code"]
        return response.status_code, ""

    with ThreadPoolExecutor(N) as pool:
        return list(pool.map(one, range(N)))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_withdrawals_of_one_run_store_one_and_refuse_the_rest_with_409() -> None:
    admin = person("admin")
    run_id = _submit(signed_in(admin), server_run("h0", 1000.0))

    answers = _at_once(
        lambda i: _quiet(signed_in(admin)).post(
            f"/api/v1/submissions/{run_id}/withdraw", {"reason": "dup"}, format="json"
        )
    )

    assert Counter(status for status, _ in answers) == {200: 1, 409: N - 1}, answers
    assert {code for status, code in answers if status == 409} == {"already-withdrawn"}
    assert Withdrawal.objects.filter(submission_id=run_id).count() == 1
    assert AuditEntry.objects.filter(kind="run.withdrawn").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_reports_of_a_changed_decision_answer_it_once_and_number_without_collision(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    from registry.tasks.reports import render_report

    # The reports stay queued (nothing renders them), so the pending quota decides exactly how many are issued.
    monkeypatch.setattr(render_report, "delay", lambda *args, **kwargs: None)
    settings.BENCHREG_REPORTS_PENDING_PER_PERSON = 3
    owner = person()
    client = signed_in(owner)
    for i in range(3):
        _submit(client, server_run(f"h{i}", 1000.0 + i))
    response = client.post("/api/v1/decisions", {"title": "buy", "question": QUESTION}, format="json")
    assert response.status_code == 201, response.content
    decision_id = response.json()["id"]
    _submit(client, server_run("h3", 1100.0))  # enters the question: the recompute (eager) flags the decision
    assert Decision.objects.get(pk=decision_id).status == "evidence-changed"

    answers = _at_once(
        lambda i: _quiet(signed_in(owner)).post(f"/api/v1/decisions/{decision_id}/reports", {}, format="json")
    )

    assert Counter(status for status, _ in answers) == {202: 3, 429: N - 3}, answers
    assert {code for status, code in answers if status == 429} == {"too-many-pending-reports"}
    # Answered again once (by the first request in), and every report is of that answer.
    assert list(
        DecisionAnswer.objects.filter(decision_id=decision_id).order_by("number").values_list("number", flat=True)
    ) == [1, 2]
    assert Decision.objects.get(pk=decision_id).status == "current"
    assert Report.objects.count() == 3
    assert set(DecisionReport.objects.values_list("answer__number", flat=True)) == {2}
    assert DecisionReport.objects.count() == 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_enrolments_under_one_name_enrol_one_and_leave_the_other_tokens_unspent() -> None:
    tokens = [enrolment_token_create(created_by=None, expires_in=timedelta(hours=1), actor="test")[1] for _ in range(N)]

    answers = _at_once(
        lambda i: _quiet(APIClient(SERVER_NAME="localhost")).post(
            "/api/v1/agents/enroll", {"token": tokens[i], "name": "samename1"}, format="json"
        )
    )

    assert Counter(status for status, _ in answers) == {201: 1, 409: N - 1}, answers
    assert {code for status, code in answers if status == 409} == {"agent-name-taken"}
    agent = Agent.objects.get(name="samename1")
    # As with a duplicate name sent alone: the refused enrolments roll back, so their tokens can enrol another name.
    assert list(EnrolmentToken.objects.filter(used_at__isnull=False).values_list("pk", flat=True)) == [
        agent.enrolment_id
    ]
    assert ApiToken.objects.filter(user__username="agent-samename1").count() == 1
    assert get_user_model().objects.filter(username="agent-samename1").count() == 1
    assert AuditEntry.objects.filter(kind="agent.enrolled").count() == 1
