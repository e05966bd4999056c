"""The deployment topology, natively: the registry over real HTTP (live_server), a real Redis broker, and a
real `benchreg agent start` Celery worker process consuming the enrolled agent's own queue.

Run with DATABASE_URL=postgres://... and BENCHREG_TEST_BROKER_URL=redis://127.0.0.1:6379/15. Each test enrols
an agent of its own, so its queue name is unique and parallel test workers never share a queue.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from registry.celery import app
from registry.choices import JobStatus
from registry.models import Agent, Job, RunArtifact, Submission
from runners.agent import credentials
from runners.agent.credentials import Credential
from tests.conftest import ROOT
from tests.registry.agents.conftest import enrol, make_plan
from tests.registry.agents.test_serving_jobs import serving_job

BROKER = os.environ.get("BENCHREG_TEST_BROKER_URL", "")

pytestmark = [
    pytest.mark.services,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not BROKER, reason="needs Redis: set BENCHREG_TEST_BROKER_URL=redis://..."),
]

# Short leases and a short Redis visibility timeout, so a killed worker's job comes back within seconds.
AGENT_ENV = {
    "BENCHREG_AGENT_LEASE_SECONDS": "5",
    "BENCHREG_AGENT_HEARTBEAT_SECONDS": "1",
    "BENCHREG_AGENT_VISIBILITY_TIMEOUT": "6",
    "BENCHREG_AGENT_RESTORE_INTERVAL": "1",
}


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, log: Path) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    tail = log.read_text()[-4000:] if log.exists() else "(no worker log)"
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; worker log:\n{tail}")


class Workers:
    """Starts `benchreg agent start` processes (each in its own process group) and stops them all."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config, self.log, self.procs = config, log, []

    def start(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, **AGENT_ENV}
        env.pop("DATABASE_URL", None)  # the agent has only the broker and the registry's API
        with self.log.open("ab") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "registry.cli",
                    "agent",
                    "start",
                    "--config",
                    str(self.config),
                    "--loglevel",
                    "info",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    @staticmethod
    def kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(proc.pid, sig)  # the worker and its pool child, like a machine losing power
        except ProcessLookupError:
            return
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                self.kill(proc)  # the test is over: no need to wait for a warm shutdown


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The registry's Celery app sends to the real Redis for this test.

    Connection pools made earlier in this process for another broker URL are dropped: with no broker
    configured Celery defaults to amqp://localhost, and a local RabbitMQ would silently take the message.
    """
    monkeypatch.setitem(app.conf, "broker_url", BROKER)
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    yield BROKER


@pytest.fixture
def enrolled(live_server: Any, broker: str, tmp_path: Path) -> Iterator[tuple[Agent, Workers]]:
    agent, token = enrol(f"rig-{uuid.uuid4().hex[:8]}")
    config = credentials.save(
        Credential(
            server=live_server.url,
            token=token,
            agent=agent.name,
            agent_id=agent.pk,
            queue=agent.queue,
            broker_url=broker,
        ),
        tmp_path / "agent.json",
    )
    assert config.stat().st_mode & 0o777 == 0o600
    workers = Workers(config, tmp_path / "worker.log")
    yield agent, workers
    workers.stop_all()
    import redis  # cleanup: this test's queue only

    client = redis.Redis.from_url(broker)
    client.delete(agent.queue, *client.keys(f"_kombu.binding*.{agent.queue}"))


def job_status(job_id: int) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job_id)


def test_a_real_worker_runs_a_real_job_end_to_end(enrolled: tuple[Agent, Workers], user: Any) -> None:
    agent, workers = enrolled
    workers.start()
    job = make_plan(user, [agent]).jobs.get()  # dispatched to the agent's queue when the plan commits
    wait_for(lambda: job_status(job.pk) in JobStatus.final(), 90, "the job to finish", workers.log)
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMITTED, job.last_error
    run = Submission.objects.get()
    assert job.run == run and job.attempts == 1
    assert run.document["provenance"]["job"] == str(job.pk) and run.document["provenance"]["agent"] == agent.name
    assert run.token_id == agent.token_id
    wait_for(lambda: Agent.objects.get(pk=agent.pk).is_online, 30, "a heartbeat", workers.log)


def test_a_worker_killed_mid_job_leaves_exactly_one_run(enrolled: tuple[Agent, Workers], user: Any) -> None:
    agent, workers = enrolled
    first = workers.start()
    job = make_plan(user, [agent]).jobs.get()
    wait_for(lambda: job_status(job.pk) == JobStatus.RUNNING, 60, "the job to start", workers.log)
    workers.kill(first)  # SIGKILL mid-run: no ack, no goodbye; the message stays unacknowledged in Redis
    assert job_status(job.pk) == JobStatus.RUNNING
    workers.start()
    wait_for(lambda: job_status(job.pk) in JobStatus.final(), 120, "the redelivered job to finish", workers.log)
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMITTED, job.last_error
    assert job.attempts >= 2  # claimed again after the first worker's lease lapsed
    assert Submission.objects.count() == 1 and job.run == Submission.objects.get()


def test_a_real_worker_measures_a_planned_serving_sweep_shown_on_the_run_page(
    enrolled: tuple[Agent, Workers], api: Any, user: Any, endpoint: Callable[..., str], settings: Any, tmp_path: Path
) -> None:
    """The plan (over the API) names the real simulated endpoint; the agent process takes each level's job and
    uploads the level's per-request export once its run is stored."""
    settings.DATA_DIR = tmp_path / "data"
    agent, workers = enrolled
    workers.start()
    url = endpoint("--ttft-ms", "20", "--itl-ms", "5", "--capacity", "64")
    body = {"agents": [agent.name], "runner": "serving", "serving": serving_job(url), "soft_time_limit": 120}
    response = api.post("/api/v1/plans", body, format="json")
    assert response.status_code == 201, response.json()
    jobs = list(Job.objects.filter(plan_id=response.json()["id"]).order_by("id"))
    for job in jobs:
        wait_for(lambda job=job: job_status(job.pk) in JobStatus.final(), 120, f"job {job.pk}", workers.log)
        job.refresh_from_db()
        assert job.status == JobStatus.SUBMITTED, job.last_error
    runs = [job.run for job in jobs]
    assert [r.document["scenario"]["sweep"]["index"] for r in runs] == [0, 1]
    assert {r.document["scenario"]["sweep"]["id"] for r in runs} == {jobs[0].spec["sweep_id"]}
    client = Client()
    client.force_login(user)
    page = client.get(f"/runs/{runs[0].pk}/").content.decode()
    assert "Load sweep" in page and f"#{runs[1].pk}" in page and "2 stored runs" in page
    kept = {(a.run_id, a.sha256) for a in RunArtifact.objects.all()}
    assert kept == {(r.pk, r.document["provenance"]["artifacts"][0]["sha256"]) for r in runs}
