"""Schedules, series and alerts (docs/series.md).

* A schedule repeats a plan's configuration on a cron expression (celery's `crontab`, UTC) on its agents,
  once per software-matrix variant. `schedules_tick` (Celery beat) fires each due time exactly once: the
  ScheduleFire row, unique on (schedule, due_at, variant), is inserted in the same transaction as the plan
  and its jobs, so a second beat process (or a retried tick) meets the unique index and does nothing.
  Agents that are offline or revoked at the due time are recorded as missed, as is a due time the scheduler
  did not reach within BENCHREG_SCHEDULE_GRACE_S (older due times of a long outage: only the latest fires).
* A run of a scheduled job joins its series after the run's transaction commits (`series_record_run`; the tick
  catches up any the registry did not get to). The series row is locked while a run joins, so verdicts are
  formed in order.
* `protocol.changepoints` judges each new run against the series since its last change point; a change is an
  Alert, written with its audit entry in one transaction, then sent to the webhook and the `alert_raised` signal.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from celery.schedules import ParseException, crontab
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.dispatch import Signal
from django.utils import timezone

from protocol import changepoints
from protocol.statistics import headline_estimate
from registry.choices import AuditKind, JobStatus
from registry.exceptions import RegistryError
from registry.models import Agent, Alert, Job, Plan, Schedule, ScheduleFire, Series, SeriesRun, Submission
from registry.services.audit import audit_append
from registry.services.jobs import OPTION_FIELDS, _job_spec, plan_create
from registry.services.webhooks import webhook_enqueue

log = logging.getLogger(__name__)

# Sent after an alert's transaction commits: sender=Alert, alert=<Alert>. Decisions citing the series listen.
alert_raised = Signal()

CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
MAX_DUE_PER_TICK = 10_000  # due times examined per schedule and tick (a minutely schedule down for a week)
ALERT_EVENT = "series.alert"
# Where a run's "what else changed" is read from, in the order an alert lists it.
DIFFERENCE_SECTIONS = ("software", "system", "precision", "workload", "scenario", "conditions/power",
                       "conditions/clocks", "conditions/isolation", "provenance/runner")


# --- cron ---------------------------------------------------------------------------------------------------

def cron_parse(text: str) -> crontab:
    """Five-field cron ("minute hour day-of-month month day-of-week", UTC) as celery's crontab, or a 400."""
    parts = text.split()
    if len(parts) != 5:
        raise RegistryError("cron needs five fields: minute hour day-of-month month day-of-week (UTC), "
                            f"e.g. '0 2 * * *' for nightly at 02:00; got {len(parts)}", code="invalid-schedule",
                            errors=[{"pointer": "/cron", "code": "invalid-cron", "message": "five fields"}])
    try:
        return crontab(**dict(zip(CRON_FIELDS, parts, strict=True)))
    except (ValueError, TypeError, ParseException) as exc:  # ParseException: e.g. a negative number
        raise RegistryError(f"cron {text!r} is not valid: {exc}", code="invalid-schedule",
                            errors=[{"pointer": "/cron", "code": "invalid-cron", "message": str(exc)}]) from None


def cron_next(cron: str, after: datetime) -> datetime:
    """The first due time strictly after `after` (celery's crontab arithmetic, with `after` as its clock)."""
    schedule = cron_parse(cron)
    schedule.nowfun = lambda: after
    due: datetime = (after + schedule.remaining_estimate(after)).replace(second=0, microsecond=0)
    return due if due > after else cron_next(cron, after.replace(second=0, microsecond=0) + timedelta(minutes=1))


def cron_due_times(cron: str, after: datetime, until: datetime) -> list[datetime]:
    """Due times in (after, until], oldest first (at most MAX_DUE_PER_TICK)."""
    out: list[datetime] = []
    t = after
    while len(out) < MAX_DUE_PER_TICK:
        t = cron_next(cron, t)
        if t > until:
            break
        out.append(t)
    return out


# --- schedules ----------------------------------------------------------------------------------------------

def _variants(matrix: list[dict[str, Any]] | None) -> list[tuple[str, dict[str, Any]]]:
    if not matrix:
        return [("", {})]
    out: list[tuple[str, dict[str, Any]]] = []
    for index, entry in enumerate(matrix):
        where = f"/matrix/{index}"
        if not isinstance(entry, dict) or not isinstance(entry.get("options", {}), dict):
            raise RegistryError("a matrix entry is {\"label\": text, \"options\": {RunSpec fields}}",
                                code="invalid-schedule", errors=[{"pointer": where, "code": "invalid-matrix",
                                                                  "message": "an object with label and options"}])
        label = str(entry.get("label") or "").strip()
        if not label or len(label) > 100 or label in {v for v, _ in out}:
            raise RegistryError(f"matrix entry {index} needs a unique label of 1-100 characters",
                                code="invalid-schedule", errors=[{"pointer": f"{where}/label",
                                                                  "code": "invalid-matrix", "message": "label"}])
        out.append((label, dict(entry.get("options") or {})))
    return out


def _check_options(plan: Plan, options: dict[str, Any], matrix: list[dict[str, Any]], agents: list[Agent]) -> None:
    """Every variant must build a RunSpec for every agent, or nothing is stored (400 with the pointer)."""
    for index, (label, extra) in enumerate(_variants(matrix)):
        merged = {**plan.options, **options, **extra}
        unknown = sorted(set(merged) - OPTION_FIELDS)
        if unknown:
            where = f"/matrix/{index}/options" if set(unknown) & set(extra) else "/options"
            raise RegistryError(f"unknown options {unknown}; choose from {sorted(OPTION_FIELDS)}",
                                code="invalid-schedule",
                                errors=[{"pointer": where, "code": "unknown-option", "message": ", ".join(unknown)}])
        probe = Plan(runner=plan.runner, workload=plan.workload, scenario=plan.scenario,
                     repetitions=plan.repetitions, options=merged)
        for agent in agents:
            for precision in plan.precisions:
                for batch in plan.batch_sizes:
                    try:
                        _job_spec(probe, agent, precision, batch)
                    except RegistryError as exc:
                        raise RegistryError(f"variant {label or '(default)'} cannot run: {exc.message}",
                                            code="invalid-schedule",
                                            errors=[{"pointer": f"/matrix/{index}" if label else "/options",
                                                     "code": "invalid-plan", "message": exc.message}]) from None


def _audit_schedule(schedule: Schedule, actor: str, action: str, **extra: Any) -> None:
    audit_append(kind=AuditKind.SCHEDULE_CHANGED, actor=actor, subject=f"schedule:{schedule.pk}",
                 payload={"action": action, "name": schedule.name, "plan": schedule.plan_id, "cron": schedule.cron,
                          "agents": sorted(a.name for a in schedule.agents.all()), "options": schedule.options,
                          "matrix": schedule.matrix, "paused": schedule.paused, **extra})


@transaction.atomic
def schedule_create(*, created_by: AbstractBaseUser, plan: Plan, cron: str, agents: list[Agent], name: str = "",
                    options: dict[str, Any] | None = None, matrix: list[dict[str, Any]] | None = None,
                    webhook_url: str = "", now: datetime | None = None) -> Schedule:
    """Store a schedule for `plan` on `agents`. Its first due time is the first one after now."""
    cron_parse(cron)
    if not agents:
        raise RegistryError("a schedule needs at least one enrolled agent", code="invalid-schedule",
                            errors=[{"pointer": "/agents", "code": "required", "message": "at least one"}])
    _check_options(plan, options or {}, matrix or [], agents)
    schedule = Schedule.objects.create(name=name or f"{plan.workload} {cron}", plan=plan, cron=" ".join(cron.split()),
                                       options=options or {}, matrix=matrix or [], webhook_url=webhook_url,
                                       last_due_at=now or timezone.now(), created_by=created_by,
                                       created_by_name=created_by.get_username())
    schedule.agents.set(agents)
    _audit_schedule(schedule, created_by.get_username(), "created")
    return schedule


@transaction.atomic
def schedule_update(*, schedule: Schedule, actor: str, options: dict[str, Any] | None = None,
                    matrix: list[dict[str, Any]] | None = None, cron: str | None = None,
                    paused: bool | None = None, webhook_url: str | None = None) -> Schedule:
    """Change a schedule's settings, or pause/resume it. A deleted schedule cannot change (409)."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.deleted_at is not None:
        raise RegistryError(f"schedule {schedule.pk} is deleted", status=409, code="schedule-deleted")
    if cron is not None:
        cron_parse(cron)
        schedule.cron = " ".join(cron.split())
    if options is not None or matrix is not None:
        _check_options(schedule.plan, schedule.options if options is None else options,
                       schedule.matrix if matrix is None else matrix, list(schedule.agents.all()))
        schedule.options = schedule.options if options is None else options
        schedule.matrix = schedule.matrix if matrix is None else matrix
    action = "changed"
    if paused is not None and paused != schedule.paused:
        action = "paused" if paused else "resumed"
        schedule.paused = paused
        if not paused:  # due times while paused are not owed: resume from now
            schedule.last_due_at = max(schedule.last_due_at or timezone.now(), timezone.now())
    if webhook_url is not None:
        schedule.webhook_url = webhook_url
    schedule.save()
    _audit_schedule(schedule, actor, action)
    return schedule


@transaction.atomic
def schedule_delete(*, schedule: Schedule, actor: str) -> Schedule:
    """Stop a schedule for good. Its fires, series and alerts stay (they are history); it never fires again."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.deleted_at is None:
        schedule.deleted_at = timezone.now()
        schedule.save(update_fields=["deleted_at"])
        _audit_schedule(schedule, actor, "deleted")
    return schedule


def _fire(schedule: Schedule, due: datetime, label: str, extra: dict[str, Any], *, late: bool) -> ScheduleFire | None:
    """Fire one due time of one variant, exactly once. None when it was already fired (or missed) by another."""
    agents = list(schedule.agents.all())
    missed: list[dict[str, str]] = []
    ready: list[Agent] = []
    for agent in agents:
        if late:
            missed.append({"agent": agent.name, "reason": "the scheduler did not run at the due time"})
        elif agent.revoked_at is not None:
            missed.append({"agent": agent.name, "reason": "the agent is revoked"})
        elif not agent.is_online:
            missed.append({"agent": agent.name, "reason": "the agent was offline at the due time"})
        else:
            ready.append(agent)
    status = "missed" if not ready else "partial" if missed else "fired"
    try:
        with transaction.atomic():
            fire = ScheduleFire.objects.create(schedule=schedule, due_at=due, variant=label, status=status,
                                               missed=missed)
            if ready:
                plan = schedule.plan
                fire.plan = plan_create(
                    created_by=schedule.created_by, agents=ready, runner=plan.runner, workload=plan.workload,
                    precisions=plan.precisions, batch_sizes=plan.batch_sizes, scenario=plan.scenario,
                    repetitions=plan.repetitions, options={**plan.options, **schedule.options, **extra},
                    soft_time_limit=plan.soft_time_limit, time_limit=plan.time_limit,
                    name=f"{schedule.name} @ {due:%Y-%m-%d %H:%M}Z{' ' + label if label else ''}")
                fire.save(update_fields=["plan"])
            audit_append(kind=AuditKind.SCHEDULE_FIRED, actor="registry", subject=f"schedule:{schedule.pk}",
                         payload={"due_at": due.isoformat(), "variant": label, "status": status,
                                  "plan": fire.plan_id, "agents": [a.name for a in ready], "missed": missed})
    except IntegrityError:
        return None  # this (schedule, due time, variant) is another beat's or an earlier tick's
    except RegistryError as exc:  # the plan no longer runs (e.g. an agent's inventory changed): say so, go on
        reason = f"the plan could not be queued: {exc.message}"
        try:
            with transaction.atomic():
                fire = ScheduleFire.objects.create(schedule=schedule, due_at=due, variant=label, status="missed",
                                                   missed=[{"agent": a.name, "reason": reason} for a in agents])
                audit_append(kind=AuditKind.SCHEDULE_FIRED, actor="registry", subject=f"schedule:{schedule.pk}",
                             payload={"due_at": due.isoformat(), "variant": label, "status": "missed",
                                      "plan": None, "agents": [], "missed": fire.missed})
        except IntegrityError:
            return None
    return fire


def schedules_tick(*, now: datetime | None = None) -> dict[str, int]:
    """Celery beat: fire every active schedule's due times up to `now`, each exactly once.

    Of the due times since the last tick, the latest is fired when it is within the grace period; older ones
    (the scheduler was down) are recorded as missed. Also lets runs of scheduled jobs that have not joined
    their series yet join it. Returns counts.
    """
    now = now or timezone.now()
    grace = timedelta(seconds=settings.BENCHREG_SCHEDULE_GRACE_S)
    fired = missed = 0
    for schedule in Schedule.objects.filter(paused=False, deleted_at__isnull=True).select_related("plan"):
        due_times = cron_due_times(schedule.cron, schedule.last_due_at or schedule.created_at, now)
        if not due_times:
            continue
        for due in due_times:
            late = due != due_times[-1] or now - due > grace
            for label, extra in _variants(schedule.matrix):
                fire = _fire(schedule, due, label, extra, late=late)
                if fire is not None:
                    fired += fire.status != "missed"
                    missed += fire.status == "missed"
        Schedule.objects.filter(pk=schedule.pk, last_due_at__lt=due_times[-1]).update(last_due_at=due_times[-1])
    joined = series_catch_up()
    return {"fired": fired, "missed": missed, "joined": joined}


# --- series -------------------------------------------------------------------------------------------------

def series_for_job(job: Job) -> tuple[Schedule, str] | None:
    fire = ScheduleFire.objects.select_related("schedule").filter(plan_id=job.plan_id).first()
    return (fire.schedule, fire.variant) if fire is not None else None


def series_catch_up(limit: int = 200) -> int:
    """Runs of scheduled jobs that have not joined their series (the registry stopped before it got to them)."""
    pending = Job.objects.filter(status=JobStatus.SUBMITTED, run__isnull=False, plan__schedule_fire__isnull=False,
                                 run__series_member__isnull=True).order_by("run_id").values_list("run_id", flat=True)
    count = 0
    for run_id in pending[:limit]:
        count += series_record_run(run_id=run_id) is not None
    return count


def series_record_run(*, run_id: int) -> SeriesRun | None:
    """Add a scheduled job's run to its series and judge it; raise an alert when it is a change point.

    Idempotent: a run already in its series is left alone. Runs of unscheduled jobs (and withdrawn runs)
    belong to no series. The alert and its audit entry commit together; webhook and signal follow the commit.
    """
    run = Submission.objects.filter(pk=run_id).select_related("job", "job__agent").first()
    job = getattr(run, "job", None) if run is not None else None
    origin = series_for_job(job) if job is not None else None
    if run is None or job is None or origin is None or hasattr(run, "withdrawal"):
        return None
    schedule, variant = origin
    estimate = headline_estimate(run.document)
    with transaction.atomic():
        series, _ = Series.objects.get_or_create(schedule=schedule, variant=variant, agent=job.agent,
                                                 config_key=changepoints.series_key(run.document),
                                                 defaults={"headline_metric": run.headline_metric})
        series = Series.objects.select_for_update().get(pk=series.pk)
        if SeriesRun.objects.filter(run=run).exists():
            return None
        member = SeriesRun.objects.create(series=series, run=run, value=changepoints.run_value(estimate))
        alert = _judge(series, member, run)
    if alert is not None:
        _announce(alert, schedule)
    return member


def _reference(series: Series, member: SeriesRun) -> list[SeriesRun]:
    """The series' runs before `member` since its last change point (that run included), the latest WINDOW."""
    last = Alert.objects.filter(series=series, run_id__lt=member.run_id).order_by("-run_id").first()
    members = SeriesRun.objects.filter(series=series, run_id__lt=member.run_id, value__isnull=False,
                                       run__withdrawal__isnull=True)
    if last is not None:
        members = members.filter(run_id__gte=last.run_id)
    return list(reversed(members.order_by("-run_id")[:changepoints.WINDOW]))


def _judge(series: Series, member: SeriesRun, run: Submission) -> Alert | None:
    if member.value is None:
        return None
    reference = _reference(series, member)
    change = changepoints.prediction_test([m.value for m in reference if m.value is not None], member.value,
                                          lower_is_better=run.headline_lower_is_better)
    if not change.changed:
        return None
    assert change.ratio is not None and change.ci_low is not None and change.ci_high is not None
    assert change.p_value is not None
    previous = reference[-1].run
    alert = Alert.objects.create(series=series, run=run, previous=previous,
                                 reference_runs=[m.run_id for m in reference], ratio=change.ratio,
                                 ci_low=change.ci_low, ci_high=change.ci_high, p_value=change.p_value,
                                 direction=change.direction, differences=differences(previous.document, run.document))
    audit_append(kind=AuditKind.SERIES_ALERT, actor="registry", subject=f"alert:{alert.pk}",
                 payload=alert_body(alert))
    return alert


def _announce(alert: Alert, schedule: Schedule) -> None:
    url = schedule.webhook_url or settings.BENCHREG_ALERT_WEBHOOK_URL
    if url:
        webhook_enqueue(url=url, secret=settings.BENCHREG_ALERT_WEBHOOK_SECRET, event=ALERT_EVENT,
                        body=alert_body(alert))
    try:
        alert_raised.send(sender=Alert, alert=alert)
    except Exception:  # a receiver's failure must not undo a committed alert
        log.exception("alert_raised receiver failed for alert %s", alert.pk)


def _leaves(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_leaves(item, f"{prefix}/{str(key).replace('~', '~0').replace('/', '~1')}"))
        return out
    return {prefix: value}


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """What changed between two runs' documents in software, system, precision, workload, scenario and the
    conditions a lab sets: [{pointer, before, after}], software first. Values are read from the documents."""
    out: list[dict[str, Any]] = []
    for section in DIFFERENCE_SECTIONS:
        a, b = before, after
        for part in section.split("/"):
            a = a.get(part) if isinstance(a, dict) else None
            b = b.get(part) if isinstance(b, dict) else None
        left, right = _leaves(a, f"/{section}"), _leaves(b, f"/{section}")
        for pointer in sorted(set(left) | set(right)):
            if pointer.startswith("/system/notes") or pointer.startswith("/software/notes"):
                continue  # free text per run (readings, timings): not a configuration
            if left.get(pointer) != right.get(pointer):
                out.append({"pointer": pointer, "before": left.get(pointer), "after": right.get(pointer)})
    return out


def alert_body(alert: Alert) -> dict[str, Any]:
    """The alert as the API, the audit log and the webhook state it."""
    series = alert.series
    change = f"{alert.ratio:.3g}× ({abs(alert.ratio - 1):.0%} {'higher' if alert.ratio > 1 else 'lower'})"
    names = ", ".join(d["pointer"] for d in alert.differences[:5]) or "nothing in the documents"
    return {
        "id": alert.pk, "series": series.pk, "schedule": series.schedule_id, "variant": series.variant,
        "agent": series.agent.name, "metric": series.headline_metric,
        "run": {"id": alert.run_id, "digest": alert.run.digest},
        "previous": {"id": alert.previous_id, "digest": alert.previous.digest},
        "reference_runs": alert.reference_runs,
        "ratio": float(f"{alert.ratio:.6g}"), "ci_low": float(f"{alert.ci_low:.6g}"),
        "ci_high": float(f"{alert.ci_high:.6g}"), "confidence": 0.95, "p_value": float(f"{alert.p_value:.3g}"),
        "direction": alert.direction, "differences": alert.differences, "method": changepoints.METHOD,
        "summary": (f"{series.headline_metric} of run {alert.run_id} is {change} against the "
                    f"{len(alert.reference_runs)} runs before it (95% CI {alert.ci_low:.3g}–{alert.ci_high:.3g}, "
                    f"{alert.direction}); "
                    f"changed since run {alert.previous_id}: {names}"),
    }
