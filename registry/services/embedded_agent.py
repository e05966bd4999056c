"""The embedded agent: the same job code as an enrolled agent's (runners.agent.jobs), through the services
instead of HTTP. registry.tasks.jobs.job_run_embedded runs it."""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

from registry import policy
from registry.exceptions import RegistryError
from registry.models import Agent, Job
from registry.selectors.artifacts import artifact_path
from registry.services.artifacts import artifact_store
from registry.services.job_groups import group_arrive, group_view
from registry.services.jobs import JobConflict, job_claim, job_complete, job_fail, job_heartbeat, job_start
from registry.services.submissions import submission_create
from runners.agent import jobs as agent_jobs

# a storage that cannot take an upload now (503) is tried again after STORE_PAUSE_S, then twice that
STORE_ATTEMPTS = 3
STORE_PAUSE_S = 1.0
log = logging.getLogger(__name__)


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

    def upload_artifact(self, run_id: int, sha256: str, path: Path) -> tuple[bool, str]:
        """Keep one file the stored run's document names, as the API's PUT does: asked of the policy with the
        agent's token, a storage that cannot take it now tried STORE_ATTEMPTS times in all."""
        try:
            run = policy.run_get(policy.for_token(self.agent.token), run_id, policy.ARTIFACT_UPLOAD)
            for attempt in range(1, STORE_ATTEMPTS + 1):
                try:
                    with path.open("rb") as stream:
                        artifact, created = artifact_store(
                            run=run,
                            sha256=sha256,
                            stream=stream,
                            declared_length=path.stat().st_size,
                            uploaded_by=self.agent.user,
                            token=self.agent.token,
                        )
                    break
                except RegistryError as exc:
                    if exc.status != 503 or attempt == STORE_ATTEMPTS:
                        raise
                    log.warning("run %s: %s (attempt %s of %s)", run_id, exc.message, attempt, STORE_ATTEMPTS)
                    time.sleep(STORE_PAUSE_S * 2 ** (attempt - 1))
        except RegistryError as exc:
            return False, exc.message
        kept = "uploaded" if created else "already kept"
        return True, f"{kept}: {artifact.bytes:,} bytes, {artifact_path(run_id, artifact.sha256)}"


def embedded_claimant() -> str:
    return f"registry@{socket.gethostname()}:{os.getpid()}"
