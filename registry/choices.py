"""TextChoices for every status and kind the registry stores."""

from django.db import models


class Scope(models.TextChoices):
    SUBMIT = "submit", "submit runs"
    READ = "read", "read runs"
    AGENT = "agent", "act as an enrolled agent"


class SubmissionSource(models.TextChoices):
    RUNNER = "runner", "bundled runner"
    MANUAL = "manual", "manual"
    IMPORT = "import", "import"


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
