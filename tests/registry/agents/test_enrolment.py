"""Enrolment tokens are single use and expire; an enrolled agent has its own scoped token; revocation ends it."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from registry.choices import AuditKind, JobStatus
from registry.models import Agent, AuditEntry, EnrolmentToken
from registry.services.agents import agent_revoke, agents_mark_offline, enrolment_token_create
from tests.registry.agents.conftest import client_for, enrol, make_plan

pytestmark = pytest.mark.django_db


def enroll_over_api(anonymous, token: str, name: str = "rig-b"):
    return anonymous.post(
        "/api/v1/agents/enroll", {"token": token, "name": name, "inventory": {"cpu": "x"}}, format="json"
    )


def test_an_admin_creates_an_enrolment_token_shown_once(admin_api):
    response = admin_api.post("/api/v1/enrolment-tokens", {"expires_in": 3600, "note": "rack 4"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["token"].startswith("bre_") and body["note"] == "rack 4"
    assert EnrolmentToken.objects.get().key_hash != body["token"]
    assert "token" not in admin_api.get("/api/v1/enrolment-tokens").json()[0]
    assert AuditEntry.objects.filter(kind=AuditKind.ENROLMENT_CREATED).count() == 1


def test_only_admins_create_enrolment_tokens(api):
    assert api.post("/api/v1/enrolment-tokens", {}, format="json").status_code == 403


def test_a_machine_enrols_once_and_gets_its_own_agent_token(anonymous):
    _, secret = enrolment_token_create(created_by=None, expires_in=timedelta(hours=1))
    response = enroll_over_api(anonymous, secret)
    assert response.status_code == 201
    body = response.json()
    agent = Agent.objects.get(name="rig-b")
    assert body["agent"]["queue"] == agent.queue and agent.queue.startswith("benchreg.agent.rig-b.")
    assert sorted(agent.token.scopes) == ["agent", "submit"]
    assert agent.inventory == {"cpu": "x"}
    assert client_for(body["token"]).post("/api/v1/agents/heartbeat", {}, format="json").status_code == 200
    assert AuditEntry.objects.filter(kind=AuditKind.AGENT_ENROLLED, subject=f"agent:{agent.pk}").exists()


def test_a_used_enrolment_token_is_refused(anonymous):
    _, secret = enrolment_token_create(created_by=None, expires_in=timedelta(hours=1))
    assert enroll_over_api(anonymous, secret, "first").status_code == 201
    again = enroll_over_api(anonymous, secret, "second")
    assert again.status_code == 403 and again.json()["code"] == "enrolment-refused"
    assert not Agent.objects.filter(name="second").exists()


def test_an_expired_enrolment_token_is_refused(anonymous):
    row, secret = enrolment_token_create(created_by=None, expires_in=timedelta(hours=1))
    EnrolmentToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert enroll_over_api(anonymous, secret).status_code == 403
    assert enroll_over_api(anonymous, "bre_made-up").status_code == 403
    assert not Agent.objects.exists()


def test_the_cli_command_prints_a_working_single_use_token(anonymous):
    out = StringIO()
    call_command("enrolment_token", "create", "--expires", "30m", "--note", "bench-7", stdout=out)
    row = EnrolmentToken.objects.get()
    assert timedelta(minutes=29) < row.expires_at - timezone.now() <= timedelta(minutes=30)
    assert enroll_over_api(anonymous, out.getvalue().strip()).status_code == 201


def test_a_revoked_agent_can_do_nothing(user):
    agent, token = enrol("rig-r")
    job = make_plan(user, [agent]).jobs.get()
    api = client_for(token)
    agent_revoke(agent=agent, actor="boss")
    assert api.post("/api/v1/agents/heartbeat", {}, format="json").status_code == 401
    assert api.post(f"/api/v1/jobs/{job.pk}/claim", {"claimant": "w"}, format="json").status_code == 401
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.last_error == "agent revoked"
    assert AuditEntry.objects.filter(kind=AuditKind.AGENT_REVOKED).count() == 1


def test_heartbeats_make_an_agent_online_and_silence_offline(agent, agent_api, api, settings):
    assert api.get("/api/v1/agents").json()[0]["online"] is False
    agent_api.post("/api/v1/agents/heartbeat", {}, format="json")
    assert api.get("/api/v1/agents").json()[0]["online"] is True
    later = timezone.now() + timedelta(seconds=settings.BENCHREG_AGENT_OFFLINE_AFTER + 1)
    assert agents_mark_offline(now=later) == 1
    agent.refresh_from_db()
    assert agent.online is False and agent.is_online is False


def test_a_silent_agent_reads_offline_even_before_the_sweep(agent, agent_api, settings):
    agent_api.post("/api/v1/agents/heartbeat", {}, format="json")
    Agent.objects.filter(pk=agent.pk).update(
        last_heartbeat_at=timezone.now() - timedelta(seconds=settings.BENCHREG_AGENT_OFFLINE_AFTER + 5)
    )
    agent.refresh_from_db()
    assert agent.online is True and agent.is_online is False
