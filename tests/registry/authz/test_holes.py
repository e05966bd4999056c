"""The probes that found the holes ("Why"), kept as regression tests, plus what closing them promised."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from registry.choices import JobStatus
from registry.models import ApiToken
from registry.services.tokens import token_create

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("authz-holes")]  # the world is built once (conftest.py)


def _knock(world: dict[str, Any], name: str) -> Any:
    return next(k for k in world["knocks"] if k.name == name)


def _token_client(user: Any, scopes: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='probe', scopes=scopes)[1]}")
    return client


# --- token creation never exceeds the caller --------------------------------------------------------------------


@pytest.mark.parametrize("caller", ["viewer", "viewer+read-token", "submitter+read-token", "admin+read-token"])
def test_a_read_only_caller_cannot_mint_a_submit_token(world: dict[str, Any], caller: str) -> None:
    before = ApiToken.objects.count()
    response = _knock(world, caller).api.post("/api/v1/tokens", {"name": "x", "scopes": ["submit"]}, format="json")
    assert response.status_code == 403 and response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "scope-exceeds-rights" and body["errors"][0]["pointer"] == "/scopes"
    assert "token" not in body and ApiToken.objects.count() == before


@pytest.mark.parametrize("caller", ["submitter", "submitter+submit-token", "admin+read-token", "admin+submit-token"])
def test_only_an_admin_with_the_admin_right_mints_an_admin_token(world: dict[str, Any], caller: str) -> None:
    response = _knock(world, caller).api.post("/api/v1/tokens", {"name": "x", "scopes": ["admin"]}, format="json")
    # a submit-only token cannot manage tokens at all (it lacks `read`); the others may, but not with `admin`
    assert response.status_code == 403 and response.json()["code"] in ("scope-exceeds-rights", "permission-denied")
    assert not ApiToken.objects.filter(name="x").exists()


def test_an_admin_mints_an_admin_token_that_automates_what_the_browser_does(world: dict[str, Any]) -> None:
    made = _knock(world, "admin").api.post("/api/v1/tokens", {"name": "ci", "scopes": ["admin"]}, format="json")
    assert made.status_code == 201 and made.json()["scopes"] == ["admin"]
    robot = APIClient()
    robot.credentials(HTTP_AUTHORIZATION=f"Token {made.json()['token']}")
    assert robot.post("/api/v1/enrolment-tokens", {"note": "rack 4"}, format="json").status_code == 201
    assert robot.post(f"/api/v1/jobs/{world['job'].pk}/cancel").json()["status"] == "cancelled"
    withdrawn = robot.post(f"/api/v1/submissions/{world['run'].pk}/withdraw", {"reason": "wrong driver"}, format="json")
    assert withdrawn.status_code == 200 and withdrawn.json()["reason"] == "wrong driver"
    assert robot.post(f"/api/v1/agents/{world['agent'].pk}/revoke").json()["revoked_at"] is not None
    # and it is no more than an admin token: it cannot submit, and it cannot mint what it lacks
    assert robot.post("/api/v1/tokens", {"name": "y", "scopes": ["submit"]}, format="json").status_code == 403


def test_a_withdrawal_needs_a_reason_and_happens_once(world: dict[str, Any]) -> None:
    admin = _knock(world, "admin").api
    path = f"/api/v1/submissions/{world['run'].pk}/withdraw"
    missing = admin.post(path, {"reason": ""}, format="json")
    assert missing.status_code == 400 and missing.json()["errors"][0]["pointer"] == "/reason"
    assert admin.post(path, {"reason": "bad"}, format="json").status_code == 200
    again = admin.post(path, {"reason": "bad"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already-withdrawn"


def test_a_demoted_owners_old_token_loses_what_the_owner_lost(world: dict[str, Any]) -> None:
    submitter = world["submitter"]
    client = _token_client(submitter, "submit,read")
    document = {**world["document"]}
    assert client.get("/api/v1/jobs").status_code == 200
    submitter.groups.remove(Group.objects.get(name="submitter"))
    submitter.groups.add(Group.objects.get(name="viewer"))
    response = client.post("/api/v1/submissions", document, format="json")
    assert response.status_code == 403
    assert client.get("/api/v1/jobs").status_code == 403
    assert client.get("/api/v1/submissions").status_code == 200  # still reads, as a viewer may


# --- agents, plans and jobs follow ownership -----------------------------------------------------------------


@pytest.mark.parametrize("caller", ["viewer", "viewer+read-token", "submitter+read-token"])
def test_a_reader_lists_no_agents_jobs_or_plans(world: dict[str, Any], caller: str) -> None:
    api = _knock(world, caller).api
    for path in ("/api/v1/agents", "/api/v1/jobs"):
        assert api.get(path).status_code == 403, path
    assert api.get(f"/api/v1/agents/{world['agent'].pk}").status_code == 404


def test_inventories_and_host_addresses_are_for_admins_and_the_agent_itself(world: dict[str, Any]) -> None:
    path = f"/api/v1/agents/{world['agent'].pk}"
    for name in ("submitter", "other", "other-agent", "submitter+submit-token"):
        response = _knock(world, name).api.get(path)
        assert response.status_code == 404 and "10.0.0.7" not in response.content.decode(), name
    listing = _knock(world, "submitter").api.get("/api/v1/agents")
    assert listing.status_code == 200 and "10.0.0.7" not in listing.content.decode()
    assert "inventory" not in listing.json()[0]
    for name in ("admin", "agent"):
        assert _knock(world, name).api.get(path).json()["inventory"]["host"]["address"] == "10.0.0.7", name


def test_another_submitter_neither_sees_nor_cancels_my_job(world: dict[str, Any]) -> None:
    other = _knock(world, "other")
    job = world["job"]
    assert other.api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code == 404
    assert other.web.post(f"/jobs/{job.pk}/cancel").status_code == 404
    assert other.api.get(f"/api/v1/jobs/{job.pk}").status_code == 404
    assert other.api.get(f"/api/v1/plans/{world['plan'].pk}").status_code == 404
    assert other.api.get("/api/v1/jobs").json()["results"] == []
    assert f"#{job.pk}<" not in other.web.get("/jobs/").content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_the_plans_owner_cancels_from_the_page_and_a_read_only_token_of_theirs_may_not(world: dict[str, Any]) -> None:
    job = world["job"]
    refused = _knock(world, "submitter+read-token").api.post(f"/api/v1/jobs/{job.pk}/cancel")
    assert refused.status_code == 403 and refused["Content-Type"] == "application/problem+json"
    owner = _knock(world, "submitter").web
    assert f"#{job.pk}<" in owner.get("/jobs/").content.decode()
    assert owner.post(f"/jobs/{job.pk}/cancel").status_code == 302
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


def test_an_agent_works_only_on_its_own_jobs_and_never_cancels(world: dict[str, Any]) -> None:
    job = world["job"]
    claim = {"claimant": "w", "lease_seconds": 60}
    assert (
        _knock(world, "other-agent").api.post(f"/api/v1/jobs/{job.pk}/claim", claim, format="json").status_code == 404
    )
    assert _knock(world, "agent").api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code == 403
    assert _knock(world, "agent").api.post(f"/api/v1/jobs/{job.pk}/claim", claim, format="json").status_code == 200


def test_reports_are_their_requesters_and_admins_in_the_api_as_on_the_pages(world: dict[str, Any]) -> None:
    report = world["report"]
    for name, status in (("other", 404), ("viewer", 404), ("submitter", 200), ("admin", 200)):
        knock = _knock(world, name)
        assert knock.api.get(f"/api/v1/reports/{report.pk}").status_code == status, name
        assert knock.web.get(f"/reports/{report.pk}/status").status_code == status, name
