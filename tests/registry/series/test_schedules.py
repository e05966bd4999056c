"""Schedules fire exactly once, record missed runs, pause/resume/delete; scheduled runs join series; a change
raises one alert (audited, webhooked with a valid signature, told to the decisions) naming what changed in the
documents."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.db import connection

from registry.choices import AuditKind
from registry.exceptions import RegistryError
from registry.models import Agent, Alert, AuditEntry, Job, Schedule, ScheduleFire, Series, SeriesRun
from registry.services import reactions
from registry.services.agents import agent_heartbeat
from registry.services.jobs import job_claim
from registry.services.schedule_firing import schedules_tick
from registry.services.schedules import cron_due_times, schedule_create, schedule_delete, schedule_update
from registry.services.submissions import submission_create
from tests.registry.agents.conftest import enrol, make_plan
from tests.registry.agents.test_jobs import job_document

T0 = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)


def minute(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


@pytest.fixture
def online_agent() -> Agent:
    agent, _ = enrol("rig-s")
    return agent_heartbeat(agent=agent)


@pytest.fixture
def schedule(user: Any, online_agent: Agent) -> Schedule:
    plan = make_plan(user, [online_agent], repetitions=3)
    plan.jobs.all().delete()  # the template plan's own job is not part of the schedule
    return schedule_create(created_by=user, plan=plan, cron="* * * * *", agents=[online_agent], now=T0)


def test_cron_is_parsed_by_celery_and_bad_cron_is_a_400_naming_the_field(user: Any, online_agent: Agent) -> None:
    assert cron_due_times("0 2 * * *", T0, T0 + timedelta(days=2)) == [T0 + timedelta(days=1), T0 + timedelta(days=2)]
    assert cron_due_times("0 3 * * 1", T0, T0 + timedelta(days=8)) == [
        datetime(2026, 11, 23, 3, tzinfo=UTC),
        datetime(2026, 11, 30, 3, tzinfo=UTC),
    ]
    plan = make_plan(user, [online_agent])
    for cron in ("0 2 * *", "61 * * * *", "a b c d e"):
        with pytest.raises(RegistryError) as err:
            schedule_create(created_by=user, plan=plan, cron=cron, agents=[online_agent])
        assert err.value.errors[0]["pointer"] == "/cron"
    with pytest.raises(RegistryError) as err:
        schedule_create(
            created_by=user,
            plan=plan,
            cron="0 2 * * *",
            agents=[online_agent],
            matrix=[{"label": "slow", "options": {"sleep_ms": -1}}],
        )
    assert err.value.errors[0]["pointer"] == "/matrix/0" and "sleep_ms" in err.value.message
    assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_a_due_time_fires_once_and_offline_agents_are_missed(schedule: Schedule, user: Any) -> None:
    assert schedules_tick(now=minute(0)) == {"fired": 0, "missed": 0, "joined": 0}
    assert schedules_tick(now=minute(1))["fired"] == 1
    assert schedules_tick(now=minute(1))["fired"] == 0  # the same due time again: nothing
    fire = ScheduleFire.objects.get()
    assert fire.status == "fired" and fire.due_at == minute(1) and fire.plan.jobs.count() == 1
    Agent.objects.filter(pk=schedule.agents.get().pk).update(online=False)
    schedules_tick(now=minute(2))
    missed = ScheduleFire.objects.get(due_at=minute(2))
    assert missed.status == "missed" and missed.plan is None
    assert missed.missed == [{"agent": "rig-s", "reason": "the agent was offline at the due time"}]
    assert AuditEntry.objects.filter(kind=AuditKind.SCHEDULE_FIRED).count() == 2


@pytest.mark.django_db
def test_due_times_the_scheduler_slept_through_are_missed_and_only_the_latest_fires(schedule: Schedule) -> None:
    schedules_tick(now=minute(5))
    fires = {f.due_at: f.status for f in ScheduleFire.objects.all()}
    assert fires == {
        minute(1): "missed",
        minute(2): "missed",
        minute(3): "missed",
        minute(4): "missed",
        minute(5): "fired",
    }
    assert ScheduleFire.objects.get(due_at=minute(1)).missed[0]["reason"] == "the scheduler did not run at the due time"


@pytest.mark.django_db
def test_pause_resume_and_delete(schedule: Schedule, user: Any) -> None:
    schedule_update(schedule=schedule, actor="boss", paused=True)
    assert schedules_tick(now=minute(3))["fired"] == 0 and not ScheduleFire.objects.exists()
    schedule_update(schedule=schedule, actor="boss", paused=False)  # nothing owed for the paused time
    schedule.refresh_from_db()
    assert schedule.last_due_at is not None and schedule.last_due_at > minute(3)
    schedule_delete(schedule=schedule, actor="boss")
    assert schedules_tick(now=datetime.now(UTC) + timedelta(minutes=5))["fired"] == 0
    with pytest.raises(RegistryError) as err:
        schedule_update(schedule=schedule, actor="boss", paused=True)
    assert err.value.status == 409
    entries = AuditEntry.objects.filter(kind=AuditKind.SCHEDULE_CHANGED).order_by("seq")
    actions = [json.loads(e.entry)["payload"]["action"] for e in entries]
    assert actions == ["created", "paused", "resumed", "deleted"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_ticks_racing_fire_a_due_time_once(schedule: Schedule) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    barrier, results = threading.Barrier(4), []

    def tick() -> None:
        from django.db import connections

        barrier.wait()
        try:
            results.append(schedules_tick(now=minute(1)))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=tick) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r["fired"] for r in results) == [0, 0, 0, 1]
    assert ScheduleFire.objects.count() == 1 and Job.objects.filter(plan__schedule_fire__isnull=False).count() == 1


class Hook(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        Hook.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook(settings: Any) -> Any:
    server = HTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Hook.received = []
    settings.BENCHREG_ALERT_WEBHOOK_URL = f"http://127.0.0.1:{server.server_port}/hook"
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # the receiver is local: allowed explicitly
    settings.BENCHREG_ALERT_WEBHOOK_SECRET = "whsec_" + base64.b64encode(b"series-test-secret").decode()
    yield settings
    server.shutdown()


def run_scheduled_job(job: Job, example: dict[str, Any], throughput: float, sleep_ms: float = 0.0) -> None:
    job_claim(job=job, claimant="rig-s@host:1", lease_seconds=60)
    doc = job_document(example, job)
    doc["metrics"]["throughput"]["value"] = throughput
    doc["software"]["settings"]["runner.sleep_ms"] = sleep_ms
    agent = job.agent
    submission_create(document=doc, submitted_by=agent.user, token=agent.token)


@pytest.mark.django_db(transaction=True)
def test_scheduled_runs_join_a_series_and_a_halving_raises_one_alert(
    schedule: Schedule, offline_example: dict, webhook: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    signalled: list[Alert] = []  # the alerts the decisions were told of (registry.services.reactions)
    flag = reactions.decisions_flag_for_series_alert
    monkeypatch.setattr(
        reactions, "decisions_flag_for_series_alert", lambda *, alert: signalled.append(alert) or flag(alert=alert)
    )
    values = [1000, 1012, 991, 1005, 998, 1003, 1008, 502, 505]
    for n, value in enumerate(values, start=1):
        if value == 502:  # the injected slowdown: a runner setting that halves throughput
            schedule_update(schedule=schedule, actor="boss", options={"sleep_ms": 20.0})
        schedules_tick(now=minute(n))
        job = Job.objects.get(plan__schedule_fire__due_at=minute(n))
        run_scheduled_job(job, offline_example, value, sleep_ms=20.0 if value < 600 else 0.0)
    series = Series.objects.get()
    assert SeriesRun.objects.filter(series=series).count() == len(values)
    alert = Alert.objects.get()  # exactly one: the run after the change starts a new reference
    assert alert.run.document["metrics"]["throughput"]["value"] == 502
    assert 0.49 < alert.ratio < 0.51 and alert.ci_low < alert.ratio < alert.ci_high and alert.direction == "worse"
    assert alert.differences == [{"pointer": "/software/settings/runner.sleep_ms", "before": 0, "after": 20}]
    assert signalled == [alert]
    entry = AuditEntry.objects.get(kind=AuditKind.SERIES_ALERT)
    assert json.loads(entry.entry)["payload"]["run"]["id"] == alert.run_id
    ((headers, body),) = Hook.received
    secret = base64.b64decode(webhook.BENCHREG_ALERT_WEBHOOK_SECRET.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.{body.decode()}".encode()
    expected = base64.b64encode(hmac.new(secret, signed, hashlib.sha256).digest()).decode()
    assert headers["webhook-signature"] == f"v1,{expected}"
    payload = json.loads(body)
    assert payload["type"] == "series.alert" and payload["data"]["id"] == alert.pk
    assert "runner.sleep_ms" in payload["data"]["summary"]


@pytest.mark.django_db
def test_a_plan_that_no_longer_runs_is_a_missed_fire_with_the_reason(schedule: Schedule) -> None:
    type(schedule.plan).objects.filter(pk=schedule.plan_id).update(options={"sleep_ms": -1})
    assert schedules_tick(now=minute(1)) == {"fired": 0, "missed": 1, "joined": 0}
    fire = ScheduleFire.objects.get()
    assert fire.status == "missed" and "sleep_ms" in fire.missed[0]["reason"]
