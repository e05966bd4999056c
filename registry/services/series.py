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

import json
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
from registry.services.webhooks import webhook_enqueue, webhook_secret_new, webhook_url_problem

log = logging.getLogger(__name__)

# Sent after an alert's transaction commits: sender=Alert, alert=<Alert>. Decisions citing the series listen.
alert_raised = Signal()

CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
MAX_DUE_PER_TICK = 10_000  # due times examined per schedule and tick (a minutely schedule down for a week)
ALERT_EVENT = "series.alert"
# Where a run's "what else changed" is read from, in the order an alert lists it.
DIFFERENCE_SECTIONS = (
    "software",
    "system",
    "precision",
    "workload",
    "scenario",
    "conditions/power",
    "conditions/clocks",
    "conditions/isolation",
    "provenance/runner",
)


# --- cron ---------------------------------------------------------------------------------------------------


def cron_parse(text: str) -> crontab:
    """Five-field cron ("minute hour day-of-month month day-of-week", UTC) as celery's crontab, or a 400."""
    parts = text.split()
    if len(parts) != 5:
        raise RegistryError(
            "cron needs five fields: minute hour day-of-month month day-of-week (UTC), "
            f"e.g. '0 2 * * *' for nightly at 02:00; got {len(parts)}",
            code="invalid-schedule",
            errors=[{"pointer": "/cron", "code": "invalid-cron", "message": "five fields"}],
        )
    try:
        return crontab(**dict(zip(CRON_FIELDS, parts, strict=True)))
    except (ValueError, TypeError, ParseException) as exc:  # ParseException: e.g. a negative number
        raise RegistryError(
            f"cron {text!r} is not valid: {exc}",
            code="invalid-schedule",
            errors=[{"pointer": "/cron", "code": "invalid-cron", "message": str(exc)}],
        ) from None


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
    """The (label, options) of each variant, checked: at most BENCHREG_SCHEDULE_MAX_VARIANTS entries, each an
    object with a unique label, no two with the same options (they would make identical jobs). Linear time."""
    if not matrix:
        return [("", {})]
    limit = settings.BENCHREG_SCHEDULE_MAX_VARIANTS
    if not isinstance(matrix, list) or len(matrix) > limit:
        raise RegistryError(
            f"a schedule's matrix has at most {limit} variants (BENCHREG_SCHEDULE_MAX_VARIANTS)",
            code="invalid-schedule",
            errors=[{"pointer": "/matrix", "code": "too-many-variants", "message": f"at most {limit} entries"}],
        )
    out: list[tuple[str, dict[str, Any]]] = []
    labels: set[str] = set()
    seen: dict[str, int] = {}  # canonical options -> the first entry with them
    for index, entry in enumerate(matrix):
        where = f"/matrix/{index}"
        if not isinstance(entry, dict) or not isinstance(entry.get("options", {}), dict):
            raise RegistryError(
                'a matrix entry is {"label": text, "options": {RunSpec fields}}',
                code="invalid-schedule",
                errors=[{"pointer": where, "code": "invalid-matrix", "message": "an object with label and options"}],
            )
        label = str(entry.get("label") or "").strip()
        if not label or len(label) > 100 or label in labels:
            raise RegistryError(
                f"matrix entry {index} needs a unique label of 1-100 characters",
                code="invalid-schedule",
                errors=[{"pointer": f"{where}/label", "code": "invalid-matrix", "message": "label"}],
            )
        options = dict(entry.get("options") or {})
        key = json.dumps(options, sort_keys=True, default=str)
        if key in seen:
            raise RegistryError(
                f"matrix entry {index} ({label}) has the same options as entry {seen[key]}: "
                "they would run identical jobs",
                code="invalid-schedule",
                errors=[
                    {
                        "pointer": f"{where}/options",
                        "code": "duplicate-variant",
                        "message": f"the same options as /matrix/{seen[key]}/options",
                    }
                ],
            )
        labels.add(label)
        seen[key] = index
        out.append((label, options))
    return out


def _stored_variants(schedule: Schedule) -> list[tuple[str, dict[str, Any]]]:
    """A stored schedule's variants for firing. One stored before today's bounds (too many variants, two with
    the same options) fires its first distinct variants up to the bound, and says so in the log."""
    try:
        return _variants(schedule.matrix)
    except RegistryError as exc:
        log.warning("schedule %s: %s; firing its first distinct variants only", schedule.pk, exc.message)
    out: list[tuple[str, dict[str, Any]]] = []
    labels: set[str] = set()
    keys: set[str] = set()
    for entry in schedule.matrix if isinstance(schedule.matrix, list) else []:
        if len(out) >= settings.BENCHREG_SCHEDULE_MAX_VARIANTS:
            break
        if not isinstance(entry, dict) or not isinstance(entry.get("options") or {}, dict):
            continue
        label, options = str(entry.get("label") or "").strip()[:100], dict(entry.get("options") or {})
        key = json.dumps(options, sort_keys=True, default=str)
        if label and label not in labels and key not in keys:
            labels.add(label)
            keys.add(key)
            out.append((label, options))
    return out or [("", {})]


def _check_options(plan: Plan, options: dict[str, Any], matrix: list[dict[str, Any]], agents: list[Agent]) -> None:
    """Every variant must build a RunSpec for every agent, or nothing is stored (400 with the pointer).

    The jobs one due time makes (variants x agents x precisions x batch sizes) are bounded first, so this
    check's own work is bounded too."""
    variants = _variants(matrix)
    per_due = len(variants) * len(agents) * len(set(plan.precisions)) * len(set(map(str, plan.batch_sizes)))
    limit = settings.BENCHREG_MAX_JOBS_PER_PLAN
    if per_due > limit:
        raise RegistryError(
            f"each due time of this schedule would queue {per_due} jobs (variants x agents x "
            f"precisions x batch sizes); at most {limit} (BENCHREG_MAX_JOBS_PER_PLAN)",
            code="invalid-schedule",
            errors=[
                {
                    "pointer": "/matrix" if matrix else "/agents",
                    "code": "too-many-jobs",
                    "message": f"{per_due} jobs, at most {limit}",
                }
            ],
        )
    for index, (label, extra) in enumerate(variants):
        merged = {**plan.options, **options, **extra}
        unknown = sorted(set(merged) - OPTION_FIELDS)
        if unknown:
            where = f"/matrix/{index}/options" if set(unknown) & set(extra) else "/options"
            raise RegistryError(
                f"unknown options {unknown}; choose from {sorted(OPTION_FIELDS)}",
                code="invalid-schedule",
                errors=[{"pointer": where, "code": "unknown-option", "message": ", ".join(unknown)}],
            )
        probe = Plan(
            runner=plan.runner,
            workload=plan.workload,
            scenario=plan.scenario,
            repetitions=plan.repetitions,
            options=merged,
        )
        for agent in agents:
            for precision in dict.fromkeys(plan.precisions):
                for batch in dict.fromkeys(plan.batch_sizes):
                    try:
                        _job_spec(probe, agent, precision, batch)
                    except RegistryError as exc:
                        raise RegistryError(
                            f"variant {label or '(default)'} cannot run: {exc.message}",
                            code="invalid-schedule",
                            errors=[
                                {
                                    "pointer": f"/matrix/{index}" if label else "/options",
                                    "code": "invalid-plan",
                                    "message": exc.message,
                                }
                            ],
                        ) from None


def _check_webhook(url: str) -> None:
    """A schedule's webhook address must be one the registry would deliver to (the webhooks service decides)."""
    problem = webhook_url_problem(url) if url else None
    if problem:
        raise RegistryError(
            f"the webhook address is refused: {problem}",
            status=422,
            code="webhook-url-refused",
            errors=[{"pointer": "/webhook_url", "code": "webhook-url-refused", "message": problem}],
        )


def _audit_schedule(schedule: Schedule, actor: str, action: str, **extra: Any) -> None:
    audit_append(
        kind=AuditKind.SCHEDULE_CHANGED,
        actor=actor,
        subject=f"schedule:{schedule.pk}",
        payload={
            "action": action,
            "name": schedule.name,
            "plan": schedule.plan_id,
            "cron": schedule.cron,
            "agents": sorted(a.name for a in schedule.agents.all()),
            "options": schedule.options,
            "matrix": schedule.matrix,
            "paused": schedule.paused,
            **extra,
        },
    )


@transaction.atomic
def schedule_create(
    *,
    created_by: AbstractBaseUser,
    plan: Plan,
    cron: str,
    agents: list[Agent],
    name: str = "",
    options: dict[str, Any] | None = None,
    matrix: list[dict[str, Any]] | None = None,
    webhook_url: str = "",
    now: datetime | None = None,
) -> Schedule:
    """Store a schedule for `plan` on `agents`. Its first due time is the first one after now.

    With a `webhook_url` the schedule gets its own signing secret (`webhook_secret`): the API shows it to the
    owner in this one answer, and every alert of the schedule is signed with it."""
    cron_parse(cron)
    if not agents:
        raise RegistryError(
            "a schedule needs at least one enrolled agent",
            code="invalid-schedule",
            errors=[{"pointer": "/agents", "code": "required", "message": "at least one"}],
        )
    _check_options(plan, options or {}, matrix or [], agents)
    _check_webhook(webhook_url)
    schedule = Schedule.objects.create(
        name=name or f"{plan.workload} {cron}",
        plan=plan,
        cron=" ".join(cron.split()),
        options=options or {},
        matrix=matrix or [],
        webhook_url=webhook_url,
        webhook_secret=webhook_secret_new() if webhook_url else "",
        last_due_at=now or timezone.now(),
        created_by=created_by,
        created_by_name=created_by.get_username(),
    )
    schedule.agents.set(agents)
    _audit_schedule(schedule, created_by.get_username(), "created")
    return schedule


@transaction.atomic
def schedule_update(
    *,
    schedule: Schedule,
    actor: str,
    options: dict[str, Any] | None = None,
    matrix: list[dict[str, Any]] | None = None,
    cron: str | None = None,
    paused: bool | None = None,
    webhook_url: str | None = None,
) -> Schedule:
    """Change a schedule's settings, or pause/resume it. A deleted schedule cannot change (409)."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.deleted_at is not None:
        raise RegistryError(f"schedule {schedule.pk} is deleted", status=409, code="schedule-deleted")
    if cron is not None:
        cron_parse(cron)
        schedule.cron = " ".join(cron.split())
    if options is not None or matrix is not None:
        _check_options(
            schedule.plan,
            schedule.options if options is None else options,
            schedule.matrix if matrix is None else matrix,
            list(schedule.agents.all()),
        )
        schedule.options = schedule.options if options is None else options
        schedule.matrix = schedule.matrix if matrix is None else matrix
    action = "changed"
    if paused is not None and paused != schedule.paused:
        action = "paused" if paused else "resumed"
        schedule.paused = paused
        if not paused:  # due times while paused are not owed: resume from now
            schedule.last_due_at = max(schedule.last_due_at or timezone.now(), timezone.now())
    if webhook_url is not None and webhook_url != schedule.webhook_url:
        _check_webhook(webhook_url)  # a new address gets a new secret, shown once in the answer to this change
        schedule.webhook_url = webhook_url
        schedule.webhook_secret = webhook_secret_new() if webhook_url else ""
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


def _live(schedule: Schedule) -> bool:
    """Lock the schedule's row and say whether it may still fire. schedule_update and schedule_delete take the
    same lock, so a pause or delete that commits mid-tick stops every firing after it."""
    return Schedule.objects.select_for_update().filter(pk=schedule.pk, paused=False, deleted_at__isnull=True).exists()


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
            if not _live(schedule):
                return None
            fire = ScheduleFire.objects.create(
                schedule=schedule, due_at=due, variant=label, status=status, missed=missed
            )
            if ready:
                plan = schedule.plan
                fire.plan = plan_create(
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
                fire.save(update_fields=["plan"])
            audit_append(
                kind=AuditKind.SCHEDULE_FIRED,
                actor="registry",
                subject=f"schedule:{schedule.pk}",
                payload={
                    "due_at": due.isoformat(),
                    "variant": label,
                    "status": status,
                    "plan": fire.plan_id,
                    "agents": [a.name for a in ready],
                    "missed": missed,
                },
            )
    except IntegrityError:
        return None  # this (schedule, due time, variant) is another beat's or an earlier tick's
    except RegistryError as exc:  # the plan no longer runs (e.g. an agent's inventory changed): say so, go on
        reason = f"the plan could not be queued: {exc.message}"
        try:
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
                audit_append(
                    kind=AuditKind.SCHEDULE_FIRED,
                    actor="registry",
                    subject=f"schedule:{schedule.pk}",
                    payload={
                        "due_at": due.isoformat(),
                        "variant": label,
                        "status": "missed",
                        "plan": None,
                        "agents": [],
                        "missed": fire.missed,
                    },
                )
        except IntegrityError:
            return None
    return fire


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
    grace = timedelta(seconds=settings.BENCHREG_SCHEDULE_GRACE_S)
    budget = settings.BENCHREG_SCHEDULE_FIRES_PER_TICK
    fired = missed = 0
    for schedule in Schedule.objects.filter(paused=False, deleted_at__isnull=True).select_related("plan"):
        due_times = cron_due_times(schedule.cron, schedule.last_due_at or schedule.created_at, now)
        if not due_times:
            continue
        variants = _stored_variants(schedule)
        whole = True  # every due time handled (or the schedule stopped): last_due_at may move to the latest
        for due in [due_times[-1], *due_times[:-1]]:
            late = due != due_times[-1] or now - due > grace
            done = set(ScheduleFire.objects.filter(schedule=schedule, due_at=due).values_list("variant", flat=True))
            for label, extra in variants:
                if label in done:
                    continue
                if budget <= 0:
                    whole = False
                    break
                budget -= 1
                fire = _fire(schedule, due, label, extra, late=late)
                if fire is not None:
                    fired += fire.status != "missed"
                    missed += fire.status == "missed"
                elif not Schedule.objects.filter(pk=schedule.pk, paused=False, deleted_at__isnull=True).exists():
                    break  # paused or deleted meanwhile: not one more firing
            if not whole:
                break
        if whole:
            Schedule.objects.filter(pk=schedule.pk, last_due_at__lt=due_times[-1]).update(last_due_at=due_times[-1])
        if budget <= 0:
            log.warning(
                "schedules tick: %d variant firings handled; the rest wait for the next tick",
                settings.BENCHREG_SCHEDULE_FIRES_PER_TICK,
            )
            break
    joined = series_catch_up()
    return {"fired": fired, "missed": missed, "joined": joined}


# --- series -------------------------------------------------------------------------------------------------


def series_for_job(job: Job) -> tuple[Schedule, str] | None:
    fire = ScheduleFire.objects.select_related("schedule").filter(plan_id=job.plan_id).first()
    return (fire.schedule, fire.variant) if fire is not None else None


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
        series, _ = Series.objects.get_or_create(
            schedule=schedule,
            variant=variant,
            agent=job.agent,
            config_key=changepoints.series_key(run.document),
            defaults={"headline_metric": run.headline_metric},
        )
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
    members = SeriesRun.objects.filter(
        series=series, run_id__lt=member.run_id, value__isnull=False, run__withdrawal__isnull=True
    )
    if last is not None:
        members = members.filter(run_id__gte=last.run_id)
    return list(reversed(members.order_by("-run_id")[: changepoints.WINDOW]))


def _judge(series: Series, member: SeriesRun, run: Submission) -> Alert | None:
    if member.value is None:
        return None
    reference = _reference(series, member)
    change = changepoints.prediction_test(
        [m.value for m in reference if m.value is not None], member.value, lower_is_better=run.headline_lower_is_better
    )
    if not change.changed:
        return None
    assert change.ratio is not None and change.ci_low is not None and change.ci_high is not None
    assert change.p_value is not None
    previous = reference[-1].run
    alert = Alert.objects.create(
        series=series,
        run=run,
        previous=previous,
        reference_runs=[m.run_id for m in reference],
        ratio=change.ratio,
        ci_low=change.ci_low,
        ci_high=change.ci_high,
        p_value=change.p_value,
        direction=change.direction,
        differences=differences(previous.document, run.document),
    )
    audit_append(kind=AuditKind.SERIES_ALERT, actor="registry", subject=f"alert:{alert.pk}", payload=alert_body(alert))
    return alert


def _alert_destination(schedule: Schedule) -> tuple[str, str] | None:
    """Where a schedule's alerts go and the secret they are signed with: the schedule's own webhook and secret,
    else the operator's. None (with the reason logged) when nothing can be sent signed."""
    if schedule.webhook_url:
        if schedule.webhook_secret:
            return schedule.webhook_url, schedule.webhook_secret
        log.warning(
            "schedule %s: its webhook has no secret of its own (set before schedules had one); alert not "
            "sent: set its webhook_url again to get a secret",
            schedule.pk,
        )
        return None
    if settings.BENCHREG_ALERT_WEBHOOK_URL:
        if settings.BENCHREG_ALERT_WEBHOOK_SECRET:
            return settings.BENCHREG_ALERT_WEBHOOK_URL, settings.BENCHREG_ALERT_WEBHOOK_SECRET
        log.warning("BENCHREG_ALERT_WEBHOOK_URL is set without BENCHREG_ALERT_WEBHOOK_SECRET: alert not sent")
    return None


def _announce(alert: Alert, schedule: Schedule) -> None:
    destination = _alert_destination(schedule)
    if destination is not None:
        webhook_enqueue(url=destination[0], secret=destination[1], event=ALERT_EVENT, body=alert_body(alert))
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
        "id": alert.pk,
        "series": series.pk,
        "schedule": series.schedule_id,
        "variant": series.variant,
        "agent": series.agent.name,
        "metric": series.headline_metric,
        "run": {"id": alert.run_id, "digest": alert.run.digest},
        "previous": {"id": alert.previous_id, "digest": alert.previous.digest},
        "reference_runs": alert.reference_runs,
        "ratio": float(f"{alert.ratio:.6g}"),
        "ci_low": float(f"{alert.ci_low:.6g}"),
        "ci_high": float(f"{alert.ci_high:.6g}"),
        "confidence": 0.95,
        "p_value": float(f"{alert.p_value:.3g}"),
        "direction": alert.direction,
        "differences": alert.differences,
        "method": changepoints.METHOD,
        "summary": (
            f"{series.headline_metric} of run {alert.run_id} is {change} against the "
            f"{len(alert.reference_runs)} runs before it (95% CI {alert.ci_low:.3g}–{alert.ci_high:.3g}, "
            f"{alert.direction}); "
            f"changed since run {alert.previous_id}: {names}"
        ),
    }
