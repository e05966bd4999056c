"""Series and their alerts (docs/series.md).

A run of a scheduled job joins its series after the run's transaction commits (`series_record_run`, called by
registry.services.reactions; the schedule tick catches up any the registry did not get to). The series row is
locked while a run joins, so verdicts are formed in order. `protocol.changepoints` judges each new run against the
series since its last change point; a change is an Alert, written with its audit entry in one transaction.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction

from protocol import changepoints
from protocol.statistics import headline_estimate
from registry.choices import AuditKind
from registry.models import Alert, Job, Schedule, ScheduleFire, Series, SeriesRun, Submission
from registry.services.audit import audit_append
from registry.services.webhooks import webhook_enqueue

log = logging.getLogger(__name__)

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


def series_for_job(job: Job) -> tuple[Schedule, str] | None:
    fire = ScheduleFire.objects.select_related("schedule").filter(plan_id=job.plan_id).first()
    return (fire.schedule, fire.variant) if fire is not None else None


def series_record_run(*, run_id: int) -> tuple[SeriesRun, Alert | None] | None:
    """Add a scheduled job's run to its series and judge it; raise an alert when it is a change point.

    Returns the run's place in its series and the alert it raised, if any. Idempotent: a run already in its series
    is left alone (None), and runs of unscheduled jobs (and withdrawn runs) belong to no series (None). The alert
    and its audit entry commit together; what follows an alert (its webhook, the decisions citing the series) is
    registry.services.reactions.series_alert_raised, after the commit.
    """
    run = Submission.objects.filter(pk=run_id).select_related("job", "job__agent").first()
    job = getattr(run, "job", None) if run is not None else None
    origin = series_for_job(job) if job is not None else None
    if run is None or job is None or origin is None or hasattr(run, "withdrawal"):
        return None
    schedule, variant = origin
    estimate = headline_estimate(run.document)
    with transaction.atomic():
        series = _locked_series(schedule, variant, job, run)
        if SeriesRun.objects.filter(run=run).exists():
            return None
        member = SeriesRun.objects.create(series=series, run=run, value=changepoints.run_value(estimate))
        alert = _judge(series, member, run)
    return member, alert


def _locked_series(schedule: Schedule, variant: str, job: Job, run: Submission) -> Series:
    """The run's series (created when it is the first), its row locked."""
    series, _ = Series.objects.get_or_create(
        schedule=schedule,
        variant=variant,
        agent=job.agent,
        config_key=changepoints.series_key(run.document),
        defaults={"headline_metric": run.headline_metric},
    )
    return Series.objects.select_for_update().get(pk=series.pk)


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
    alert = _alert_create(series, run, reference, change)
    audit_append(kind=AuditKind.SERIES_ALERT, actor="registry", subject=f"alert:{alert.pk}", payload=alert_body(alert))
    return alert


def _alert_create(series: Series, run: Submission, reference: list[SeriesRun], change: changepoints.Change) -> Alert:
    assert change.ratio is not None and change.ci_low is not None and change.ci_high is not None
    assert change.p_value is not None
    previous = reference[-1].run
    return Alert.objects.create(
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


def alert_destination(schedule: Schedule) -> tuple[str, str] | None:
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


def series_alert_send(*, alert: Alert) -> None:
    """Queue the alert's signed webhook to its schedule's address (else the operator's), if it can be signed."""
    destination = alert_destination(alert.series.schedule)
    if destination is not None:
        webhook_enqueue(url=destination[0], secret=destination[1], event=ALERT_EVENT, body=alert_body(alert))


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
        a: Any = before  # then whatever the documents hold at each part of the section
        b: Any = after
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
