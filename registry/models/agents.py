"""Enrolled agents, their single-use enrolment tokens, benchmark plans and the jobs dispatched to agents."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from registry.choices import GroupStatus, JobStatus

from .fields import JSONField


class EnrolmentToken(models.Model):
    """A single-use, expiring secret that lets one machine enrol as an agent. Only its hash is kept."""

    prefix = models.CharField(max_length=16, db_index=True, help_text="first characters, to recognise it")
    key_hash = models.CharField(max_length=64, unique=True)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by_name = models.CharField(max_length=150, help_text="who created it, snapshotted")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"enrolment {self.prefix}… ({'used' if self.used_at else 'unused'})"


class Agent(models.Model):
    """One enrolled lab machine: consumes its own Celery queue and acts through its own API token.

    `inventory` is the machine's environment capture at enrolment (refreshed by heartbeats that carry one).
    `online` is set by heartbeats and cleared by the sweep task; `is_online` also checks the heartbeat's age,
    so a missed sweep never shows a dead agent as online.
    """

    name = models.CharField(max_length=60, unique=True)
    queue = models.CharField(max_length=120, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="agents")
    token = models.OneToOneField("registry.ApiToken", on_delete=models.PROTECT, related_name="agent")
    enrolment = models.OneToOneField(
        EnrolmentToken, null=True, blank=True, on_delete=models.PROTECT, related_name="agent"
    )
    embedded = models.BooleanField(default=False, help_text="the registry's own in-process agent")
    inventory = JSONField(default=dict)
    enrolled_at = models.DateTimeField(default=timezone.now)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    online = models.BooleanField(default=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"agent {self.name}"

    @property
    def is_online(self) -> bool:
        if self.revoked_at is not None or self.last_heartbeat_at is None or not self.online:
            return False
        stale = timezone.now() - timedelta(seconds=settings.BENCHREG_AGENT_OFFLINE_AFTER)
        return self.last_heartbeat_at >= stale


class Plan(models.Model):
    """A benchmark plan: one runner configuration grid, for one or more agents. Expands into jobs."""

    name = models.CharField(max_length=200, blank=True)
    runner = models.CharField(max_length=20, help_text="inference or training")
    workload = models.CharField(max_length=100)
    precisions = JSONField()
    batch_sizes = JSONField(help_text="list of batch sizes; [null] means the workload default")
    scenario = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001 - None: runner default
    repetitions = models.PositiveIntegerField(null=True, blank=True)
    options = JSONField(default=dict, help_text="further RunSpec fields (quick, backend, steps, ...)")
    soft_time_limit = models.PositiveIntegerField(help_text="seconds; the job is told to stop")
    time_limit = models.PositiveIntegerField(help_text="seconds; the job is killed")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"plan {self.pk} {self.runner} {self.workload}"


class JobGroup(models.Model):
    """Jobs of one plan on several agents that start together or not at all: one multi-node run (issue 43, item 4).

    Each member job is one agent's rank (`Job.group_rank`, its place in the plan's agents). The group is claimed
    once: it starts (FORMING -> STARTED, every member CLAIMED -> RUNNING in one conditional update) when every
    member has arrived before `form_deadline_at` and rank 0 has given the rendezvous endpoint its members meet at
    (torch.distributed's c10d store, `rendezvous_id` its run id). Past the deadline a forming group fails, naming
    who did not arrive; a member that fails or stops heartbeating fails the group and every other member with the
    reason. Rank 0 alone submits, and `run` is the group's one run.
    """

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="groups")
    status = models.CharField(max_length=20, choices=GroupStatus.choices, default=GroupStatus.FORMING, db_index=True)
    size = models.PositiveIntegerField(help_text="member jobs (agents, nodes)")
    rendezvous_id = models.CharField(max_length=64, unique=True)
    rendezvous_endpoint = models.CharField(max_length=300, blank=True, help_text="host:port, given by rank 0")
    form_deadline_at = models.DateTimeField(help_text="every member must have arrived by then, or nobody starts")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    run = models.OneToOneField(
        "registry.Submission", null=True, blank=True, on_delete=models.PROTECT, related_name="job_group"
    )
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"group {self.pk} ({self.status}) of {self.size}"


class Job(models.Model):
    """One configuration of a plan on one agent: a row with a lifecycle, linked to at most one run.

    `run` is unique: a run belongs to at most one job, and a job holds at most one run. It is set in the same
    transaction that stores the run (see services.jobs.job_submission_create), with the job row locked.
    `claimant`/`lease_expires_at`: who holds the job now and until when; the holder renews the lease with
    heartbeats, and another worker of the same agent may take the job over only once the lease has lapsed.
    """

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="jobs")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="jobs")
    agent_name = models.CharField(max_length=60, help_text="snapshotted")
    spec = JSONField(help_text="the runners.api.RunSpec fields this job runs")
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    soft_time_limit = models.PositiveIntegerField()
    time_limit = models.PositiveIntegerField()
    attempts = models.PositiveIntegerField(default=0)
    claimant = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    run = models.OneToOneField(
        "registry.Submission", null=True, blank=True, on_delete=models.PROTECT, related_name="job"
    )
    last_error = models.TextField(blank=True)
    group = models.ForeignKey(JobGroup, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs")
    group_rank = models.PositiveIntegerField(null=True, blank=True, help_text="this agent's rank in its group")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["agent", "status"])]
        constraints = [
            models.UniqueConstraint(fields=["group", "group_rank"], name="job_group_rank_unique"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.status}) on {self.agent_name}"
