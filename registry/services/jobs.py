"""Plans and jobs: expand a plan into jobs, dispatch them after commit, and move each job through its lifecycle.

Exactly one run per job (docs/agents.md, "Exactly once"):
  * claiming is a conditional UPDATE: QUEUED -> CLAIMED, or a take-over of a CLAIMED/RUNNING job by the same
    agent only when the holder is the same worker process or its lease has lapsed (the holder died);
  * the run is stored and linked to its job in ONE transaction, with the job row locked
    (`job_submission_create`, reached from the one path in, `submission_create`): a job that already has a run
    refuses any other document (409) and returns its own run for an identical one (idempotent by digest);
  * a job in a final state refuses claims and runs, so a duplicate or late delivery does nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from datetime import datetime, timedelta
from itertools import product
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

import protocol
from protocol.errors import value_at
from registry import policy
from registry.choices import AuditKind, JobStatus, Trust
from registry.exceptions import NotFound, RegistryError
from registry.models import Agent, ApiToken, Job, Plan, Submission
from registry.services.audit import audit_append
from runners.agent import jobs as agent_jobs
from runners.api import RunSpec
from runners.spec import expected_fields

log = logging.getLogger(__name__)

AGENT_TASK = "benchreg.run_job"  # defined in runners.agent.worker, executed by the agent's worker
MAX_JOB_ATTEMPTS = 3  # claims before a job that keeps killing its worker is failed
DEADLINE_GRACE = timedelta(seconds=60)
LEASE_BOUNDS = (5, 3600)
PLAN_FIELDS = {"phase", "workload", "precision", "batch_size", "scenario", "repetitions", "submitter"}
OPTION_FIELDS = {f.name for f in dataclasses.fields(RunSpec)} - PLAN_FIELDS


class JobConflict(RegistryError):
    """The job is not in a state that allows this (final, or held by another worker)."""

    status = 409
    code = "job-conflict"


def _log_state(job: Job, actor: str, **payload: Any) -> None:
    audit_append(
        kind=AuditKind.JOB_STATE,
        actor=actor,
        subject=f"job:{job.pk}",
        payload={"job": job.pk, "agent": job.agent_name, "status": job.status, **payload},
    )


# --- plans -------------------------------------------------------------------------------------------------


def _job_spec(plan: Plan, agent: Agent, precision: str, batch_size: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "phase": plan.runner,
        "workload": plan.workload,
        "precision": precision,
        "batch_size": batch_size,
        "scenario": plan.scenario,
        "repetitions": plan.repetitions,
        "submitter": agent.name,
        **plan.options,
    }
    try:
        RunSpec(**spec)
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"the plan cannot run: {exc}", code="invalid-plan") from None
    return {key: value for key, value in spec.items() if value is not None}


def _check_distinct(lists: dict[str, list[Any]]) -> None:
    """A value repeated in a plan's agents, precisions or batch sizes would make identical jobs: refused (400),
    every repeat named by its pointer."""
    errors = []
    for name, values in lists.items():
        first: dict[Any, int] = {}
        for index, value in enumerate(values):
            if value in first:
                errors.append(
                    {
                        "pointer": f"/{name}/{index}",
                        "code": "duplicate",
                        "message": f"the same as /{name}/{first[value]}: it would make identical jobs",
                    }
                )
            first.setdefault(value, index)
    if errors:
        raise RegistryError(
            "a plan lists each agent, precision and batch size once (a repeat makes identical jobs)",
            code="invalid-plan",
            errors=errors,
        )


@transaction.atomic
def plan_create(
    *,
    created_by: AbstractBaseUser,
    agents: list[Agent],
    runner: str,
    workload: str,
    precisions: list[str],
    batch_sizes: list[int | None],
    scenario: str | None = None,
    repetitions: int | None = None,
    options: dict[str, Any] | None = None,
    soft_time_limit: int = 1800,
    time_limit: int | None = None,
    name: str = "",
) -> Plan:
    """Store a plan and one QUEUED job per agent x precision x batch size; dispatch each after commit.

    Each agent, precision and batch size is listed once, and the jobs are at most BENCHREG_MAX_JOBS_PER_PLAN
    (400 with the pointer otherwise)."""
    unknown = sorted(set(options or {}) - OPTION_FIELDS)
    if unknown:
        raise RegistryError(f"unknown plan options {unknown}; choose from {sorted(OPTION_FIELDS)}", code="invalid-plan")
    hard = time_limit or soft_time_limit + 300
    if not agents or hard <= soft_time_limit:
        raise RegistryError("a plan needs at least one agent and time_limit > soft_time_limit", code="invalid-plan")
    _check_distinct({"agents": [a.pk for a in agents], "precisions": precisions, "batch_sizes": batch_sizes})
    count = len(agents) * len(precisions) * len(batch_sizes or [None])
    if count > settings.BENCHREG_MAX_JOBS_PER_PLAN:
        raise RegistryError(
            f"this plan would queue {count} jobs (agents x precisions x batch sizes); at most "
            f"{settings.BENCHREG_MAX_JOBS_PER_PLAN} (BENCHREG_MAX_JOBS_PER_PLAN)",
            code="invalid-plan",
            errors=[
                {
                    "pointer": "/agents",
                    "code": "too-many-jobs",
                    "message": f"{count} jobs, at most {settings.BENCHREG_MAX_JOBS_PER_PLAN}",
                }
            ],
        )
    plan = Plan.objects.create(
        name=name,
        runner=runner,
        workload=workload,
        precisions=precisions,
        batch_sizes=batch_sizes or [None],
        scenario=scenario,
        repetitions=repetitions,
        options=options or {},
        soft_time_limit=soft_time_limit,
        time_limit=hard,
        created_by=created_by,
        created_by_name=created_by.get_username(),
    )
    for agent, precision, batch_size in product(agents, precisions, plan.batch_sizes):
        job = Job.objects.create(
            plan=plan,
            agent=agent,
            agent_name=agent.name,
            spec=_job_spec(plan, agent, precision, batch_size),
            soft_time_limit=soft_time_limit,
            time_limit=hard,
        )
        _log_state(job, created_by.get_username(), plan=plan.pk, spec=job.spec)
        transaction.on_commit(lambda job_id=job.pk: job_dispatch(job_id=job_id), robust=True)
    return plan


def job_dispatch(*, job_id: int) -> None:
    """Send one queued job to its agent (called after the commit that created it).

    Enrolled agents get `benchreg.run_job` on their own queue. The embedded agent's jobs run in the registry's
    own task, eagerly in-process when no broker is configured. Without a broker a remote agent cannot be
    reached: its job stays queued (and is logged) until it is dispatched again with a broker.
    """
    from registry.celery import app
    from registry.tasks.jobs import job_run_embedded

    job = Job.objects.select_related("agent").filter(pk=job_id, status=JobStatus.QUEUED).first()
    if job is None:
        return
    if job.agent.embedded:
        job_run_embedded.delay(job.pk)
    elif app.conf.task_always_eager or settings.BENCHREG_EMBEDDED_WORKER:  # no broker an agent could reach
        log.warning("job %s for agent %s stays queued: no broker is configured", job.pk, job.agent_name)
    else:
        app.send_task(
            AGENT_TASK,
            args=[job.pk],
            queue=job.agent.queue,
            soft_time_limit=job.soft_time_limit,
            time_limit=job.time_limit,
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
        won = Job.objects.filter(
            Q(status=JobStatus.QUEUED) | takeover, pk=job.pk, attempts__lt=MAX_JOB_ATTEMPTS
        ).update(
            status=JobStatus.CLAIMED,
            claimant=claimant[:200],
            claimed_at=now,
            lease_expires_at=now + _lease(lease_seconds),
            started_at=None,
            deadline_at=now + timedelta(seconds=job.time_limit) + DEADLINE_GRACE,
            attempts=F("attempts") + 1,
        )
        job.refresh_from_db()
        if won:
            _log_state(job, f"agent:{job.agent_name}", claimant=job.claimant, attempt=job.attempts)
            return job
        if Job.objects.filter(takeover, pk=job.pk, attempts__gte=MAX_JOB_ATTEMPTS).update(
            status=JobStatus.FAILED,
            finished_at=now,
            lease_expires_at=None,
            last_error=f"gave up after {job.attempts} attempts: the worker was lost each time",
        ):
            job.refresh_from_db()
            _log_state(job, "registry", error=job.last_error)
    raise _refusal(job, now)  # after the block: the give-up above is committed, not rolled back


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
    _log_state(job, f"agent:{job.agent_name}", claimant=claimant)
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
    _log_state(job, f"agent:{job.agent_name}", error=job.last_error)
    return job


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
    *, checked: protocol.Checked, submitted_by: AbstractBaseUser, token: ApiToken | None
) -> tuple[Submission, bool]:
    """Store an agent's run for its job and link the two, in one transaction with the job row locked.

    Only the job's own agent may submit for it. An identical document (same digest) returns the job's run;
    any other document for a job that has a run, or is cancelled/failed/timed out, is refused with 409 and
    nothing is stored. So a job never has two runs, however often its message is delivered or re-run.
    """
    from registry.services.submissions import _store  # the same store as every run; submissions calls us

    provenance = checked.document["provenance"]
    agent = policy.token_agent(token)
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
    ref = str(provenance.get("job") or "")
    with transaction.atomic():
        job_id = int(ref) if ref.isascii() and ref.isdigit() else None
        job = Job.objects.select_for_update().filter(pk=job_id, agent=agent).first()
        if job is None:
            raise NotFound(f"no job {ref} for agent {agent.name}")
        existing = Submission.objects.filter(digest=checked.digest).first()
        if job.run_id is not None:
            if existing is not None and existing.pk == job.run_id:
                return existing, False
            raise JobConflict(
                f"job {job.pk} already has run {job.run_id}; a job has exactly one run", code="job-has-run"
            )
        if job.status not in (JobStatus.CLAIMED, JobStatus.RUNNING):
            raise JobConflict(f"job {job.pk} is {job.status}: it takes no run", code="job-finished")
        _check_run_matches_job(job, checked.document)
        run = existing or _store(checked, submitted_by, token, trust=Trust.VOUCHED)
        if not Job.objects.filter(pk=job.pk, run__isnull=True).update(
            run=run, status=JobStatus.SUBMITTED, finished_at=timezone.now(), lease_expires_at=None, last_error=""
        ):
            raise JobConflict(f"job {job.pk} took another run meanwhile", code="job-has-run")
        job.refresh_from_db()
        _log_state(job, f"agent:{agent.name}", run=run.pk, digest=run.digest)
        # series (issue 19): a scheduled job's run joins its series once it is committed.
        transaction.on_commit(lambda run_id=run.pk: _series_record_run(run_id), robust=True)
        return run, existing is None


def _series_record_run(run_id: int) -> None:
    from registry.services.series import series_record_run  # series depend on jobs, not the reverse

    series_record_run(run_id=run_id)


def _check_run_matches_job(job: Job, document: dict[str, Any]) -> None:
    """Refuse a run that is not the job it was given (422, every differing field by pointer).

    This is what makes a job's run "vouched": the registry chose the configuration, not the agent.
    """
    expected = expected_fields(RunSpec(**job.spec))
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
    _log_state(job, actor, reason=reason)
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
                _log_state(job, "registry", error=job.last_error)
                count += 1
    return count


# --- the embedded agent: the same job code, through the services instead of HTTP ---------------------------


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

    def fail(self, job_id: int, *, claimant: str, error: str, timed_out: bool = False) -> None:
        self._call(job_fail, job_id, claimant=claimant, error=error, timed_out=timed_out)

    def complete(self, job_id: int, *, run_id: int, digest: str) -> None:
        self._call(job_complete, job_id, run_id=run_id, digest=digest)

    def submit(self, document: dict[str, Any]) -> agent_jobs.Submitted:
        from registry.services.submissions import submission_create

        try:
            run, created = submission_create(document=document, submitted_by=self.agent.user, token=self.agent.token)
        except JobConflict as exc:
            return agent_jobs.Submitted("conflict", message=exc.message)
        except RegistryError as exc:
            return agent_jobs.Submitted("rejected", message=exc.message, errors=exc.errors)
        return agent_jobs.Submitted("stored" if created else "known", run_id=run.pk, digest=run.digest)


def embedded_claimant() -> str:
    return f"registry@{socket.gethostname()}:{os.getpid()}"
