"""Reading agents, plans and jobs. Agent-facing getters return 404 for another agent's jobs."""

from __future__ import annotations

from django.db.models import QuerySet

from registry.exceptions import NotFound
from registry.models import Agent, EnrolmentToken, Job, Plan


def agent_list() -> QuerySet[Agent]:
    return Agent.objects.defer("inventory")


def agent_get(*, agent_id: int) -> Agent:
    agent = Agent.objects.select_related("token").filter(pk=agent_id).first()
    if agent is None:
        raise NotFound(f"no agent {agent_id}")
    return agent


def agents_by_reference(references: list[str]) -> list[Agent]:
    """Live agents named by id or name, in the order given; NotFound names every unknown reference."""
    found: list[Agent] = []
    missing: list[str] = []
    for ref in references:
        query = Agent.objects.filter(revoked_at__isnull=True)
        numeric = str(ref).isascii() and str(ref).isdigit()  # "²".isdigit() is True, and int("²") fails
        agent = (query.filter(pk=int(ref)) if numeric else query.filter(name=ref)).first()
        if agent is None:
            missing.append(str(ref))
        elif agent not in found:
            found.append(agent)
    if missing:
        raise NotFound(f"no enrolled agent {', '.join(missing)}")
    return found


def agent_by_reference(reference: str) -> Agent | None:
    """The live agent named by id or name, or None."""
    query = Agent.objects.filter(revoked_at__isnull=True)
    numeric = reference.isascii() and reference.isdigit()
    return (query.filter(pk=int(reference)) if numeric else query.filter(name=reference)).first()


def enrolment_token_list() -> QuerySet[EnrolmentToken]:
    return EnrolmentToken.objects.select_related("agent")


def plan_get(*, plan_id: int) -> Plan:
    plan = Plan.objects.filter(pk=plan_id).first()
    if plan is None:
        raise NotFound(f"no plan {plan_id}")
    return plan


def job_list(*, status: str | None = None, agent: str | None = None, plan: int | None = None) -> QuerySet[Job]:
    """Jobs, newest first, filtered by status, agent name and plan."""
    jobs = Job.objects.select_related("run")
    if status:
        jobs = jobs.filter(status=status)
    if agent:
        jobs = jobs.filter(agent_name=agent)
    if plan:
        jobs = jobs.filter(plan_id=plan)
    return jobs


def job_get(*, job_id: int) -> Job:
    job = Job.objects.select_related("run").filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"no job {job_id}")
    return job
