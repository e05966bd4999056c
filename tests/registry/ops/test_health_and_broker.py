"""Probes and the broker: /healthz and /readyz say what is wrong, beat writes its heartbeat, and with the broker
stopped (a private redis-server of this test's own) a report request is still stored and answered as queued,
then dispatched by the sweep once the broker is back."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import override_settings

from registry.celery import HeartbeatScheduler, app
from registry.choices import ReportStatus
from registry.models import Report
from registry.services.comparisons import comparison_create
from registry.services.reports import reports_sweep
from registry.services.submissions import submission_create
from registry.worker import heartbeats
from tests.registry.ops.services import free_port
from tests.registry.reports.conftest import PRICES, SIZING, fleet_documents


@pytest.mark.django_db
def test_healthz_answers_without_credentials_and_readyz_names_each_check(anonymous: Any) -> None:
    assert anonymous.get("/healthz").json() == {"status": "ok"}
    ready = anonymous.get("/readyz")
    assert ready.status_code == 200, ready.content
    assert set(ready.json()["checks"]) == {"database", "migrations", "broker", "keys", "storage"}
    assert all(check["status"] == "ok" for check in ready.json()["checks"].values())


def test_beat_touches_its_heartbeat_on_every_tick(tmp_path: Path) -> None:
    with override_settings(DATA_DIR=tmp_path, BENCHREG_HEARTBEAT_INTERVAL_S=5):
        scheduler = HeartbeatScheduler(app=app, schedule_filename=str(tmp_path / "schedule"), lazy=True)
        scheduler.setup_schedule()
        assert scheduler.tick() <= 5.0  # ticks at least every heartbeat interval, however far the next task is
    beat = heartbeats.read(tmp_path, "beat")
    assert beat is not None and beat.pid == os.getpid() and beat.age_s < 5


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.django_db
def test_on_the_embedded_default_readyz_names_a_worker_or_beat_that_is_down(
    anonymous: Any, tmp_path: Path, settings: Any
) -> None:
    settings.DATA_DIR, settings.BENCHREG_EMBEDDED_WORKER, settings.BENCHREG_HEARTBEAT_STALE_S = tmp_path, True, 60
    starting = anonymous.get("/readyz")
    assert starting.status_code == 503 and starting["Retry-After"]
    assert "has not started yet" in starting.json()["checks"]["worker"]["detail"]

    heartbeats.touch(tmp_path, "worker")
    heartbeats.touch(tmp_path, "beat")
    heartbeats.touch(tmp_path, "supervisor")
    ready = anonymous.get("/readyz")
    assert ready.status_code == 200, ready.content
    assert ready.json()["checks"]["worker"]["detail"].startswith(f"ok: process {os.getpid()}")
    assert ready.json()["checks"]["supervisor"]["detail"].startswith(f"ok: process {os.getpid()}")

    dead = _dead_pid()
    heartbeats.path(tmp_path, "beat").write_text(f"{dead}\n")
    down = anonymous.get("/readyz").json()
    assert down["status"] == "not ready" and down["checks"]["worker"]["status"] == "ok"
    assert down["checks"]["beat"]["detail"].endswith(
        f"the embedded beat is not running (process {dead} is gone); the supervisor restarts it"
    )

    heartbeats.touch(tmp_path, "beat")
    old = time.time() - 120
    os.utime(heartbeats.path(tmp_path, "worker"), (old, old))  # alive but frozen: no heartbeat for 2 minutes
    frozen = anonymous.get("/readyz")
    assert frozen.status_code == 503
    assert re.search(r"wrote no heartbeat for 1[23]\d s", frozen.json()["checks"]["worker"]["detail"])


@pytest.mark.django_db
def test_on_the_embedded_default_readyz_says_the_supervisor_is_down_and_what_restarts_it(
    anonymous: Any, tmp_path: Path, settings: Any
) -> None:
    """A dead supervisor restarts nothing: /readyz is 503 naming it, and a part that is down too is not said to be
    restarted by it."""
    settings.DATA_DIR, settings.BENCHREG_EMBEDDED_WORKER, settings.BENCHREG_HEARTBEAT_STALE_S = tmp_path, True, 60
    for part in ("worker", "beat", "supervisor"):
        heartbeats.touch(tmp_path, part)
    dead, gone = _dead_pid(), _dead_pid()
    heartbeats.path(tmp_path, "supervisor").write_text(f"{dead}\n")
    down = anonymous.get("/readyz")
    assert down.status_code == 503 and down["Retry-After"]
    check = down.json()["checks"]["supervisor"]
    assert check["status"] == "failed"
    assert f"the embedded supervisor is not running (process {dead} is gone)" in check["detail"]
    assert "nothing restarts the worker or beat until `benchreg serve` starts it again" in check["detail"]
    heartbeats.path(tmp_path, "worker").write_text(f"{gone}\n")
    worker = anonymous.get("/readyz").json()["checks"]["worker"]["detail"]
    assert "the supervisor restarts it" not in worker
    assert worker.endswith("its supervisor is down too: `benchreg serve` restarts the supervisor, which restarts it")
    heartbeats.touch(tmp_path, "supervisor")
    old = time.time() - 120
    os.utime(heartbeats.path(tmp_path, "supervisor"), (old, old))  # alive but frozen
    assert re.search(r"supervisor \(process \d+\) wrote no heartbeat for 1[23]\d s", anonymous.get("/readyz").text)


class PrivateRedis:
    def __init__(self, folder: Path) -> None:
        self.port, self.folder, self.process = free_port(), folder, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                if redis.Redis.from_url(self.url).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


@pytest.fixture
def private_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[PrivateRedis]:
    broker = PrivateRedis(tmp_path)
    broker.start()
    settings.CELERY_BROKER_URL = broker.url
    monkeypatch.setitem(app.conf, "broker_url", broker.url)
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    monkeypatch.setitem(app.conf, "broker_connection_retry", False)
    monkeypatch.setitem(app.conf, "broker_connection_max_retries", 0)
    monkeypatch.setitem(app.conf, "task_publish_retry", False)
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    yield broker
    broker.stop()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_with_the_broker_stopped_a_report_is_stored_queued_and_dispatched_later(
    private_broker: PrivateRedis, api: Any, user: Any
) -> None:
    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(2)]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices=PRICES, sizing=SIZING)
    assert api.get("/readyz").json()["checks"]["broker"]["status"] == "ok"

    private_broker.stop()
    ready = api.get("/readyz")
    assert ready.status_code == 503 and ready.json()["checks"]["broker"]["status"] == "failed"
    answer = api.post("/api/v1/reports", {"comparison": comparison.pk, "title": "t", "decision": "d"}, format="json")
    assert answer.status_code == 202, answer.content  # stored and queued; never a 500 after the commit
    report = Report.objects.get(pk=answer.json()["id"])
    assert report.status == ReportStatus.QUEUED

    private_broker.start()
    swept = reports_sweep(stale_after=timedelta(0))
    assert swept["redispatched"] == 1
    assert redis.Redis.from_url(private_broker.url).llen("celery") == 1  # the render task is on the queue now


@pytest.mark.services
@pytest.mark.django_db
def test_with_an_external_broker_readyz_reports_worker_and_beat_without_waiting_for_them(
    private_broker: PrivateRedis, anonymous: Any, tmp_path: Path, settings: Any
) -> None:
    """compose starts the worker and beat once web is ready and health-checks them itself: their heartbeats are
    shown under `background`, and a missing or stale one does not make web unready."""
    settings.DATA_DIR = tmp_path
    heartbeats.touch(tmp_path, "worker")
    old = time.time() - 600
    os.utime(heartbeats.path(tmp_path, "worker"), (old, old))
    ready = anonymous.get("/readyz")
    assert ready.status_code == 200, ready.content
    assert set(ready.json()["checks"]) == {"database", "migrations", "broker", "keys", "storage"}
    assert ready.json()["background"]["worker"]["status"] == "stale"
    assert re.fullmatch(r"last heartbeat 6\d\d s ago", ready.json()["background"]["worker"]["detail"])
    assert ready.json()["background"]["beat"]["status"] == "unknown"
