"""Plans: a plan expands into one QUEUED job per agent x precision x batch size (a serving plan: per agent x load
level), each sent to its agent after the commit that stored it (docs/agents.md). What happens to a job after that
is registry.services.jobs."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable
from itertools import product
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from registry import dispatch
from registry.choices import JobStatus
from registry.exceptions import RegistryError
from registry.models import Agent, Job, Plan
from registry.services.jobs import job_log_state
from runners.api import RunSpec
from runners.serving import spec as serving

log = logging.getLogger(__name__)

AGENT_TASK = "benchreg.run_job"  # defined in runners.agent.worker, executed by the agent's worker
GROUP_TASK = "benchreg.run_group_job"  # the same, for one rank of a job group (runners/agent/groups.py)
EMBEDDED_TASK = "registry.tasks.jobs.job_run_embedded"  # the registry's own agent, run by the registry's worker
PLAN_FIELDS = {"phase", "workload", "precision", "batch_size", "scenario", "repetitions", "submitter"}
OPTION_FIELDS = {f.name for f in dataclasses.fields(RunSpec)} - PLAN_FIELDS
JOB_SET_FIELDS = ("submitter", "sweep_id", "level")  # of a serving job: the registry sets them, per agent and level


def job_spec(plan: Plan, agent: Agent, precision: str, batch_size: int | None) -> dict[str, Any]:
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


def check_distinct(lists: dict[str, list[Any]]) -> None:
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
    created_by: User,
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
    hard = _check_plan(agents, precisions, batch_sizes, options, soft_time_limit, time_limit)
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
    _queue_jobs(plan, agents, precisions, created_by)
    return plan


def _check_plan(
    agents: list[Agent],
    precisions: list[str],
    batch_sizes: list[int | None],
    options: dict[str, Any] | None,
    soft_time_limit: int,
    time_limit: int | None,
) -> int:
    """Refuse a plan that cannot run (400); returns its hard time limit."""
    unknown = sorted(set(options or {}) - OPTION_FIELDS)
    if unknown:
        raise RegistryError(f"unknown plan options {unknown}; choose from {sorted(OPTION_FIELDS)}", code="invalid-plan")
    hard = _hard_limit(agents, soft_time_limit, time_limit)
    check_distinct({"agents": [a.pk for a in agents], "precisions": precisions, "batch_sizes": batch_sizes})
    _check_job_count(len(agents) * len(precisions) * len(batch_sizes or [None]))
    return hard


def _hard_limit(agents: list[Agent], soft_time_limit: int, time_limit: int | None) -> int:
    hard = time_limit or soft_time_limit + 300
    if not agents or hard <= soft_time_limit:
        raise RegistryError("a plan needs at least one agent and time_limit > soft_time_limit", code="invalid-plan")
    return hard


def _check_job_count(count: int) -> None:
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


def _queue_jobs(plan: Plan, agents: list[Agent], precisions: list[str], created_by: User) -> None:
    """One QUEUED job per agent x precision x batch size, each dispatched after the commit."""
    for agent, precision, batch_size in product(agents, precisions, plan.batch_sizes):
        _queue_job(plan, agent, job_spec(plan, agent, precision, batch_size), created_by)


def _queue_job(plan: Plan, agent: Agent, spec: dict[str, Any], created_by: User) -> None:
    job = Job.objects.create(
        plan=plan,
        agent=agent,
        agent_name=agent.name,
        spec=spec,
        soft_time_limit=plan.soft_time_limit,
        time_limit=plan.time_limit,
    )
    job_log_state(job, created_by.get_username(), plan=plan.pk, spec=job.spec)
    job_dispatch_after_commit(job)


def job_dispatch_after_commit(job: Job) -> None:
    """Send `job` to its agent once the transaction that stored it commits (nothing if it rolls back)."""
    # The default binds this job's id: to on_commit the lambda is a hook of no arguments.
    transaction.on_commit(cast(Callable[[], None], lambda job_id=job.pk: job_dispatch(job_id=job_id)), robust=True)


def job_dispatch(*, job_id: int) -> None:
    """Send one queued job to its agent (called after the commit that created it).

    Enrolled agents get `benchreg.run_job` on their own queue (a job group's member: `benchreg.run_group_job`,
    which arrives at the group's rendezvous instead of claiming alone). The embedded agent's jobs run in the registry's
    own task, eagerly in-process when no broker is configured. Without a broker a remote agent cannot be
    reached: its job stays queued (and is logged) until it is dispatched again with a broker.
    """
    job = Job.objects.select_related("agent").filter(pk=job_id, status=JobStatus.QUEUED).first()
    if job is None:
        return
    if job.agent.embedded:
        dispatch.send(EMBEDDED_TASK, job.pk)
    elif dispatch.runs_in_process() or settings.BENCHREG_EMBEDDED_WORKER:  # no broker an agent could reach
        log.warning("job %s for agent %s stays queued: no broker is configured", job.pk, job.agent_name)
    else:
        dispatch.send(
            AGENT_TASK if job.group_id is None else GROUP_TASK,
            job.pk,
            queue=job.agent.queue,
            soft_time_limit=job.soft_time_limit,
            time_limit=job.time_limit,
        )


RUNNER_FIELDS = ("workload", "precisions", "batch_sizes", "scenario", "repetitions", "options")


def check_runner_fields(runner: str, given: set[str]) -> None:
    """A serving plan states its job in `serving` and none of the bundled runners' fields; the others the
    reverse (400, each wrong or missing field by pointer)."""
    if runner == "serving":
        wrong = {name: "a serving plan states its job in `serving`" for name in RUNNER_FIELDS if name in given}
        missing = {} if "serving" in given else {"serving": "required for runner serving"}
    else:
        wrong = {"serving": "for runner serving only"} if "serving" in given else {}
        missing = {name: "required for runner inference and training" for name in ("workload", "precisions")}
        missing = {name: why for name, why in missing.items() if name not in given}
    problems = {**wrong, **missing}
    if problems:
        raise RegistryError(
            f"these fields do not fit runner {runner}: {', '.join(problems)}",
            code="invalid-plan",
            errors=[{"pointer": f"/{name}", "code": "runner-fields", "message": why} for name, why in problems.items()],
        )


# --- serving plans ------------------------------------------------------------------------------------------


@transaction.atomic
def serving_plan_create(
    *,
    created_by: User,
    agents: list[Agent],
    serving_job: dict[str, Any],
    soft_time_limit: int = 1800,
    time_limit: int | None = None,
    name: str = "",
) -> Plan:
    """Store a serving plan and, for each agent, one QUEUED job per load level; dispatch each after commit.

    One job per level keeps "one job, one run": each level is one document, held to its own job's fields (the
    endpoint, the level's load, the deployment). An agent's levels share one sweep id, made here, so the runs
    form one sweep in the registry whichever order they finish in. `serving_job` is the ServingSpec's JSON form
    (runners/serving/spec.py); it is checked whole before anything is stored (400, the field's pointer under
    /serving). An automatic sweep is refused: it chooses each level from the ones before it, so it cannot be
    split into jobs planned ahead."""
    spec = serving_spec_checked(serving_job)
    hard = _hard_limit(agents, soft_time_limit, time_limit)
    check_distinct({"agents": [a.pk for a in agents]})
    _check_job_count(len(agents) * len(spec.load.loads))
    plan = Plan.objects.create(
        name=name,
        runner="serving",
        workload=spec.model[:100],
        precisions=[],
        batch_sizes=[None],
        scenario="server",
        options=spec.fields(),
        soft_time_limit=soft_time_limit,
        time_limit=hard,
        created_by=created_by,
        created_by_name=created_by.get_username(),
    )
    for agent in agents:
        sweep_id = uuid.uuid4().hex
        for level in range(len(spec.load.loads)):
            job_spec = dataclasses.replace(spec, submitter=agent.name, sweep_id=sweep_id, level=level)
            _queue_job(plan, agent, {"phase": "serving", **job_spec.fields()}, created_by)
    return plan


def serving_spec_checked(fields: dict[str, Any]) -> serving.ServingSpec:
    """The plan's serving job as a ServingSpec, or 400 naming the field (pointer under /serving)."""
    for name in JOB_SET_FIELDS:
        if name in fields:
            raise _serving_refused([_error(f"/{name}", "set-by-registry", "the registry sets it for each job")])
    try:
        spec = serving.from_fields(fields)
    except serving.SpecInvalid as exc:
        raise _serving_refused([_error(exc.pointer, "invalid", exc.message)]) from None
    if spec.load.mode == "automatic":
        why = "an automatic sweep picks each level from those before: list its loads (request-rate, concurrency, trace)"
        raise _serving_refused([_error("/load/mode", "not-plannable", why)])
    problems = serving.unrunnable(spec)
    if problems:
        raise _serving_refused([_error("/deployment", "unrunnable", problem) for problem in problems])
    return spec


def _error(pointer: str, code: str, message: str) -> dict[str, str]:
    return {"pointer": f"/serving{pointer}", "code": code, "message": message}


def _serving_refused(errors: list[dict[str, str]]) -> RegistryError:
    return RegistryError(
        f"the serving job cannot run: {errors[0]['pointer']}: {errors[0]['message']}"
        + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
        code="invalid-plan",
        errors=errors,
    )
