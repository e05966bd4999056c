"""The embedded agent: the same job code as an enrolled agent's (runners.agent.jobs), through the services
instead of HTTP. registry.tasks.jobs.job_run_embedded runs it."""

from __future__ import annotations

import os
import socket
from typing import Any

from registry.exceptions import RegistryError
from registry.models import Agent, Job
from registry.services.job_groups import group_arrive, group_view
from registry.services.jobs import JobConflict, job_claim, job_complete, job_fail, job_heartbeat, job_start
from registry.services.submissions import submission_create
from runners.agent import jobs as agent_jobs


class ServiceJobRegistry:
    """runners.agent.jobs.JobRegistry over the service layer, for the embedded agent's in-process jobs.

    The services are the ones the HTTP API calls, so the same rules hold: own jobs only, conditional claims,
    one run per job through submission_create.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def _job(self, job_id: int) -> Job:
        job = Job.objects.filter(pk=job_id, agent=self.agent).first()
        if job is None:
            raise agent_jobs.JobGone(f"no job {job_id} for agent {self.agent.name}")
        return job

    def _call(self, fn: Any, job_id: int, **kwargs: Any) -> Job:
        try:
            return fn(job=self._job(job_id), **kwargs)  # type: ignore[no-any-return]
        except JobConflict as exc:
            if exc.code == "job-leased":
                raise agent_jobs.JobBusy(exc.message) from None
            raise agent_jobs.JobGone(exc.message) from None

    def claim(self, job_id: int, *, claimant: str, lease_seconds: int) -> agent_jobs.Claim:
        job = self._call(job_claim, job_id, claimant=claimant, lease_seconds=lease_seconds)
        return agent_jobs.Claim(
            job=job.pk,
            agent=job.agent_name,
            spec=job.spec,
            attempts=job.attempts,
            soft_time_limit=job.soft_time_limit,
            time_limit=job.time_limit,
        )

    def start(self, job_id: int, *, claimant: str) -> None:
        self._call(job_start, job_id, claimant=claimant)

    def heartbeat(self, job_id: int, *, claimant: str, lease_seconds: int) -> None:
        self._call(job_heartbeat, job_id, claimant=claimant, lease_seconds=lease_seconds)

    def arrive(self, job_id: int, *, claimant: str, lease_seconds: int, endpoint: str | None) -> dict[str, Any]:
        try:
            return group_arrive(
                job=self._job(job_id), claimant=claimant, lease_seconds=lease_seconds, endpoint=endpoint
            )
        except JobConflict as exc:
            raise agent_jobs.JobGone(exc.message) from None

    def group(self, job_id: int) -> dict[str, Any]:
        try:
            return group_view(job=self._job(job_id))
        except JobConflict as exc:
            raise agent_jobs.JobGone(exc.message) from None

    def fail(self, job_id: int, *, claimant: str, error: str, timed_out: bool = False) -> None:
        self._call(job_fail, job_id, claimant=claimant, error=error, timed_out=timed_out)

    def complete(self, job_id: int, *, run_id: int, digest: str) -> None:
        self._call(job_complete, job_id, run_id=run_id, digest=digest)

    def submit(self, document: dict[str, Any]) -> agent_jobs.Submitted:
        try:
            run, created = submission_create(document=document, submitted_by=self.agent.user, token=self.agent.token)
        except JobConflict as exc:
            return agent_jobs.Submitted("conflict", message=exc.message)
        except RegistryError as exc:
            return agent_jobs.Submitted("rejected", message=exc.message, errors=exc.errors)
        return agent_jobs.Submitted("stored" if created else "known", run_id=run.pk, digest=run.digest)


def embedded_claimant() -> str:
    return f"registry@{socket.gethostname()}:{os.getpid()}"
