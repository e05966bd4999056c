"""TextChoices for every status and kind the registry stores."""

from django.db import models


class Scope(models.TextChoices):
    SUBMIT = "submit", "submit runs"
    READ = "read", "read runs"
    AGENT = "agent", "act as an enrolled agent"
    ADMIN = "admin", "administer: enrolment, agents, withdrawals, any job (admins only)"


class Trust(models.TextChoices):
    """How far the registry itself stands behind a run: set by the path the run came in, never read from it."""

    VOUCHED = "vouched", "vouched: measured by an enrolled agent for a registry job"
    DECLARED = "declared", "declared: submitted by a token holder, self-declared"
    IMPORTED = "imported", "imported: from a published source (MLPerf)"
    EXAMPLE = "example", "example: a hand-written example document, not a measurement"


class AuditKind(models.TextChoices):
    RUN_SUBMITTED = "run.submitted", "run submitted"
    RUN_WITHDRAWN = "run.withdrawn", "run withdrawn"
    COMPARISON_CREATED = "comparison.created", "comparison created"
    REPORT_ISSUED = "report.issued", "report issued"
    AGENT_ENROLLED = "agent.enrolled", "agent enrolled"
    AGENT_REVOKED = "agent.revoked", "agent revoked"
    ENROLMENT_CREATED = "enrolment.created", "enrolment token created"
    TOKEN_CREATED = "token.created", "token created"
    TOKEN_REVOKED = "token.revoked", "token revoked"
    JOB_STATE = "job.state", "job state changed"
    IMPORT_COMPLETED = "import.completed", "import completed"
    SCHEDULE_CHANGED = "schedule.changed", "schedule created, changed, paused, resumed or deleted"
    SCHEDULE_FIRED = "schedule.fired", "schedule fired or missed"
    SERIES_ALERT = "series.alert", "series alert raised"
    DECISION_CREATED = "decision.created", "decision created"
    DECISION_ANSWERED = "decision.answered", "decision answered"
    DECISION_REPORTED = "decision.reported", "decision's answer reported"
    DECISION_PLANNED = "decision.planned", "plan created for a decision's gap"
    DECISION_EVIDENCE_CHANGED = "decision.evidence_changed", "decision evidence changed"
    WEBHOOK_FINISHED = "webhook.finished", "webhook delivery finished"
    ARTIFACT_STORED = "artifact.stored", "a file the run's document names uploaded and kept"


class DecisionStatus(models.TextChoices):
    """Whether a decision's latest answer still stands (CURRENT) or a run it cites, or one entering its question,
    changed since (EVIDENCE_CHANGED, until it is answered again)."""

    CURRENT = "current", "current"
    EVIDENCE_CHANGED = "evidence-changed", "evidence changed"


class CheckpointReason(models.TextChoices):
    PERIODIC = "periodic", "periodic (Celery beat)"
    REPORT = "report", "report issued"
    MANUAL = "manual", "signed by hand"


class JobStatus(models.TextChoices):
    """A benchmark job's lifecycle. SUBMITTED, FAILED, CANCELLED and TIMED_OUT are final."""

    QUEUED = "queued", "queued"
    CLAIMED = "claimed", "claimed"
    RUNNING = "running", "running"
    SUBMITTED = "submitted", "submitted"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"
    TIMED_OUT = "timed_out", "timed out"

    @classmethod
    def active(cls) -> list[str]:
        """States in which an agent holds or may take the job."""
        return [cls.QUEUED, cls.CLAIMED, cls.RUNNING]

    @classmethod
    def final(cls) -> list[str]:
        return [cls.SUBMITTED, cls.FAILED, cls.CANCELLED, cls.TIMED_OUT]


class GroupStatus(models.TextChoices):
    """A job group's lifecycle (jobs on several agents that start together or not at all). SUBMITTED and FAILED
    are final: a group that failed never starts again."""

    FORMING = "forming", "forming"
    STARTED = "started", "started"
    SUBMITTED = "submitted", "submitted"
    FAILED = "failed", "failed"


class ReportStatus(models.TextChoices):
    """A decision report's lifecycle. READY and FAILED are final; a READY report's file never changes."""

    QUEUED = "queued", "queued"
    RENDERING = "rendering", "rendering"
    READY = "ready", "ready"
    FAILED = "failed", "failed"
