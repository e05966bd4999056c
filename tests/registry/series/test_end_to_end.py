"""A schedule end to end on the real topology: PostgreSQL, Redis, the registry over HTTP (live_server), a real
registry Celery worker, two real Celery beat processes and a real `benchreg agent start` worker.

The series' history is seeded by the tick beat runs (called in-process with clock times one minute apart, so
the test does not wait a minute per run); then the schedule's runner setting `sleep_ms` (a pause after each
query, inside the timed region) goes from PAUSE_MS to SLOWED_MS, so throughput about halves, and two beat
processes take over. The pause dominates each query so that the series stays unchanged on a busy shared
machine: what contention costs is the query's own CPU time (about 2 ms here), which busy processes
stretch. Beside two to four busy processes on two cores, a 50 ms pause lost 2.4 to 4.9% of throughput, past
the detector's 3% floor on a series whose quiet runs agree within 0.2% (CI once alerted on unchanged runs);
a 150 ms pause lost 0.2 to 1.7% (3.4% beside six). The next due time fires exactly once, its run joins the
series and raises exactly one alert that names the setting; the unchanged runs before it raise none; the alert
is delivered to a webhook with a valid signature by the registry worker.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from registry.choices import JobStatus
from registry.models import Alert, Job, Plan, ScheduleFire, Series, SeriesRun
from registry.services.schedule_firing import schedules_tick
from registry.services.schedules import schedule_create, schedule_update
from tests.conftest import ROOT
from tests.registry.agents.conftest import QUICK
from tests.registry.agents.test_real_worker import BROKER, Workers, wait_for

pytestmark = [
    pytest.mark.services,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not BROKER, reason="needs Redis: set BENCHREG_TEST_BROKER_URL=redis://..."),
]

SEEDED = 8  # unchanged runs before the slowdown: the 6th to 8th are judged (and must not alert)
PAUSE_MS, SLOWED_MS = 150.0, 320.0  # the pause after each query before and after the slowdown (see above)
SECRET = "whsec_" + base64.b64encode(b"end-to-end-secret").decode()


class Hook(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:  # http.server's method name
        body = self.rfile.read(int(self.headers["content-length"]))
        Hook.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Hook.received = []
    yield f"http://127.0.0.1:{server.server_port}/alerts"
    server.shutdown()


class Registry:
    """The registry's own Celery worker and beat processes, on the test database and the test broker."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.procs = tmp, {}
        name = connection.settings_dict["NAME"]
        self.env = {
            **os.environ,
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{name}",
            "CELERY_BROKER_URL": BROKER,
            "BENCHREG_SCHEDULES_TICK_S": "1",
            "BENCHREG_ALERT_WEBHOOK_SECRET": SECRET,
            "BENCHREG_CHECKPOINT_INTERVAL_S": "3600",
            "BENCHREG_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
            "BENCHREG_JOBS_SWEEP_INTERVAL_S": "3600",
        }

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        with (self.tmp / f"{name}.log").open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "registry.celery", *args, "--loglevel", "info"],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                Workers.kill(proc)


@pytest.fixture
def registry_processes(tmp_path: Path) -> Iterator[Registry]:
    import redis

    redis.Redis.from_url(BROKER).delete("celery")  # nothing left over from an earlier run on the default queue
    processes = Registry(tmp_path)
    yield processes
    processes.stop_all()


def _state(schedule: Any) -> str:
    """What the schedule did, for a failure message."""
    fires = [(f.due_at.strftime("%H:%M"), f.status, f.plan_id) for f in ScheduleFire.objects.filter(schedule=schedule)]
    jobs = [(j.pk, j.status, j.spec.get("sleep_ms"), j.run_id, j.last_error[:200]) for j in Job.objects.order_by("pk")]
    members = [(m.run_id, m.value) for m in SeriesRun.objects.order_by("run_id")]
    return f"now {timezone.now():%H:%M:%S}\nfires {fires}\njobs {jobs}\nseries {members}"


def _series_runs() -> int:
    return SeriesRun.objects.count()


def test_a_schedule_fires_runs_join_their_series_and_a_slowdown_raises_one_alert(
    enrolled: Any, registry_processes: Registry, webhook_url: str, settings: Any, user: Any
) -> None:
    settings.BENCHREG_ALERT_WEBHOOK_SECRET = SECRET  # the live server raises the alert: it signs with this
    settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # the receiver is local: allowed explicitly
    agent, workers = enrolled
    workers.start()
    wait_for(lambda: type(agent).objects.get(pk=agent.pk).is_online, 60, "the agent's heartbeat", workers.log)
    registry_processes.start(
        "worker", "worker", "-Q", "celery,webhooks", "--concurrency", "2", "-n", f"registry-{uuid.uuid4().hex[:6]}@%h"
    )
    plan = Plan.objects.create(
        runner="inference",
        workload="mlp-classifier",
        precisions=["fp32"],
        batch_sizes=[1],
        repetitions=3,
        options={**QUICK, "threads": 1, "sleep_ms": PAUSE_MS},
        soft_time_limit=120,
        time_limit=180,
        created_by=user,
        created_by_name=user.get_username(),
    )
    start = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=SEEDED + 2)
    schedule = schedule_create(
        created_by=user,
        plan=plan,
        cron="* * * * *",
        agents=[agent],
        name="every minute",
        webhook_url=webhook_url,
        now=start,
    )

    # Seed the series: the beat tick, with the clock one minute further each time.
    for n in range(1, SEEDED + 1):
        assert schedules_tick(now=start + timedelta(minutes=n))["fired"] == 1
    wait_for(lambda: _series_runs() >= SEEDED, 300, f"{SEEDED} scheduled runs to join the series", workers.log)
    assert not Alert.objects.exists(), f"an unchanged series raised an alert\n{_state(schedule)}"

    # Inject the slowdown, then let two real beat processes drive the schedule.
    schedule_update(schedule=schedule, actor="test", options={"sleep_ms": SLOWED_MS})
    registry_processes.start("beat-a", "beat", "-s", str(registry_processes.tmp / "beat-a"))
    registry_processes.start("beat-b", "beat", "-s", str(registry_processes.tmp / "beat-b"))
    try:
        wait_for(Alert.objects.exists, 180, "the slowed run's alert", registry_processes.tmp / "worker.log")
    except AssertionError as exc:
        raise AssertionError(f"{_state(schedule)}\n{exc}") from None
    wait_for(lambda: len(Hook.received) >= 1, 60, "the webhook delivery", registry_processes.tmp / "worker.log")
    registry_processes.stop_all()  # no more ticks; let the agent finish what it holds
    wait_for(
        lambda: not Job.objects.filter(status__in=JobStatus.active()).exists(),
        120,
        "running jobs to finish",
        workers.log,
    )

    # Both beats were ticking; still every due time fired once, with one job each.
    for name in ("beat-a", "beat-b"):
        assert "registry.tasks.series.schedules_tick" in registry_processes.log(name), name
    fires = list(ScheduleFire.objects.filter(schedule=schedule).order_by("due_at"))
    assert len({f.due_at for f in fires}) == len(fires)
    fired = [f for f in fires if f.status == "fired"]
    assert all(f.plan.jobs.count() == 1 for f in fired)
    assert Job.objects.filter(plan__schedule_fire__schedule=schedule).count() == len(fired)
    # The due times no beat was running for were recorded as missed, not silently skipped.
    late = [f for f in fires if f.due_at > start + timedelta(minutes=SEEDED) and f.status == "missed"]
    assert late and all(m["reason"] == "the scheduler did not run at the due time" for f in late for m in f.missed)

    # Every run joined the one series; exactly one alert, on the first slowed run, naming the setting.
    assert Series.objects.count() == 1
    jobs = Job.objects.filter(plan__schedule_fire__schedule=schedule, status=JobStatus.SUBMITTED).order_by("run_id")
    assert SeriesRun.objects.count() == jobs.count() >= SEEDED + 1
    slowed = [j.run_id for j in jobs if j.spec.get("sleep_ms") == SLOWED_MS]
    alert = Alert.objects.get()
    assert alert.run_id == slowed[0]
    assert 0.35 < alert.ratio < 0.65 and alert.direction == "worse" and alert.ci_low < alert.ratio < alert.ci_high
    pointers = {d["pointer"]: d for d in alert.differences}
    assert pointers["/software/settings/runner.sleep_ms"]["before"] == PAUSE_MS
    assert pointers["/software/settings/runner.sleep_ms"]["after"] == SLOWED_MS

    # The webhook got it once, signed with the schedule's own secret (Standard Webhooks: HMAC-SHA256 over
    # id.timestamp.body), which its owner was shown when setting the address.
    ((headers, body),) = Hook.received
    own_secret = type(schedule).objects.get(pk=schedule.pk).webhook_secret
    assert own_secret.startswith("whsec_") and own_secret != SECRET
    key = base64.b64decode(own_secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.{body.decode()}".encode()
    assert (
        headers["webhook-signature"]
        == "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    )
    assert json.loads(body)["data"]["id"] == alert.pk
