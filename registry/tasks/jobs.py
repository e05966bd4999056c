"""Job tasks: the embedded agent's in-process run, and the periodic sweep (timeouts, offline agents)."""

from __future__ import annotations

import logging

from celery import shared_task

from registry.models import Job
from registry.services.agents import agents_mark_offline
from registry.services.embedded_agent import ServiceJobRegistry, embedded_claimant
from registry.services.job_groups import groups_expire
from registry.services.jobs import jobs_time_out
from runners.agent.jobs import run_job

log = logging.getLogger(__name__)


@shared_task(name="registry.tasks.jobs.job_run_embedded", acks_late=True)
def job_run_embedded(job_id: int) -> dict[str, object]:
    """Run a job of the registry's own (embedded) agent with the agent's code, through the service layer.

    Eager (in-process) without a broker, so a single machine needs nothing installed; with a broker it runs
    on the server-side worker. A missing job is a logged no-op; a finished one is skipped by the claim.
    """
    job = Job.objects.select_related("agent", "agent__user", "agent__token").filter(pk=job_id).first()
    if job is None or not job.agent.embedded:
        log.warning("job %s: not an embedded agent's job; nothing to do", job_id)
        return {"job": job_id, "outcome": "skipped"}
    outcome = run_job(ServiceJobRegistry(job.agent), job_id, claimant=embedded_claimant(), lease_seconds=3600)
    return outcome.as_dict()


@shared_task(name="registry.tasks.jobs.jobs_sweep")
def jobs_sweep() -> dict[str, int]:
    """Celery beat: time out jobs past their deadline, fail job groups that did not form or lost a rank, mark
    silent agents offline."""
    return {"timed_out": jobs_time_out(), "groups_failed": groups_expire(), "offline": agents_mark_offline()}
