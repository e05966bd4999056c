"""Bounded work on request: schedules (variants, identical jobs, ticks that outlive their schedule), plans,
reports (the same report queued again and again, pending reports per person), the witness (stalled clients), and
schedules' own webhook secrets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from django.db.models.signals import post_save

from devtools.witnesses import ROOT, new_key
from registry.models import Job, Plan, Report, Schedule, ScheduleFire
from registry.services.agents import agent_heartbeat
from registry.services.comparisons import comparison_create
from registry.services.schedule_firing import schedules_tick
from registry.services.schedules import schedule_create, schedule_delete
from registry.services.submissions import submission_create
from tests.registry.agents.conftest import enrol, make_plan
from tests.registry.hostile.people import person, with_token
from tests.registry.reports.conftest import fleet_documents

T0 = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)


@pytest.fixture
def agent() -> Any:
    return agent_heartbeat(agent=enrol("rig-b")[0])


@pytest.fixture
def plan(user: Any, agent: Any) -> Plan:
    made = make_plan(user, [agent])
    made.jobs.all().delete()  # the template's own job is not the schedule's
    return made


def _schedule(api: Any, plan: Plan, **fields: Any) -> Any:
    return api.post(
        "/api/v1/schedules", {"plan": plan.pk, "cron": "* * * * *", "agents": ["rig-b"], **fields}, format="json"
    )


# --- schedules ------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_matrix_of_20000_variants_is_refused_at_once_naming_the_bound(api: Any, plan: Plan) -> None:
    matrix = [{"label": f"v{i}", "options": {"seed": i}} for i in range(20_000)]
    started = time.perf_counter()
    response = _schedule(api, plan, matrix=matrix)
    elapsed = time.perf_counter() - started
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert response.json()["errors"][0]["pointer"] == "/matrix", response.json()
    assert "256" in response.json()["errors"][0]["message"]
    assert elapsed < 5, f"refusing took {elapsed:.1f} s"  # was 15 s (SQLite) / 97 s (PostgreSQL) and a 201
    assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_the_largest_matrix_is_checked_in_linear_time(user: Any, plan: Plan, agent: Any, settings: Any) -> None:
    settings.BENCHREG_MAX_JOBS_PER_PLAN = 100_000
    settings.BENCHREG_SCHEDULE_MAX_VARIANTS = 20_000  # the label and options checks alone, at the old size
    matrix = [{"label": f"v{i}", "options": {"seed": i}} for i in range(20_000)]
    started = time.perf_counter()
    schedule_create(created_by=user, plan=plan, cron="0 2 * * *", agents=[agent], matrix=matrix, now=T0)
    assert time.perf_counter() - started < 10


@pytest.mark.django_db
@pytest.mark.parametrize(
    "matrix, pointer",
    [
        ([{"label": "a", "options": {"sleep_ms": 1}}, {"label": "b", "options": {"sleep_ms": 1}}], "/matrix/1/options"),
        ([{"label": "a"}, {"label": "b", "options": {}}], "/matrix/1/options"),
        ([{"label": "a"}, {"label": "a", "options": {"sleep_ms": 1}}], "/matrix/1/label"),
    ],
)
def test_two_variants_that_would_run_identical_jobs_are_refused(
    api: Any, plan: Plan, matrix: list, pointer: str
) -> None:
    response = _schedule(api, plan, matrix=matrix)
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["pointer"] == pointer
    assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_a_schedule_whose_due_time_would_queue_too_many_jobs_is_refused(api: Any, plan: Plan, settings: Any) -> None:
    settings.BENCHREG_MAX_JOBS_PER_PLAN = 3
    response = _schedule(api, plan, matrix=[{"label": f"v{i}", "options": {"sleep_ms": i}} for i in range(4)])
    assert response.status_code == 400
    assert response.json()["errors"][0] == {
        "pointer": "/matrix",
        "code": "too-many-jobs",
        "message": "4 jobs, at most 3",
    }


@pytest.mark.django_db
def test_a_schedule_deleted_mid_tick_fires_no_further_variant(user: Any, plan: Plan, agent: Any) -> None:
    schedule = schedule_create(
        created_by=user,
        plan=plan,
        cron="* * * * *",
        agents=[agent],
        now=T0,
        matrix=[{"label": f"v{i}", "options": {"sleep_ms": i}} for i in range(5)],
    )

    def delete_after_first(sender: Any, instance: ScheduleFire, created: bool, **kwargs: Any) -> None:
        if created and instance.schedule_id == schedule.pk:
            schedule_delete(schedule=schedule, actor="owner")  # the owner's DELETE lands during the tick

    post_save.connect(delete_after_first, sender=ScheduleFire)
    try:
        schedules_tick(now=T0 + timedelta(minutes=1))
    finally:
        post_save.disconnect(delete_after_first, sender=ScheduleFire)
    assert ScheduleFire.objects.filter(schedule=schedule).count() == 1
    assert Job.objects.filter(plan__schedule_fire__schedule=schedule).count() == 1


@pytest.mark.django_db
def test_a_tick_fires_in_bounded_batches_and_the_next_tick_goes_on(
    user: Any, plan: Plan, agent: Any, settings: Any
) -> None:
    settings.BENCHREG_SCHEDULE_FIRES_PER_TICK = 2
    schedule = schedule_create(
        created_by=user,
        plan=plan,
        cron="0 2 * * *",
        agents=[agent],
        now=T0,
        matrix=[{"label": f"v{i}", "options": {"sleep_ms": i}} for i in range(5)],
    )
    due = T0 + timedelta(days=1)
    counts = []
    for seconds in (0, 30, 60, 90):
        agent_heartbeat(agent=agent)
        counts.append(schedules_tick(now=due + timedelta(seconds=seconds))["fired"])
    assert counts == [2, 2, 1, 0]
    assert sorted(ScheduleFire.objects.filter(schedule=schedule).values_list("variant", flat=True)) == [
        "v0",
        "v1",
        "v2",
        "v3",
        "v4",
    ]
    schedule.refresh_from_db()
    assert schedule.last_due_at == due


# --- plans ----------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_repeated_precisions_and_batch_sizes_make_no_identical_jobs(api: Any, agent: Any) -> None:
    response = api.post(
        "/api/v1/plans",
        {
            "agents": ["rig-b"],
            "runner": "inference",
            "workload": "mlp-classifier",
            "precisions": ["fp32"] * 20,
            "batch_sizes": [1] * 50,
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    pointers = [e["pointer"] for e in response.json()["errors"]]
    assert pointers == [f"/precisions/{i}" for i in range(1, 20)] + [f"/batch_sizes/{i}" for i in range(1, 50)]
    assert not Plan.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
def test_a_batch_size_no_accelerator_has_is_refused_with_its_pointer(api: Any, agent: Any) -> None:
    response = api.post(
        "/api/v1/plans",
        {
            "agents": ["rig-b"],
            "runner": "inference",
            "workload": "mlp-classifier",
            "precisions": ["fp32"],
            "batch_sizes": [8, 2**62],
        },
        format="json",
    )
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json", response.content
    assert [e["pointer"] for e in response.json()["errors"]] == ["/batch_sizes/1"]
    assert not Plan.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
def test_a_plan_of_too_many_jobs_is_refused(api: Any, agent: Any, settings: Any) -> None:
    settings.BENCHREG_MAX_JOBS_PER_PLAN = 10
    response = api.post(
        "/api/v1/plans",
        {
            "agents": ["rig-b"],
            "runner": "inference",
            "workload": "mlp-classifier",
            "precisions": ["fp32", "bf16"],
            "batch_sizes": [1, 2, 4, 8, 16, 32],
        },
        format="json",
    )
    assert response.status_code == 400 and response.json()["errors"][0]["code"] == "too-many-jobs"
    assert not Plan.objects.exists()


# --- reports --------------------------------------------------------------------------------------------------


@pytest.fixture
def comparison(user: Any) -> Any:
    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(2)]
    return comparison_create(runs=runs, axis="system", created_by=user, prices={"lab-h100-01": 3.0})[0]


@pytest.mark.django_db
def test_the_same_report_requested_again_is_the_same_report(api: Any, comparison: Any) -> None:
    body = {"comparison": comparison.pk, "title": "GPU choice", "decision": "buy"}
    ids = {api.post("/api/v1/reports", body, format="json").json()["id"] for _ in range(10)}
    assert len(ids) == 1 and Report.objects.count() == 1
    # other prices are another comparison, so another report
    other = api.post("/api/v1/reports", {**body, "prices": {"lab-h100-01": 5.0}}, format="json")
    assert other.status_code == 202 and other.json()["id"] not in ids


@pytest.mark.django_db
def test_pending_reports_per_person_are_bounded_with_429_and_retry_after(
    api: Any, comparison: Any, settings: Any
) -> None:
    settings.BENCHREG_REPORTS_PENDING_PER_PERSON = 2
    for title in ("one", "two"):
        assert (
            api.post(
                "/api/v1/reports", {"comparison": comparison.pk, "title": title, "decision": "d"}, format="json"
            ).status_code
            == 202
        )
    refused = api.post(
        "/api/v1/reports",
        {"comparison": comparison.pk, "title": "three", "decision": "d", "prices": {"lab-h100-01": 9.0}},
        format="json",
    )
    assert refused.status_code == 429 and refused["Content-Type"] == "application/problem+json"
    assert int(refused["Retry-After"]) > 0 and refused.json()["code"] == "too-many-pending-reports"
    assert Report.objects.count() == 2 and comparison.__class__.objects.count() == 1  # nothing partial
    # an identical request is answered from what is pending, quota or not
    assert (
        api.post(
            "/api/v1/reports", {"comparison": comparison.pk, "title": "one", "decision": "d"}, format="json"
        ).status_code
        == 202
    )
    Report.objects.filter(title="one").update(status="failed")
    assert (
        api.post(
            "/api/v1/reports", {"comparison": comparison.pk, "title": "three", "decision": "d"}, format="json"
        ).status_code
        == 202
    )


def test_the_openapi_description_states_the_bounds() -> None:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert "429" in schema["paths"]["/api/v1/reports"]["post"]["responses"]
    create = schema["components"]["schemas"]["ScheduleCreateInputRequest"]["properties"]["matrix"]
    assert create["maxItems"] == 256, create
    answer = schema["paths"]["/api/v1/schedules"]["post"]["responses"]["201"]["content"]["application/json"]
    assert answer["schema"]["$ref"].endswith("/ScheduleAnswer")
    assert "webhook_secret" in schema["components"]["schemas"]["ScheduleAnswer"]["properties"]


# --- schedules' own webhook secrets ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_schedule_webhook_gets_its_own_secret_shown_once(api: Any, plan: Plan, settings: Any) -> None:
    created = _schedule(api, plan, webhook_url="https://alerts.example.org/hook")
    assert created.status_code == 201, created.content
    secret = created.json()["webhook_secret"]
    assert secret.startswith("whsec_")
    url = f"/api/v1/schedules/{created.json()['id']}"
    assert "webhook_secret" not in api.get(url).json()
    assert "webhook_secret" not in api.patch(url, {"paused": True}, format="json").json()
    from registry.services.series import alert_destination

    schedule = Schedule.objects.get()
    assert alert_destination(schedule) == ("https://alerts.example.org/hook", secret)
    changed = api.patch(url, {"webhook_url": "https://alerts.example.org/other"}, format="json").json()
    assert changed["webhook_secret"].startswith("whsec_") and changed["webhook_secret"] != secret


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/",
        "https://user:pw@alerts.example.org/hook",
        "http://localhost/hook",
    ],
)
def test_a_schedule_webhook_the_registry_would_not_deliver_to_is_refused(api: Any, plan: Plan, url: str) -> None:
    response = _schedule(api, plan, webhook_url=url)
    assert response.status_code == 422 and response.json()["errors"][0]["pointer"] == "/webhook_url", response.json()
    assert not Schedule.objects.exists()
    created = _schedule(api, plan).json()
    changed = api.patch(f"/api/v1/schedules/{created['id']}", {"webhook_url": url}, format="json")
    assert changed.status_code == 422 and Schedule.objects.get().webhook_url == ""


@pytest.mark.django_db
def test_a_credential_that_may_not_submit_registers_no_schedule_webhook(plan: Plan) -> None:
    """An admin's token without `submit` may manage schedules, but not point their alerts anywhere."""
    client = with_token(person("admin"), "read,admin")
    refused = _schedule(client, plan, webhook_url="https://alerts.example.org/hook")
    assert refused.status_code == 403 and refused["Content-Type"] == "application/problem+json", refused.content
    assert not Schedule.objects.exists()
    created = _schedule(client, plan)
    assert created.status_code == 201, created.content
    changed = client.patch(
        f"/api/v1/schedules/{created.json()['id']}", {"webhook_url": "https://alerts.example.org/hook"}, format="json"
    )
    assert changed.status_code == 403 and Schedule.objects.get().webhook_url == ""


@pytest.mark.django_db
def test_an_operator_webhook_without_its_secret_sends_nothing_and_says_why(
    user: Any, plan: Plan, agent: Any, settings: Any, caplog: Any
) -> None:
    schedule = schedule_create(created_by=user, plan=plan, cron="0 2 * * *", agents=[agent], now=T0)
    settings.BENCHREG_ALERT_WEBHOOK_URL = "https://ops.example.org/alerts"
    settings.BENCHREG_ALERT_WEBHOOK_SECRET = ""
    from registry.services.series import alert_destination

    assert alert_destination(schedule) is None
    assert "BENCHREG_ALERT_WEBHOOK_SECRET" in caplog.text


def test_the_registry_refuses_to_start_with_an_operator_webhook_and_no_secret() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHREG_ALERT_WEBHOOK")}
    env["BENCHREG_ALERT_WEBHOOK_URL"] = "https://ops.example.org/alerts"
    done = subprocess.run(
        [sys.executable, "-c", "import registry.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "BENCHREG_ALERT_WEBHOOK_SECRET" in done.stderr


# --- the witness ----------------------------------------------------------------------------------------------


def _serve_witness(tmp_path: Any, *flags: str) -> tuple[subprocess.Popen[str], str]:
    from registry.audit.keys import checkpoint_key

    key, _ = new_key(tmp_path, "witness.test/bounds")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "registry.cli",
            "witness",
            "serve",
            "--key",
            str(key),
            "--log-key",
            checkpoint_key().vkey,
            "--state",
            str(tmp_path / "state.json"),
            "--listen",
            "127.0.0.1:0",
            *flags,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " on http://" in line, line
    return proc, line.rsplit(" on ", 1)[1].strip()


def _stalled(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    conn = socket.create_connection((host, int(port)), timeout=10)
    conn.sendall(b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: 100\r\n\r\nold")
    return conn


def _closed_within(conn: socket.socket, seconds: float) -> bool:
    """The server closes the connection within `seconds` (the client sends nothing more meanwhile)."""
    conn.settimeout(seconds)
    try:
        while conn.recv(1024):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass  # reset by the server: closed too
    return True


@pytest.mark.django_db
def test_stalled_clients_cannot_hold_the_witness(tmp_path: Any) -> None:
    proc, url = _serve_witness(tmp_path, "--max-connections", "2", "--read-timeout", "1", "--request-deadline", "3")
    try:
        stalled = [_stalled(url), _stalled(url)]
        time.sleep(0.2)
        refused = httpx.get(f"{url}/checkpoint?origin=x", timeout=5)  # every slot is held: 503 at once
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
        assert all(_closed_within(conn, 4) for conn in stalled)  # each is cut after its read timeout
        time.sleep(0.2)
        assert httpx.get(f"{url}/checkpoint?origin=x", timeout=5).status_code == 404  # served again
        dripping = _stalled(url)  # a byte every half second never trips the read timeout...
        started = time.monotonic()
        try:
            while time.monotonic() - started < 10:
                dripping.sendall(b"x")
                time.sleep(0.5)
        except OSError:
            pass  # ...but the whole request has its deadline
        assert time.monotonic() - started < 6
        dripping.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.django_db
def test_a_free_form_object_holding_a_number_no_double_stores_is_unprocessable_with_its_pointer(
    api: Any, agent: Any
) -> None:
    """The description allows any JSON number inside `options`, so the request is schema-valid: 422, not 400."""
    response = api.post(
        "/api/v1/plans",
        {"agents": ["rig-b"], "runner": "inference", "workload": "mlp-classifier", "options": {"n": {"k": 2**62}}},
        format="json",
    )
    assert response.status_code == 422 and response["Content-Type"] == "application/problem+json", response.content
    body = response.json()
    assert body["code"] == "unprocessable-value"
    assert [(e["pointer"], e["code"]) for e in body["errors"]] == [("/options/n/k", "integer-out-of-range")]
    assert not Plan.objects.exists() and not Job.objects.exists()
