"""The schedules, series, alerts and history endpoints: what they answer, and bad input as problem+json."""

from __future__ import annotations

from typing import Any

import pytest

from registry.models import Schedule
from registry.services.agents import agent_heartbeat
from tests.registry.agents.conftest import enrol, make_plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(user: Any) -> Any:
    agent = agent_heartbeat(agent=enrol("rig-s")[0])
    return make_plan(user, [agent])


def test_a_schedule_is_created_paused_resumed_and_deleted_over_the_api(api: Any, plan: Any) -> None:
    created = api.post(
        "/api/v1/schedules",
        {
            "plan": plan.pk,
            "cron": "0 2 * * *",
            "agents": ["rig-s"],
            "matrix": [{"label": "numpy", "options": {"backend": "numpy"}}],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["state"] == "active" and body["agents"] == ["rig-s"] and body["fires"] == []
    url = f"/api/v1/schedules/{body['id']}"
    assert api.patch(url, {"paused": True}, format="json").json()["state"] == "paused"
    assert api.patch(url, {"paused": False}, format="json").json()["state"] == "active"
    assert api.delete(url).json()["state"] == "deleted"
    refused = api.patch(url, {"paused": True}, format="json")
    assert refused.status_code == 409 and refused["Content-Type"] == "application/problem+json"
    assert [s["id"] for s in api.get("/api/v1/schedules").json()["results"]] == [body["id"]]


@pytest.mark.parametrize(
    "change, pointer",
    [
        ({"cron": "0 25 * * *"}, "/cron"),
        ({"cron": "nightly"}, "/cron"),
        ({"options": {"warp": 9}}, "/options"),
        ({"matrix": [{"label": "a", "options": {"sleep_ms": -5}}]}, "/matrix/0"),
        ({"matrix": [{"label": "a"}, {"label": "a"}]}, "/matrix/1/label"),
    ],
)
def test_bad_schedules_are_refused_whole_naming_the_field(api: Any, plan: Any, change: dict, pointer: str) -> None:
    response = api.post(
        "/api/v1/schedules", {"plan": plan.pk, "cron": "0 2 * * *", "agents": ["rig-s"], **change}, format="json"
    )
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert response.json()["errors"][0]["pointer"] == pointer, response.json()
    assert not Schedule.objects.exists()


def test_someone_elses_plan_cannot_be_scheduled(plan: Any, django_user_model: Any) -> None:
    from django.contrib.auth.models import Group
    from rest_framework.test import APIClient

    other = django_user_model.objects.create_user("otto", password="pw-for-tests-only")
    other.groups.add(Group.objects.get_or_create(name="submitter")[0])
    client = APIClient()
    client.force_authenticate(other)
    response = client.post(
        "/api/v1/schedules", {"plan": plan.pk, "cron": "0 2 * * *", "agents": ["rig-s"]}, format="json"
    )
    assert response.status_code == 404


def test_any_runs_history_is_its_configuration_over_time(api: Any, user: Any, offline_example: dict) -> None:
    from devtools.documents import variant
    from registry.services.submissions import submission_create

    runs = [
        submission_create(document=variant(offline_example, "lab-cpu-03", value), submitted_by=user)[0]
        for value in (100.0, 101.0, 99.0)
    ]
    history = api.get(f"/api/v1/submissions/{runs[-1].pk}/history").json()
    assert history["scope"] == "configuration" and [p["run"] for p in history["points"]] == [r.pk for r in runs]
    assert history["alerts"] == [] and len(history["software"]) == 1
    assert history["software"][0]["independent_values"] == 3 and history["software"][0]["ci_low"] is not None
    assert api.get("/api/v1/submissions/999999/history").status_code == 404
    assert api.get("/api/v1/alerts").json()["results"] == []
