"""Job groups: jobs on several agents that start together or not at all, one multi-node run (issue 43, item 4).

A group plan names its agents in rank order and its runner (`collectives` or `distributed-training`, GROUP_RUNNERS);
each gets one job of the group (`Job.group`, `Job.group_rank`). The
rules, each a conditional UPDATE on the group's locked row so that racing agents agree:

  * **arrive**: an agent claims its member job (`job_claim`: one worker, leased) and so arrives at the rendezvous;
    rank 0 arrives with the endpoint (host:port) its peers meet at (torch.distributed's c10d store);
  * **start together**: the arrival that completes the group, before `form_deadline_at`, starts it: FORMING ->
    STARTED and every member CLAIMED -> RUNNING in one transaction. Nobody runs before that; an agent waits by
    asking `group_view` until it says started (with the endpoint) or failed (with why);
  * **or not at all**: past the deadline a forming group fails, naming the agents that did not arrive, and every
    member with it (`groups_expire`, on each view and in the sweep);
  * **a rank that dies fails the group**: a member's `job_fail`, or a started member whose lease lapsed, fails the
    group and every other member with the reason (`jobs.group_fail`);
  * **one run**: rank 0 alone submits, and the group holds that run (`jobs.job_submission_create`).

Each member job is sent to its agent after the commit like any plan's job (`plans.job_dispatch`), which names the
agent's group task so that the agent runs its rank's loop (runners/agent/groups.py) instead of a single job.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from registry.choices import GroupStatus, JobStatus
from registry.exceptions import RegistryError
from registry.models import Agent, Job, JobGroup, Plan
from registry.selectors.agents import agent_by_reference
from registry.services.jobs import DEADLINE_GRACE, JobConflict, group_fail, job_claim, job_log_state
from registry.services.plans import job_dispatch_after_commit
from runners import collectives_spec
from runners.distributed import job as distributed_job

FORM_TIMEOUT_BOUNDS = (10, 3600)  # seconds the members have to arrive
MAX_GROUP_SIZE = 64
GroupSpec = collectives_spec.CollectiveJobSpec | distributed_job.DistributedJobSpec
# What a group may run: each runner's job spec, read from the plan's fields (ValueError naming what cannot run).
GROUP_RUNNERS: dict[str, Callable[[dict[str, Any]], GroupSpec]] = {
    collectives_spec.PHASE: collectives_spec.from_fields,
    distributed_job.PHASE: distributed_job.from_fields,
}
ENDPOINT = re.compile(r"^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]{2,39}\]):(\d{1,5})$")


def _invalid(pointer: str, message: str) -> RegistryError:
    """422: a well-formed group the registry cannot run (docs/api.md, "Status codes")."""
    return RegistryError(
        message, code="invalid-plan", status=422, errors=[{"pointer": pointer, "code": "invalid", "message": message}]
    )


@transaction.atomic
def group_plan_create(
    *,
    created_by: User,
    agents: list[Agent],
    spec: dict[str, Any],
    runner: str = collectives_spec.PHASE,
    form_timeout: int = 300,
    soft_time_limit: int = 1800,
    time_limit: int | None = None,
    name: str = "",
) -> JobGroup:
    """A plan whose agents (2 to MAX_GROUP_SIZE, in rank order, each once) form one group running `spec` with
    `runner` (a collectives or distributed-training job's fields; `nnodes` is the number of agents). 422 with the
    pointer for what cannot run."""
    fields, checked = _checked(agents, runner, spec, form_timeout)
    hard = time_limit or soft_time_limit + 60
    if hard <= soft_time_limit:
        raise _invalid("/time_limit", "time_limit must exceed soft_time_limit")
    workload, precision, batch = _labels(checked)
    plan = Plan.objects.create(
        name=name,
        runner=runner,
        workload=workload,
        precisions=[precision],
        batch_sizes=[batch],
        options=fields,
        soft_time_limit=soft_time_limit,
        time_limit=hard,
        created_by=created_by,
        created_by_name=created_by.get_username(),
    )
    group = JobGroup.objects.create(
        plan=plan,
        size=len(agents),
        rendezvous_id=f"benchreg-group-{uuid.uuid4().hex}",
        form_deadline_at=timezone.now() + timedelta(seconds=form_timeout),
    )
    _create_members(group, agents, fields, created_by)
    return group


def group_agents(references: list[str]) -> list[Agent]:
    """The live agents named (by id or name) in rank order, or 422 with a pointer for each reference that names no
    enrolled agent, names an agent already listed (a rank is one machine), or the registry's embedded agent (it
    runs single jobs in the registry's worker, not a rank's loop)."""
    agents: list[Agent] = []
    errors: list[dict[str, str]] = []
    for index, reference in enumerate(references):
        agent = agent_by_reference(reference)
        problem = (
            f"no enrolled agent {reference}"
            if agent is None
            else f"agent {agent.name} is already rank {agents.index(agent)}"
            if agent in agents
            else "the registry's embedded agent cannot host a rank of a group"
            if agent.embedded
            else None
        )
        if agent is not None:
            agents.append(agent)
        if problem:
            errors.append({"pointer": f"/agents/{index}", "code": "invalid", "message": problem})
    if errors:
        message = f"the group's agents: {errors[0]['message']}"
        raise RegistryError(message, code="invalid-plan", status=422, errors=errors)
    return agents


def _checked(
    agents: list[Agent], runner: str, spec: dict[str, Any], form_timeout: int
) -> tuple[dict[str, Any], GroupSpec]:
    """The members' job fields (the spec with `nnodes`), or 422 naming what cannot run."""
    if runner not in GROUP_RUNNERS:
        raise _invalid("/runner", f"a group runs {' or '.join(sorted(GROUP_RUNNERS))}, not {runner!r}")
    if not 2 <= len(agents) <= MAX_GROUP_SIZE or len({a.pk for a in agents}) != len(agents):
        raise _invalid("/agents", f"a group names 2 to {MAX_GROUP_SIZE} distinct agents")
    low, high = FORM_TIMEOUT_BOUNDS
    if not low <= form_timeout <= high:
        raise _invalid("/form_timeout", f"the members have {low} to {high} s to arrive")
    fields = {**spec, "nnodes": len(agents)}
    try:
        return fields, GROUP_RUNNERS[runner](fields)
    except (TypeError, ValueError) as exc:
        raise _invalid("/spec", f"the group cannot run: {exc}") from None


def _labels(spec: GroupSpec) -> tuple[str, str, int | None]:
    """The plan's workload, precision and batch, as the plans pages list them."""
    if isinstance(spec, collectives_spec.CollectiveJobSpec):
        return spec.collective, spec.dtype, None
    return spec.workload, spec.precision, spec.batch_size


def _create_members(group: JobGroup, agents: list[Agent], fields: dict[str, Any], created_by: User) -> None:
    """One job per agent, its rank its place in the plan's list."""
    plan = group.plan
    for rank, agent in enumerate(agents):
        job = Job.objects.create(
            plan=plan,
            agent=agent,
            agent_name=agent.name,
            spec={"phase": plan.runner, **fields, "submitter": agent.name},
            soft_time_limit=plan.soft_time_limit,
            time_limit=plan.time_limit,
            group=group,
            group_rank=rank,
        )
        job_log_state(job, created_by.get_username(), plan=plan.pk, group=group.pk, rank=rank)
        job_dispatch_after_commit(job)


def group_arrive(*, job: Job, claimant: str, lease_seconds: int, endpoint: str | None = None) -> dict[str, Any]:
    """The agent of `job` arrives at its group's rendezvous (claiming the job); the group starts if it was the last.
    Rank 0 must give the endpoint. 409 with the reason for a group that failed or a deadline that passed."""
    if job.group_id is None:
        raise JobConflict(f"job {job.pk} is not in a group", code="not-a-group-job")
    if job.group_rank == 0 and not (endpoint and ENDPOINT.match(endpoint)):
        raise RegistryError(
            "rank 0 arrives with the rendezvous endpoint its peers meet at, host:port",
            code="rendezvous-endpoint-missing",
            errors=[{"pointer": "/endpoint", "code": "required", "message": "host:port"}],
        )
    _refuse_if_over(job.group_id)
    claimed = job_claim(job=job, claimant=claimant, lease_seconds=lease_seconds)
    with transaction.atomic():
        group = JobGroup.objects.select_for_update().get(pk=job.group_id)
        if job.group_rank == 0:
            JobGroup.objects.filter(pk=group.pk, status=GroupStatus.FORMING).update(rendezvous_endpoint=endpoint)
        _start_if_complete(group)
    return group_view(job=claimed)


def _refuse_if_over(group_id: int) -> None:
    groups_expire(group_id=group_id)
    group = JobGroup.objects.get(pk=group_id)
    if group.status == GroupStatus.FAILED:
        raise JobConflict(f"group {group.pk} failed: {group.last_error}", code="group-failed")
    if group.status != GroupStatus.FORMING:
        raise JobConflict(f"group {group.pk} is {group.status}: it takes no new arrival", code="group-not-forming")


def _start_if_complete(group: JobGroup) -> bool:
    """One claim for the group: the arrival that completes it moves the group and every member, or nothing."""
    now = timezone.now()
    arrived = Job.objects.filter(group=group, status=JobStatus.CLAIMED).count()
    endpoint = JobGroup.objects.filter(pk=group.pk).values_list("rendezvous_endpoint", flat=True).get()
    if arrived < group.size or not endpoint or group.form_deadline_at < now:
        return False
    if not JobGroup.objects.filter(pk=group.pk, status=GroupStatus.FORMING).update(
        status=GroupStatus.STARTED, started_at=now
    ):
        return False
    for job in Job.objects.filter(group=group, status=JobStatus.CLAIMED):
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.RUNNING,
            started_at=now,
            deadline_at=now + timedelta(seconds=job.time_limit) + DEADLINE_GRACE,
        )
        job.refresh_from_db()
        job_log_state(job, "registry", group=group.pk, started="together", endpoint=endpoint)
    return True


def group_view(*, job: Job) -> dict[str, Any]:
    """What a member waiting at the rendezvous needs: the group's state, its rank, the world, its job's spec (what
    its node runs), and once started the endpoint and run id to meet at; once failed, why."""
    if job.group_id is None:
        raise JobConflict(f"job {job.pk} is not in a group", code="not-a-group-job")
    groups_expire(group_id=job.group_id)
    group = JobGroup.objects.get(pk=job.group_id)
    started = group.status in (GroupStatus.STARTED, GroupStatus.SUBMITTED)
    return {
        "group": group.pk,
        "status": group.status,
        "rank": job.group_rank,
        "nnodes": group.size,
        "rendezvous_id": group.rendezvous_id if started else None,
        "endpoint": group.rendezvous_endpoint if started else None,
        "form_deadline_at": group.form_deadline_at.isoformat(),
        "error": group.last_error,
        "run": group.run_id,
        "spec": job.spec,
    }


def groups_expire(*, now: datetime | None = None, group_id: int | None = None) -> int:
    """Fail the forming groups past their deadline (naming who did not arrive) and the started groups with a member
    whose lease lapsed (its agent stopped heartbeating: the rank is dead). Returns how many failed."""
    now = now or timezone.now()
    scope = JobGroup.objects.filter(pk=group_id) if group_id is not None else JobGroup.objects.all()
    failed = 0
    for group in scope.filter(status=GroupStatus.FORMING, form_deadline_at__lt=now):
        missing = group.jobs.exclude(status=JobStatus.CLAIMED).order_by("group_rank")
        names = ", ".join(f"rank {j.group_rank} ({j.agent_name})" for j in missing) or "rank 0's endpoint"
        reason = f"{names} did not arrive by {group.form_deadline_at.isoformat()}: nobody starts"
        failed += group_fail(group_id=group.pk, reason=reason, now=now)
    for group in scope.filter(status=GroupStatus.STARTED):
        dead = group.jobs.filter(status=JobStatus.RUNNING, lease_expires_at__lt=now).order_by("group_rank").first()
        if dead is not None:
            reason = f"rank {dead.group_rank} on agent {dead.agent_name} stopped heartbeating (its lease lapsed)"
            failed += group_fail(group_id=group.pk, reason=reason, now=now)
    return failed
