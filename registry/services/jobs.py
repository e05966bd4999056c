"""Jobs: move each job of a plan (registry.services.plans) through its lifecycle, and store its one run.

Exactly one run per job (docs/agents.md, "Exactly once"):
  * claiming is a conditional UPDATE: QUEUED -> CLAIMED, or a take-over of a CLAIMED/RUNNING job by the same
    agent only when the holder is the same worker process or its lease has lapsed (the holder died);
  * the run is stored and linked to its job in ONE transaction, with the job row locked
    (`job_submission_create`, reached from the one path in, `submission_create`): a job that already has a run
    refuses any other document (409) and returns its own run for an identical one (idempotent by digest);
  * a job in a final state refuses claims and runs, so a duplicate or late delivery does nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

import protocol
from protocol.errors import value_at
from registry import policy
from registry.choices import AuditKind, GroupStatus, JobStatus, Trust
from registry.exceptions import NotFound, RegistryError
from registry.models import Agent, ApiToken, Job, JobGroup, Submission
from registry.services.audit import audit_append
from registry.services.reactions import job_run_stored
from registry.services.runs import run_store

log = logging.getLogger(__name__)

MAX_JOB_ATTEMPTS = 3  # claims before a job that keeps killing its worker is failed
DEADLINE_GRACE = timedelta(seconds=60)
LEASE_BOUNDS = (5, 3600)


class JobConflict(RegistryError):
    """The job is not in a state that allows this (final, or held by another worker)."""

    status = 409
    code = "job-conflict"


def job_log_state(job: Job, actor: str, **payload: Any) -> None:
    """The job's `job.state` audit entry: its status now, who moved it there, and what else the change names."""
    audit_append(
        kind=AuditKind.JOB_STATE,
        actor=actor,
        subject=f"job:{job.pk}",
        payload={"job": job.pk, "agent": job.agent_name, "status": job.status, **payload},
    )


# --- the agent's side of a job ------------------------------------------------------------------------------


def _lease(seconds: int) -> timedelta:
    low, high = LEASE_BOUNDS
    return timedelta(seconds=min(max(int(seconds), low), high))


def _refusal(job: Job, now: datetime) -> JobConflict:
    """Why a conditional update on this (refreshed) job matched nothing."""
    if job.status in JobStatus.final():
        return JobConflict(f"job {job.pk} is {job.status}", code="job-finished")
    wait = max(1, int((job.lease_expires_at - now).total_seconds())) if job.lease_expires_at else 1
    return JobConflict(
        f"job {job.pk} is held by {job.claimant or 'another worker'} for {wait} s more",
        code="job-leased",
        errors=[{"pointer": "", "code": "retry-after", "message": str(wait)}],
    )


def job_claim(*, job: Job, claimant: str, lease_seconds: int) -> Job:
    """Take the job for `claimant` (one worker process of the job's agent) and lease it.

    Conditional UPDATE: a QUEUED job, or a CLAIMED/RUNNING one whose holder is this claimant or whose lease
    lapsed (its worker died and the broker redelivered). Two claimants racing: one row updated, one 409.
    A job whose worker died MAX_JOB_ATTEMPTS times is failed instead of being run again.
    """
    now = timezone.now()
    takeover = Q(status__in=[JobStatus.CLAIMED, JobStatus.RUNNING]) & (
        Q(claimant=claimant) | Q(lease_expires_at__lt=now)
    )
    with transaction.atomic():
        won = _claim(job, Q(status=JobStatus.QUEUED) | takeover, claimant, now, lease_seconds)
        job.refresh_from_db()
        if won:
            job_log_state(job, f"agent:{job.agent_name}", claimant=job.claimant, attempt=job.attempts)
            return job
        _give_up(job, takeover, now)
    raise _refusal(job, now)  # after the block: the give-up is committed, not rolled back


def _claim(job: Job, claimable: Q, claimant: str, now: datetime, lease_seconds: int) -> int:
    return Job.objects.filter(claimable, pk=job.pk, attempts__lt=MAX_JOB_ATTEMPTS).update(
        status=JobStatus.CLAIMED,
        claimant=claimant[:200],
        claimed_at=now,
        lease_expires_at=now + _lease(lease_seconds),
        started_at=None,
        deadline_at=now + timedelta(seconds=job.time_limit) + DEADLINE_GRACE,
        attempts=F("attempts") + 1,
    )


def _give_up(job: Job, takeover: Q, now: datetime) -> None:
    """A job whose worker was lost MAX_JOB_ATTEMPTS times is failed instead of being run again."""
    if Job.objects.filter(takeover, pk=job.pk, attempts__gte=MAX_JOB_ATTEMPTS).update(
        status=JobStatus.FAILED,
        finished_at=now,
        lease_expires_at=None,
        last_error=f"gave up after {job.attempts} attempts: the worker was lost each time",
    ):
        job.refresh_from_db()
        job_log_state(job, "registry", error=job.last_error)


def _held(job: Job, claimant: str, statuses: list[str]) -> Q:
    return Q(pk=job.pk, claimant=claimant, status__in=statuses)


@transaction.atomic
def job_start(*, job: Job, claimant: str) -> Job:
    """CLAIMED -> RUNNING by the claimant; the deadline counts from here."""
    now = timezone.now()
    if not Job.objects.filter(_held(job, claimant, [JobStatus.CLAIMED])).update(
        status=JobStatus.RUNNING, started_at=now, deadline_at=now + timedelta(seconds=job.time_limit) + DEADLINE_GRACE
    ):
        job.refresh_from_db()
        raise _refusal(job, now)
    job.refresh_from_db()
    job_log_state(job, f"agent:{job.agent_name}", claimant=claimant)
    return job


def job_heartbeat(*, job: Job, claimant: str, lease_seconds: int) -> Job:
    """Renew the claimant's lease (no audit entry). 409 once the job is no longer theirs, e.g. cancelled."""
    now = timezone.now()
    if not Job.objects.filter(_held(job, claimant, [JobStatus.CLAIMED, JobStatus.RUNNING])).update(
        lease_expires_at=now + _lease(lease_seconds)
    ):
        job.refresh_from_db()
        raise _refusal(job, now)
    Agent.objects.filter(pk=job.agent_id).update(last_heartbeat_at=now, online=True)
    job.refresh_from_db()
    return job


@transaction.atomic
def job_fail(*, job: Job, claimant: str, error: str, timed_out: bool = False) -> Job:
    """The claimant reports that the run failed (or hit its soft time limit): FAILED or TIMED_OUT."""
    status = JobStatus.TIMED_OUT if timed_out else JobStatus.FAILED
    now = timezone.now()
    if not Job.objects.filter(_held(job, claimant, [JobStatus.CLAIMED, JobStatus.RUNNING])).update(
        status=status, last_error=error[:10_000], finished_at=now, lease_expires_at=None
    ):
        job.refresh_from_db()
        raise _refusal(job, now)
    job.refresh_from_db()
    job_log_state(job, f"agent:{job.agent_name}", error=job.last_error)
    if job.group_id is not None:
        group_fail(group_id=job.group_id, reason=f"rank {job.group_rank} on agent {job.agent_name} failed: {error}")
    return job


def group_fail(*, group_id: int, reason: str, now: datetime | None = None) -> bool:
    """Fail a forming or started group and every member still active, with the reason (a rank died, a member did
    not arrive by the deadline, a lease lapsed). False when the group had already finished."""
    now = now or timezone.now()
    with transaction.atomic():
        if not JobGroup.objects.filter(pk=group_id, status__in=[GroupStatus.FORMING, GroupStatus.STARTED]).update(
            status=GroupStatus.FAILED, finished_at=now, last_error=reason[:10_000]
        ):
            return False
        for job in Job.objects.filter(group_id=group_id, status__in=JobStatus.active()):
            if Job.objects.filter(pk=job.pk, status__in=JobStatus.active()).update(
                status=JobStatus.FAILED,
                finished_at=now,
                lease_expires_at=None,
                last_error=f"the group failed: {reason}"[:10_000],
            ):
                job.refresh_from_db()
                job_log_state(job, "registry", group=group_id, error=job.last_error)
        audit_append(
            kind=AuditKind.JOB_STATE,
            actor="registry",
            subject=f"group:{group_id}",
            payload={"group": group_id, "status": GroupStatus.FAILED, "error": reason[:2000]},
        )
    return True


def job_complete(*, job: Job, run_id: int | None = None, digest: str | None = None) -> Job:
    """Confirm the job's result. The run was linked when it was stored; this checks the agent's view of it."""
    job.refresh_from_db()
    if job.status != JobStatus.SUBMITTED or job.run is None:
        raise JobConflict(f"job {job.pk} is {job.status} and has no run", code="job-has-no-run")
    if (run_id is not None and run_id != job.run_id) or (digest is not None and digest != job.run.digest):
        raise JobConflict(
            f"job {job.pk} holds run {job.run_id} ({job.run.digest}), not that one", code="job-has-another-run"
        )
    return job


def job_submission_create(
    *, checked: protocol.Checked, submitted_by: User, token: ApiToken | None
) -> tuple[Submission, bool]:
    """Store an agent's run for its job and link the two, in one transaction with the job row locked.

    Only the job's own agent may submit for it. An identical document (same digest) returns the job's run;
    any other document for a job that has a run, or is cancelled/failed/timed out, is refused with 409 and
    nothing is stored. So a job never has two runs, however often its message is delivered or re-run.
    """
    provenance = checked.document["provenance"]
    agent = _submitting_agent(provenance, token)
    ref = str(provenance.get("job") or "")
    with transaction.atomic():
        job = _locked_job(ref, agent)
        existing = Submission.objects.filter(digest=checked.digest).first()
        if job.run_id is not None:
            return _same_run(job, existing), False
        if job.status not in (JobStatus.CLAIMED, JobStatus.RUNNING):
            raise JobConflict(f"job {job.pk} is {job.status}: it takes no run", code="job-finished")
        _check_group_may_submit(job)
        check_run_matches_job(job, checked.document)
        run = existing or run_store(checked=checked, submitted_by=submitted_by, token=token, trust=Trust.VOUCHED)
        _link_run(job, run, agent)
        if job.group_id is not None:
            _group_submitted(job, run)
        job_run_stored(run=run)
        return run, existing is None


def _check_group_may_submit(job: Job) -> None:
    """A group's run is submitted once, by rank 0 of a started group (every rank's figures are in it)."""
    if job.group_id is None:
        return
    if job.group_rank != 0:
        raise JobConflict(
            f"job {job.pk} is rank {job.group_rank} of group {job.group_id}: rank 0 submits the group's one run",
            code="group-rank-does-not-submit",
        )
    status = JobGroup.objects.filter(pk=job.group_id).values_list("status", flat=True).first()
    if status != GroupStatus.STARTED:
        raise JobConflict(f"group {job.group_id} is {status}: it takes no run", code="group-not-started")


def _group_submitted(job: Job, run: Submission) -> None:
    """The group holds its one run; every other member is done with it."""
    now = timezone.now()
    JobGroup.objects.filter(jobs=job, status=GroupStatus.STARTED).update(
        status=GroupStatus.SUBMITTED, run=run, finished_at=now
    )
    Job.objects.filter(group_id=job.group_id, status__in=JobStatus.active()).exclude(pk=job.pk).update(
        status=JobStatus.SUBMITTED, finished_at=now, lease_expires_at=None
    )


def _submitting_agent(provenance: dict[str, Any], token: ApiToken | None) -> Agent:
    """The token's agent, when the provenance names it; 403 otherwise."""
    agent: Agent | None = policy.token_agent(token)
    if agent is None or provenance.get("agent") != agent.name:
        raise RegistryError(
            "provenance.job and provenance.agent are set by the job's own enrolled agent only",
            status=403,
            code="provenance-not-yours",
            errors=[
                {
                    "pointer": "/provenance/agent",
                    "code": "provenance-not-yours",
                    "message": "submit with the agent's own token, naming that agent",
                }
            ],
        )
    return agent


def _locked_job(ref: str, agent: Agent) -> Job:
    job_id = int(ref) if ref.isascii() and ref.isdigit() else None
    # pk=None (a ref that is not a number) is a valid lookup matching no row; the stubs want an int there.
    job = Job.objects.select_for_update().filter(pk=job_id, agent=agent).first()  # type: ignore[misc]
    if job is None:
        raise NotFound(f"no job {ref} for agent {agent.name}")
    return job


def _same_run(job: Job, existing: Submission | None) -> Submission:
    """A job that has a run takes only that run again (the same document); 409 for any other."""
    if existing is not None and existing.pk == job.run_id:
        return existing
    raise JobConflict(f"job {job.pk} already has run {job.run_id}; a job has exactly one run", code="job-has-run")


def _link_run(job: Job, run: Submission, agent: Agent) -> None:
    if not Job.objects.filter(pk=job.pk, run__isnull=True).update(
        run=run, status=JobStatus.SUBMITTED, finished_at=timezone.now(), lease_expires_at=None, last_error=""
    ):
        raise JobConflict(f"job {job.pk} took another run meanwhile", code="job-has-run")
    job.refresh_from_db()
    job_log_state(job, f"agent:{agent.name}", run=run.pk, digest=run.digest)


def check_run_matches_job(job: Job, document: dict[str, Any]) -> None:
    """Refuse a run that is not the job it was given (422, every differing field by pointer).

    This is what makes a job's run "vouched": the registry chose the configuration, not the agent.
    """
    from runners.api import expected_fields, job_spec  # every runner's spec (~0.1 s): only for a job's run

    expected = expected_fields(job_spec(job.spec))
    errors = [
        {
            "pointer": pointer,
            "code": "run-does-not-match-job",
            "message": f"job {job.pk} asked for {want!r} here, the run says {got!r}",
        }
        for pointer, want in expected.items()
        if (got := value_at(document, pointer)) != want
    ]
    if errors:
        raise RegistryError(
            f"this run is not the configuration job {job.pk} asked for "
            f"({len(errors)} field{'s' if len(errors) > 1 else ''} differ)",
            status=422,
            code="run-does-not-match-job",
            errors=errors,
        )


# --- people's side ------------------------------------------------------------------------------------------


@transaction.atomic
def job_cancel(*, job: Job, actor: str, reason: str = "cancelled") -> Job:
    """Cancel a queued, claimed or running job. A worker still running it gets 409 on its next call."""
    now = timezone.now()
    if not Job.objects.filter(pk=job.pk, status__in=JobStatus.active()).update(
        status=JobStatus.CANCELLED, finished_at=now, last_error=reason, lease_expires_at=None
    ):
        job.refresh_from_db()
        raise JobConflict(f"job {job.pk} is already {job.status}", code="job-finished")
    job.refresh_from_db()
    job_log_state(job, actor, reason=reason)
    return job


def jobs_cancel_for_agent(*, agent: Agent, actor: str, reason: str) -> int:
    cancelled = 0
    for job in Job.objects.filter(agent=agent, status__in=JobStatus.active()):
        try:
            job_cancel(job=job, actor=actor, reason=reason)
            cancelled += 1
        except JobConflict:
            pass  # finished meanwhile
    return cancelled


def jobs_time_out(*, now: datetime | None = None) -> int:
    """Mark TIMED_OUT the claimed or running jobs past their deadline (hard limit + grace). Returns how many."""
    now = now or timezone.now()
    late = Job.objects.filter(status__in=[JobStatus.CLAIMED, JobStatus.RUNNING], deadline_at__lt=now)
    count = 0
    for job_id in late.values_list("pk", flat=True):
        with transaction.atomic():
            if Job.objects.filter(pk=job_id, status__in=[JobStatus.CLAIMED, JobStatus.RUNNING]).update(
                status=JobStatus.TIMED_OUT,
                finished_at=now,
                lease_expires_at=None,
                last_error="no result before the deadline (hard time limit + grace)",
            ):
                job = Job.objects.get(pk=job_id)
                job_log_state(job, "registry", error=job.last_error)
                count += 1
                if job.group_id is not None:  # a rank past its deadline is a rank lost: its group fails with it
                    reason = f"rank {job.group_rank} on agent {job.agent_name} timed out"
                    group_fail(group_id=job.group_id, reason=reason, now=now)
    return count
