"""The agent's Celery app and its tasks, `benchreg.run_job(job_id)` and, for one rank of a job group,
`benchreg.run_group_job(job_id)`, consumed from the agent's own queue.

Configured only from the agent's credential file (named by $BENCHREG_AGENT_CONFIG, which `benchreg agent
start` sets) and the environment: broker URL, queue, registry URL and token. Long jobs: JSON only, one job at
a time (concurrency 1, prefetch 1), acknowledged late and rejected back to the queue if the worker is lost,
so a machine that dies mid-job gets the job again; the registry's conditional claim and one-run-per-job rule
make that redelivery harmless. Soft and hard time limits come with each message, from the job's plan.
Retries: only runners.client.RegistryError (network, 5xx, a live lease held by another worker), with
exponential backoff and jitter.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from celery import Celery, Task, signals
from celery.exceptions import SoftTimeLimitExceeded

from ..client import RegistryClient, RegistryError
from . import credentials
from .credentials import Credential
from .groups import run_group_job
from .jobs import run_job
from .remote import HttpJobRegistry

TASK_NAME = "benchreg.run_job"
GROUP_TASK_NAME = "benchreg.run_group_job"
RENDEZVOUS_HOST_ENV = "BENCHREG_AGENT_RENDEZVOUS_HOST"  # the address peers reach this machine at, as rank 0
log = logging.getLogger(__name__)

# No Django fixup: an agent never loads the registry's settings. Not the current app: importing this module
# (the registry's tests do) must not take over shared tasks of the process's own app.
app = Celery("benchreg-agent", fixups=[], set_as_current=False)
_state: dict[str, Any] = {}


def configure(credential: Credential) -> Celery:
    """Point the app at the agent's broker and queue; returns the app."""
    _state["credential"] = credential
    app.conf.update(
        broker_url=credential.broker_url,
        broker_connection_retry_on_startup=True,
        # Redis: an unacknowledged message returns to the queue after visibility_timeout (keep it above the
        # longest hard time limit, or a live job is delivered twice: harmless, but wasted machine time).
        broker_transport_options={
            "visibility_timeout": credential.visibility_timeout,
            "unacked_restore_interval": credential.restore_interval,
            "unacked_restore_throttle": 1,
        },
        task_default_queue=credential.queue,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        result_backend=None,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=1,  # one benchmark at a time on this machine
        worker_hijack_root_logger=False,
        worker_enable_remote_control=False,
        worker_send_task_events=False,
    )
    return app


def current_credential() -> Credential:
    if "credential" not in _state:
        configure(credentials.load())
    credential: Credential = _state["credential"]
    return credential


def claimant() -> str:
    """This worker process: a redelivery to another process must wait for this one's lease to lapse."""
    return f"{current_credential().agent}@{socket.gethostname()}:{os.getpid()}"


@app.task(
    name=TASK_NAME,
    shared=False,  # the agent's app only: Celery shares a task with every app by default, and a registry process
    # that imports this module would then run an agent's job itself instead of sending it to the agent's queue
    bind=True,
    autoretry_for=(RegistryError,),
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=12,
    acks_late=True,
    reject_on_worker_lost=True,
)
def run_job_task(self: Task[Any, Any], job_id: int) -> dict[str, Any]:
    """Run one job of this agent (see runners.agent.jobs.run_job). Safe to deliver twice."""
    credential = current_credential()
    with RegistryClient(credential.server, credential.token) as client:
        outcome = run_job(
            HttpJobRegistry(client),
            int(job_id),
            claimant=claimant(),
            lease_seconds=credential.lease_seconds,
            heartbeat_every=max(1.0, credential.lease_seconds / 3),
            timeout_errors=(SoftTimeLimitExceeded,),
        )
    log.info("job %s: %s %s", job_id, outcome.outcome, outcome.detail)
    return outcome.as_dict()


@app.task(
    name=GROUP_TASK_NAME,
    shared=False,  # the agent's app only: Celery shares a task with every app by default, and a registry process
    # that imports this module would then run an agent's job itself instead of sending it to the agent's queue
    bind=True,
    autoretry_for=(RegistryError,),
    retry_backoff=2,
    retry_backoff_max=30,  # a rank retried late misses its group's deadline
    retry_jitter=True,
    max_retries=6,
    acks_late=True,
    reject_on_worker_lost=True,
)
def run_group_job_task(self: Task[Any, Any], job_id: int) -> dict[str, Any]:
    """Run this agent's rank of a job group (see runners.agent.groups.run_group_job)."""
    credential = current_credential()
    host = os.environ.get(RENDEZVOUS_HOST_ENV) or socket.getfqdn()
    with RegistryClient(credential.server, credential.token) as client, tempfile.TemporaryDirectory() as workdir:
        outcome = run_group_job(
            HttpJobRegistry(client),
            int(job_id),
            agent=credential.agent,
            claimant=claimant(),
            host=host,
            workdir=Path(workdir),
            lease_seconds=credential.lease_seconds,
        )
    log.info("group job %s: %s %s", job_id, outcome.outcome, outcome.detail)
    return outcome.as_dict()


class AgentHeartbeat(threading.Thread):
    """Tells the registry every few seconds that this agent is online (in the worker's main process)."""

    def __init__(self, credential: Credential) -> None:
        super().__init__(name="agent-heartbeat", daemon=True)
        self.credential = credential
        self.stopped = threading.Event()

    def run(self) -> None:
        with RegistryClient(self.credential.server, self.credential.token) as client:
            remote = HttpJobRegistry(client)
            while True:
                try:
                    remote.heartbeat_agent()
                except Exception as exc:  # the registry may be briefly away; keep trying
                    log.warning("heartbeat failed: %s", exc)
                if self.stopped.wait(self.credential.heartbeat_seconds):
                    return


@signals.worker_ready.connect
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    if getattr(sender, "app", app) is not app:  # another Celery app's worker in this process
        return
    thread = AgentHeartbeat(current_credential())
    _state["heartbeat"] = thread
    thread.start()


@signals.worker_shutdown.connect
def _stop_heartbeat(**_: Any) -> None:
    thread = _state.get("heartbeat")
    if thread is not None:
        thread.stopped.set()


# `celery -A runners.agent.worker worker` (what `benchreg agent start` runs) configures from the file.
if os.environ.get(credentials.CONFIG_ENV):
    configure(credentials.load())
