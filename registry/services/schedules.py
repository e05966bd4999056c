"""Schedules (docs/series.md): a schedule repeats a plan's configuration on a cron expression (celery's `crontab`,
UTC) on its agents, once per software-matrix variant. This module stores and changes them; firing their due times
is registry.services.schedule_firing, and the series their runs join is registry.services.series.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from celery.schedules import ParseException, crontab
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from registry.choices import AuditKind
from registry.exceptions import RegistryError
from registry.models import Agent, Plan, Schedule
from registry.services.audit import audit_append
from registry.services.plans import OPTION_FIELDS, job_spec
from registry.services.webhooks import webhook_secret_new, webhook_url_problem

log = logging.getLogger(__name__)

CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
MAX_DUE_PER_TICK = 10_000  # due times examined per schedule and tick (a minutely schedule down for a week)


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
    # celery-types misspells the attribute as `nowfunc`; celery's schedules read `nowfun`.
    schedule.nowfun = lambda: after  # type: ignore[attr-defined]
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
    _check_matrix_size(matrix)
    out: list[tuple[str, dict[str, Any]]] = []
    labels: set[str] = set()
    seen: dict[str, int] = {}  # canonical options -> the first entry with them
    for index, entry in enumerate(matrix):
        label = _variant_label(index, entry, labels)
        options = dict(entry.get("options") or {})
        key = json.dumps(options, sort_keys=True, default=str)
        if key in seen:
            raise _duplicate_variant(index, label, seen[key])
        labels.add(label)
        seen[key] = index
        out.append((label, options))
    return out


def _check_matrix_size(matrix: list[dict[str, Any]]) -> None:
    limit = settings.BENCHREG_SCHEDULE_MAX_VARIANTS
    if not isinstance(matrix, list) or len(matrix) > limit:
        raise RegistryError(
            f"a schedule's matrix has at most {limit} variants (BENCHREG_SCHEDULE_MAX_VARIANTS)",
            code="invalid-schedule",
            errors=[{"pointer": "/matrix", "code": "too-many-variants", "message": f"at most {limit} entries"}],
        )


def _variant_label(index: int, entry: dict[str, Any], labels: set[str]) -> str:
    """The label of matrix entry `index`, checked: the entry is an object, its label new and 1-100 characters."""
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
    return label


def _duplicate_variant(index: int, label: str, first: int) -> RegistryError:
    return RegistryError(
        f"matrix entry {index} ({label}) has the same options as entry {first}: they would run identical jobs",
        code="invalid-schedule",
        errors=[
            {
                "pointer": f"/matrix/{index}/options",
                "code": "duplicate-variant",
                "message": f"the same options as /matrix/{first}/options",
            }
        ],
    )


def stored_variants(schedule: Schedule) -> list[tuple[str, dict[str, Any]]]:
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
    _check_jobs_per_due(plan, len(variants), agents, "/matrix" if matrix else "/agents")
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
        _check_variant_runs(plan, merged, agents, index, label)


def _check_jobs_per_due(plan: Plan, variants: int, agents: list[Agent], pointer: str) -> None:
    per_due = variants * len(agents) * len(set(plan.precisions)) * len(set(map(str, plan.batch_sizes)))
    limit = settings.BENCHREG_MAX_JOBS_PER_PLAN
    if per_due > limit:
        raise RegistryError(
            f"each due time of this schedule would queue {per_due} jobs (variants x agents x "
            f"precisions x batch sizes); at most {limit} (BENCHREG_MAX_JOBS_PER_PLAN)",
            code="invalid-schedule",
            errors=[{"pointer": pointer, "code": "too-many-jobs", "message": f"{per_due} jobs, at most {limit}"}],
        )


def _check_variant_runs(plan: Plan, merged: dict[str, Any], agents: list[Agent], index: int, label: str) -> None:
    """The variant's options (`merged`) build a RunSpec for every agent, precision and batch size."""
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
                    job_spec(probe, agent, precision, batch)
                except RegistryError as exc:
                    raise _variant_refused(index, label, exc) from None


def _variant_refused(index: int, label: str, exc: RegistryError) -> RegistryError:
    return RegistryError(
        f"variant {label or '(default)'} cannot run: {exc.message}",
        code="invalid-schedule",
        errors=[
            {
                "pointer": f"/matrix/{index}" if label else "/options",
                "code": "invalid-plan",
                "message": exc.message,
            }
        ],
    )


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
    created_by: User,
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
    _check_new(plan, cron, agents, options or {}, matrix or [], webhook_url)
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


def _check_new(
    plan: Plan, cron: str, agents: list[Agent], options: dict[str, Any], matrix: list[dict[str, Any]], webhook_url: str
) -> None:
    """A new schedule's plan, cron, agents, options and webhook address, checked in that order."""
    if plan.runner == "serving":  # its jobs are load levels of one sweep each, not one run to repeat into a series
        raise RegistryError(
            "a serving plan cannot be scheduled: its jobs are the levels of one load sweep; create a plan per sweep",
            code="invalid-schedule",
            errors=[{"pointer": "/plan", "code": "not-schedulable", "message": "runner serving"}],
        )
    cron_parse(cron)
    if not agents:
        raise RegistryError(
            "a schedule needs at least one enrolled agent",
            code="invalid-schedule",
            errors=[{"pointer": "/agents", "code": "required", "message": "at least one"}],
        )
    _check_options(plan, options, matrix, agents)
    _check_webhook(webhook_url)


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
    schedule = _lock_live(schedule)
    if cron is not None:
        cron_parse(cron)
        schedule.cron = " ".join(cron.split())
    _change_options(schedule, options, matrix)
    action = _change_paused(schedule, paused)
    _change_webhook(schedule, webhook_url)
    schedule.save()
    _audit_schedule(schedule, actor, action)
    return schedule


def _lock_live(schedule: Schedule) -> Schedule:
    """The schedule's row, locked; a deleted schedule cannot change (409)."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.deleted_at is not None:
        raise RegistryError(f"schedule {schedule.pk} is deleted", status=409, code="schedule-deleted")
    return schedule


def _change_webhook(schedule: Schedule, webhook_url: str | None) -> None:
    if webhook_url is not None and webhook_url != schedule.webhook_url:
        _check_webhook(webhook_url)  # a new address gets a new secret, shown once in the answer to this change
        schedule.webhook_url = webhook_url
        schedule.webhook_secret = webhook_secret_new() if webhook_url else ""


def _change_options(schedule: Schedule, options: dict[str, Any] | None, matrix: list[dict[str, Any]] | None) -> None:
    """Set the options and matrix given (None: unchanged), once every variant checks out."""
    if options is not None or matrix is not None:
        _check_options(
            schedule.plan,
            schedule.options if options is None else options,
            schedule.matrix if matrix is None else matrix,
            list(schedule.agents.all()),
        )
        schedule.options = schedule.options if options is None else options
        schedule.matrix = schedule.matrix if matrix is None else matrix


def _change_paused(schedule: Schedule, paused: bool | None) -> str:
    """Pause or resume the schedule; returns the audit action ("changed" when neither)."""
    if paused is None or paused == schedule.paused:
        return "changed"
    schedule.paused = paused
    if not paused:  # due times while paused are not owed: resume from now
        schedule.last_due_at = max(schedule.last_due_at or timezone.now(), timezone.now())
    return "paused" if paused else "resumed"


@transaction.atomic
def schedule_delete(*, schedule: Schedule, actor: str) -> Schedule:
    """Stop a schedule for good. Its fires, series and alerts stay (they are history); it never fires again."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.deleted_at is None:
        schedule.deleted_at = timezone.now()
        schedule.save(update_fields=["deleted_at"])
        _audit_schedule(schedule, actor, "deleted")
    return schedule
