"""Recurring plans and what they measure over time: schedules, their firings, series of runs and alerts.

A Schedule repeats a plan's configuration (cron-like, UTC) on its enrolled agents, once per software-matrix
variant. Each due time of each variant is one ScheduleFire row, unique on (schedule, due_at, variant): that
row, created in the same transaction as the jobs, is what makes a firing happen exactly once however many beat
processes run. A Series is one configuration on one agent (schedule, variant, agent, the run's comparability
key on the software axis); an Alert is a series' change point, found by protocol.changepoints.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .fields import JSONField


class Schedule(models.Model):
    """A plan's configuration, re-run on `cron` (five fields, UTC) on `agents`, once per `matrix` variant.

    `options` override the plan's options (e.g. a runner setting); each matrix entry is a further override
    with a `label`. `last_due_at` is the latest due time handled (fired or missed): the next tick starts there.
    """

    name = models.CharField(max_length=200)
    plan = models.ForeignKey(
        "registry.Plan",
        on_delete=models.PROTECT,
        related_name="schedules",
        help_text="the configuration repeated (runner, workload, precisions, batch sizes)",
    )
    cron = models.CharField(max_length=120, help_text="minute hour day-of-month month day-of-week, UTC")
    agents = models.ManyToManyField("registry.Agent", related_name="schedules")
    options = JSONField(default=dict, blank=True)
    matrix = JSONField(default=list, blank=True, help_text='[{"label": "...", "options": {...}}, ...]')
    paused = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True)
    last_due_at = models.DateTimeField(null=True, blank=True)
    webhook_url = models.URLField(max_length=500, blank=True, help_text="alerts are POSTed here, signed")
    webhook_secret = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="Standard Webhooks signing secret (whsec_…) of this schedule's alerts, shown to its owner once",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"schedule {self.pk} {self.name} ({self.cron})"

    @property
    def state(self) -> str:
        return "deleted" if self.deleted_at else "paused" if self.paused else "active"


class ScheduleFire(models.Model):
    """One due time of one variant of a schedule: fired (a plan of jobs) or missed, with the reason."""

    schedule = models.ForeignKey(Schedule, on_delete=models.PROTECT, related_name="fires")
    due_at = models.DateTimeField()
    variant = models.CharField(max_length=100, blank=True)
    plan = models.OneToOneField(
        "registry.Plan", null=True, blank=True, on_delete=models.PROTECT, related_name="schedule_fire"
    )
    status = models.CharField(max_length=10, help_text="fired, partial (some agents missed) or missed")
    missed = JSONField(default=list, help_text='[{"agent": name, "reason": words}, ...]')
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-due_at", "variant"]
        constraints = [models.UniqueConstraint(fields=["schedule", "due_at", "variant"], name="schedule_fire_once")]

    def __str__(self) -> str:
        return f"fire of schedule {self.schedule_id} at {self.due_at:%Y-%m-%d %H:%M} {self.variant} ({self.status})"


class Series(models.Model):
    """One configuration on one agent over time: a schedule's variant, its agent, the software-axis key."""

    schedule = models.ForeignKey(Schedule, on_delete=models.PROTECT, related_name="series")
    variant = models.CharField(max_length=100, blank=True)
    agent = models.ForeignKey("registry.Agent", on_delete=models.PROTECT, related_name="series")
    config_key = models.CharField(max_length=71, help_text="protocol.changepoints.series_key of the runs")
    headline_metric = models.CharField(max_length=60)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "series"
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "variant", "agent", "config_key"], name="series_one_per_configuration"
            )
        ]

    def __str__(self) -> str:
        return f"series {self.pk} ({self.schedule.name} {self.variant} on {self.agent.name})"


class SeriesRun(models.Model):
    """A run's membership of its series, with its value for change detection (None: no positive headline)."""

    series = models.ForeignKey(Series, on_delete=models.PROTECT, related_name="members")
    run = models.OneToOneField("registry.Submission", on_delete=models.PROTECT, related_name="series_member")
    value = models.FloatField(null=True)
    joined_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id"]

    def __str__(self) -> str:
        return f"run {self.run_id} in series {self.series_id}"


class Alert(models.Model):
    """A run whose headline moved beyond noise against its series' recent history."""

    series = models.ForeignKey(Series, on_delete=models.PROTECT, related_name="alerts")
    run = models.OneToOneField("registry.Submission", on_delete=models.PROTECT, related_name="alert")
    previous = models.ForeignKey(
        "registry.Submission",
        on_delete=models.PROTECT,
        related_name="+",
        help_text="the latest reference run before the change",
    )
    reference_runs = JSONField(help_text="ids of the reference runs")
    ratio = models.FloatField()
    ci_low = models.FloatField()
    ci_high = models.FloatField()
    p_value = models.FloatField()
    direction = models.CharField(max_length=10)
    differences = JSONField(help_text="what else changed between the previous run and this one")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"alert {self.pk}: run {self.run_id} x{self.ratio:.3g}"
