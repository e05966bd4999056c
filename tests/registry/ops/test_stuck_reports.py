"""Nothing stays stuck: a report whose rendering worker is killed (SIGKILL, mid-render) is re-queued by the sweep
and rendered by the next worker; one lost too often ends FAILED with the reason. Real Redis, real Celery worker
processes of the registry (`celery -A registry worker`) on the test database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from devtools.scratch import database_url
from registry.celery import app
from registry.choices import ReportStatus
from registry.models import Report
from registry.services.comparisons import comparison_create
from registry.services.reports import report_request, reports_sweep
from registry.services.submissions import submission_create
from tests.conftest import ROOT
from tests.registry.reports.conftest import PRICES, SIZING, fleet_documents

BROKER = os.environ.get("BENCHREG_TEST_BROKER_URL", "")
pytestmark = [
    pytest.mark.services,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not BROKER, reason="needs Redis: set BENCHREG_TEST_BROKER_URL=redis://..."),
]


@pytest.fixture
def queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The registry's tasks go to real Redis, on a queue of this test's own."""
    name = f"reports-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(app.conf, "broker_url", BROKER)
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    monkeypatch.setitem(app.conf, "task_default_queue", name)
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    yield name
    import redis

    redis.Redis.from_url(BROKER).delete(name, f"{name}.unacked")


def start_worker(queue: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(os.environ["DATABASE_URL"], connection.settings_dict["NAME"]),
        "CELERY_BROKER_URL": BROKER,
        "BENCHREG_DATA_DIR": str(settings.DATA_DIR),
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "registry",
                "worker",
                "--pool",
                "solo",
                "-Q",
                queue,
                "--without-gossip",
                "--without-mingle",
                "-l",
                "info",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill(worker: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and anything it started, like a machine losing power
    except ProcessLookupError:
        return
    worker.wait(timeout=30)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; worker log:\n{log.read_text()[-4000:]}")


def status(report_id: int) -> str:
    return Report.objects.values_list("status", flat=True).get(pk=report_id)


def _report(user: Any) -> Report:
    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(3)]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices=PRICES, sizing=SIZING)
    return report_request(comparison=comparison, title="Killed mid-render", decision="d", requested_by=user)


def test_a_report_whose_worker_is_killed_is_requeued_by_the_sweep_and_rendered(
    queue: str, user: Any, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    report = _report(user)  # dispatched to the queue when its transaction committed
    first = start_worker(queue, log)
    try:
        wait_for(lambda: status(report.pk) == ReportStatus.RENDERING, 120, "the worker to claim the report", log)
    finally:
        kill(first)
    time.sleep(1)
    assert status(report.pk) == ReportStatus.RENDERING  # stuck: without the sweep it would stay so forever
    assert reports_sweep(stale_after=timedelta(0)) == {"failed": 0, "requeued": 1, "redispatched": 0}
    assert status(report.pk) == ReportStatus.QUEUED
    second = start_worker(queue, log)
    try:
        wait_for(
            lambda: status(report.pk) in (ReportStatus.READY, ReportStatus.FAILED),
            240,
            "the second worker to render the report",
            log,
        )
    finally:
        kill(second)
    report.refresh_from_db()
    assert report.status == ReportStatus.READY, report.last_error
    assert report.attempts == 2 and report.pdf_digest


def test_a_report_lost_too_often_ends_failed_with_the_reason(queue: str, user: Any) -> None:
    report = _report(user)
    long_ago = timezone.now() - timedelta(hours=2)
    Report.objects.filter(pk=report.pk).update(status=ReportStatus.RENDERING, attempts=3, started_at=long_ago)
    assert reports_sweep(stale_after=timedelta(hours=1), max_attempts=3)["failed"] == 1
    report.refresh_from_db()
    assert report.status == ReportStatus.FAILED and report.finished_at is not None
    assert "3 times" in report.last_error and "worker was lost" in report.last_error
    # a live render (started recently) is never taken away
    fresh = _report(user)
    Report.objects.filter(pk=fresh.pk).update(status=ReportStatus.RENDERING, attempts=1, started_at=timezone.now())
    assert reports_sweep(stale_after=timedelta(hours=1)) == {"failed": 0, "requeued": 0, "redispatched": 0}
    assert status(fresh.pk) == ReportStatus.RENDERING
