"""Probes that failed against a PostgreSQL deployment: objects kept as given holding integers RFC 8785 cannot
write (a 500 when the object reached the audit log or a request key, the anonymous enrolment included), and a
sign-in name longer than django-axes' column."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from rest_framework.test import APIClient

from devtools.documents import variant
from registry.models import Agent, EnrolmentToken, Plan, Schedule
from registry.services.agents import agent_heartbeat, enrolment_token_create
from registry.services.submissions import submission_create
from tests.registry.agents.conftest import enrol, make_plan

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"
BEYOND = 2**53 + 1  # the smallest integer no double holds: RFC 8785 refuses it


def _pointers(response: Any) -> list[str]:
    # 422: the OpenAPI description allows any number in these objects, so the request is well-formed
    assert response.status_code == 422 and response["Content-Type"] == PROBLEM, response.content[:300]
    return [e["pointer"] for e in response.json()["errors"]]


def test_the_anonymous_enrolment_refuses_such_an_inventory_and_keeps_its_token(anonymous: APIClient) -> None:
    _, secret = enrolment_token_create(created_by=None, expires_in=timedelta(hours=1), actor="test")
    body = {"token": secret, "name": "rig-x", "inventory": {"system": {"name": 2**63}}}
    assert _pointers(anonymous.post("/api/v1/agents/enroll", body, format="json")) == ["/inventory/system/name"]
    assert not Agent.objects.exists()
    body["inventory"] = {"system": {"name": "rig-x"}}
    assert anonymous.post("/api/v1/agents/enroll", body, format="json").status_code == 201  # the token still works
    assert EnrolmentToken.objects.count() == 1


def test_plans_schedules_and_comparisons_refuse_such_options_with_their_pointer(
    api: APIClient, user: Any, server_example: dict[str, Any]
) -> None:
    agent_heartbeat(agent=enrol("rig-b")[0])
    plan = {
        "agents": ["rig-b"],
        "runner": "inference",
        "workload": "mlp-classifier",
        "precisions": ["fp32"],
        "options": {"seed": BEYOND},
    }
    assert _pointers(api.post("/api/v1/plans", plan, format="json")) == ["/options/seed"]
    template = make_plan(user, list(Agent.objects.all()))
    plans = Plan.objects.count()
    schedule = {
        "plan": template.pk,
        "cron": "0 2 * * *",
        "agents": ["rig-b"],
        "matrix": [
            {"label": "a", "options": {"threads": 1}},
            {"label": "b", "options": {"nested": {"threads": -(2**63)}}},
        ],
    }
    assert _pointers(api.post("/api/v1/schedules", schedule, format="json")) == ["/matrix/1/options/nested/threads"]
    assert not Schedule.objects.exists() and Plan.objects.count() == plans
    runs = [submission_create(document=variant(server_example, n), submitted_by=user)[0].pk for n in ("a", "b")]
    comparison = {"runs": runs, "sizing": {"target_load": BEYOND, "load_unit": "tokens/s"}}
    assert _pointers(api.post("/api/v1/comparisons", comparison, format="json")) == ["/sizing/target_load"]


def test_a_sign_in_name_longer_than_any_account_is_one_more_failure() -> None:
    web = APIClient(SERVER_NAME="localhost")
    web.raise_request_exception = False
    response = web.post("/accounts/login/", {"username": "x" * 20_000, "password": "wrong"})
    assert response.status_code == 200, response.status_code  # the form again, with its error
    assert [len(a.username) for a in AccessAttempt.objects.all()] == [255]
