"""Firing schedules (Celery beat's `schedules_tick`, docs/series.md).

`schedules_tick` fires each due time exactly once: the ScheduleFire row, unique on (schedule, due_at, variant), is
inserted in the same transaction as the plan and its jobs, so a second beat process (or a retried tick) meets the
unique index and does nothing. Agents that are offline or revoked at the due time are recorded as missed, as is a
due time the scheduler did not reach within BENCHREG_SCHEDULE_GRACE_S (older due times of a long outage: only the
latest fires). Each tick also lets the runs of scheduled jobs that have not joined their series yet join it
(`series_catch_up`), through the same reaction as a run that was just stored.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from registry.choices import AuditKind, JobStatus
from registry.exceptions import RegistryError
from registry.models import Agent, Job, Plan, Schedule, ScheduleFire
from registry.services.audit import audit_append
from registry.services.plans import plan_create
from registry.services.reactions import run_joins_series
from registry.services.schedules import cron_due_times, stored_variants

log = logging.getLogger(__name__)


def _live(schedule: Schedule) -> bool:
    """Lock the schedule's row and say whether it may still fire. schedule_update and schedule_delete take the
    same lock, so a pause or delete that commits mid-tick stops every firing after it."""
    return Schedule.objects.select_for_update().filter(pk=schedule.pk, paused=False, deleted_at__isnull=True).exists()


def _missed_reason(agent: Agent, *, late: bool) -> str | None:
    if late:
        return "the scheduler did not run at the due time"
    if agent.revoked_at is not None:
        return "the agent is revoked"
    if not agent.is_online:
        return "the agent was offline at the due time"
    return None


def _sort_agents(agents: list[Agent], *, late: bool) -> tuple[list[dict[str, str]], list[Agent]]:
    """The agents that miss this due time (with why) and those ready to run it."""
    missed: list[dict[str, str]] = []
    ready: list[Agent] = []
    for agent in agents:
        reason = _missed_reason(agent, late=late)
        if reason is None:
            ready.append(agent)
        else:
            missed.append({"agent": agent.name, "reason": reason})
    return missed, ready


def _fire_plan(schedule: Schedule, due: datetime, label: str, extra: dict[str, Any], ready: list[Agent]) -> Plan:
    plan = schedule.plan
    return plan_create(
        created_by=schedule.created_by,
        agents=ready,
        runner=plan.runner,
        workload=plan.workload,
        # a plan stored before duplicates were refused still makes each distinct job once
        precisions=list(dict.fromkeys(plan.precisions)),
        batch_sizes=list(dict.fromkeys(plan.batch_sizes)),
        scenario=plan.scenario,
        repetitions=plan.repetitions,
        options={**plan.options, **schedule.options, **extra},
        soft_time_limit=plan.soft_time_limit,
        time_limit=plan.time_limit,
        name=f"{schedule.name} @ {due:%Y-%m-%d %H:%M}Z{' ' + label if label else ''}",
    )


def _audit_fire(schedule: Schedule, due: datetime, fire: ScheduleFire, agents: list[str]) -> None:
    audit_append(
        kind=AuditKind.SCHEDULE_FIRED,
        actor="registry",
        subject=f"schedule:{schedule.pk}",
        payload={
            "due_at": due.isoformat(),
            "variant": fire.variant,
            "status": fire.status,
            "plan": fire.plan_id,
            "agents": agents,
            "missed": fire.missed,
        },
    )


def _fire_queued(
    schedule: Schedule,
    due: datetime,
    label: str,
    extra: dict[str, Any],
    missed: list[dict[str, str]],
    ready: list[Agent],
) -> ScheduleFire | None:
    """Record the firing and queue the plan for the ready agents, in one transaction."""
    status = "missed" if not ready else "partial" if missed else "fired"
    with transaction.atomic():
        if not _live(schedule):
            return None
        fire = ScheduleFire.objects.create(schedule=schedule, due_at=due, variant=label, status=status, missed=missed)
        if ready:
            fire.plan = _fire_plan(schedule, due, label, extra, ready)
            fire.save(update_fields=["plan"])
        _audit_fire(schedule, due, fire, [a.name for a in ready])
    return fire


def _fire_unqueued(
    schedule: Schedule, due: datetime, label: str, agents: list[Agent], reason: str
) -> ScheduleFire | None:
    """Record the firing as missed by every agent, for `reason`."""
    with transaction.atomic():
        if not _live(schedule):
            return None
        fire = ScheduleFire.objects.create(
            schedule=schedule,
            due_at=due,
            variant=label,
            status="missed",
            missed=[{"agent": a.name, "reason": reason} for a in agents],
        )
        _audit_fire(schedule, due, fire, [])
    return fire


def _fire(schedule: Schedule, due: datetime, label: str, extra: dict[str, Any], *, late: bool) -> ScheduleFire | None:
    """Fire one due time of one variant, exactly once. None when it was already fired (or missed) by another."""
    agents = list(schedule.agents.all())
    missed, ready = _sort_agents(agents, late=late)
    try:
        return _fire_queued(schedule, due, label, extra, missed, ready)
    except IntegrityError:
        return None  # this (schedule, due time, variant) is another beat's or an earlier tick's
    except RegistryError as exc:  # the plan no longer runs (e.g. an agent's inventory changed): say so, go on
        reason = f"the plan could not be queued: {exc.message}"
        try:
            return _fire_unqueued(schedule, due, label, agents, reason)
        except IntegrityError:
            return None


@dataclasses.dataclass
class _Tick:
    budget: int
    fired: int = 0
    missed: int = 0


def _fire_variants(
    schedule: Schedule, due: datetime, variants: list[tuple[str, dict[str, Any]]], tick: _Tick, *, late: bool
) -> bool:
    """Fire the variants of one due time not fired yet. False when the budget ran out before all were handled."""
    done = set(ScheduleFire.objects.filter(schedule=schedule, due_at=due).values_list("variant", flat=True))
    for label, extra in variants:
        if label in done:
            continue
        if tick.budget <= 0:
            return False
        tick.budget -= 1
        fire = _fire(schedule, due, label, extra, late=late)
        if fire is not None:
            tick.fired += fire.status != "missed"
            tick.missed += fire.status == "missed"
        elif not Schedule.objects.filter(pk=schedule.pk, paused=False, deleted_at__isnull=True).exists():
            break  # paused or deleted meanwhile: not one more firing
    return True


def _tick_schedule(schedule: Schedule, due_times: list[datetime], now: datetime, tick: _Tick) -> None:
    """Fire one schedule's due times, latest first; last_due_at moves only when every one was handled."""
    grace = timedelta(seconds=settings.BENCHREG_SCHEDULE_GRACE_S)
    variants = stored_variants(schedule)
    whole = all(  # stops at the first due time the budget left unfinished
        _fire_variants(schedule, due, variants, tick, late=due != due_times[-1] or now - due > grace)
        for due in [due_times[-1], *due_times[:-1]]
    )
    if whole:
        Schedule.objects.filter(pk=schedule.pk, last_due_at__lt=due_times[-1]).update(last_due_at=due_times[-1])


def schedules_tick(*, now: datetime | None = None) -> dict[str, int]:
    """Celery beat: fire every active schedule's due times up to `now`, each exactly once.

    Of the due times since the last tick, the latest is fired when it is within the grace period; older ones
    (the scheduler was down) are recorded as missed. The latest due time of each schedule is handled before its
    older ones, and one tick handles at most BENCHREG_SCHEDULE_FIRES_PER_TICK variant firings: the rest wait
    for the next tick (a schedule's `last_due_at` moves only past due times it handled whole). Each firing
    first locks the schedule and checks it is neither paused nor deleted. Also lets runs of scheduled jobs that
    have not joined their series yet join it. Returns counts.
    """
    now = now or timezone.now()
    tick = _Tick(budget=settings.BENCHREG_SCHEDULE_FIRES_PER_TICK)
    for schedule in Schedule.objects.filter(paused=False, deleted_at__isnull=True).select_related("plan"):
        due_times = cron_due_times(schedule.cron, schedule.last_due_at or schedule.created_at, now)
        if not due_times:
            continue
        _tick_schedule(schedule, due_times, now, tick)
        if tick.budget <= 0:
            log.warning(
                "schedules tick: %d variant firings handled; the rest wait for the next tick",
                settings.BENCHREG_SCHEDULE_FIRES_PER_TICK,
            )
            break
    joined = series_catch_up()
    return {"fired": tick.fired, "missed": tick.missed, "joined": joined}


def series_catch_up(limit: int = 200) -> int:
    """Runs of scheduled jobs that have not joined their series (the registry stopped before it got to them)."""
    pending = (
        Job.objects.filter(
            status=JobStatus.SUBMITTED,
            run__isnull=False,
            plan__schedule_fire__isnull=False,
            run__series_member__isnull=True,
        )
        .order_by("run_id")
        .values_list("run_id", flat=True)
    )
    count = 0
    for run_id in pending[:limit]:
        count += run_joins_series(run_id=run_id) is not None
    return count
