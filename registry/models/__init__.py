"""The registry's tables. Evidence tables (submissions, audit entries) are append-only."""

from .agents import Agent, EnrolmentToken, Job, JobGroup, Plan
from .artifacts import RunArtifact
from .audit import AuditEntry, AuditHead, AuditQueued
from .catalogue import CatalogueCell
from .checkpoints import Checkpoint, Cosignature
from .citations import PublishedCitation
from .comparisons import Comparison, ComparisonRun
from .decisions import Decision, DecisionAnswer, DecisionEvidence, DecisionReport
from .reports import Report
from .series import Alert, Schedule, ScheduleFire, Series, SeriesRun
from .submissions import Submission, Withdrawal
from .tokens import ApiToken
from .webhooks import WebhookDelivery

__all__ = [
    "Agent",
    "ApiToken",
    "AuditEntry",
    "AuditHead",
    "AuditQueued",
    "CatalogueCell",
    "Checkpoint",
    "Comparison",
    "ComparisonRun",
    "Cosignature",
    "EnrolmentToken",
    "Job",
    "JobGroup",
    "Plan",
    "PublishedCitation",
    "Report",
    "RunArtifact",
    "Submission",
    "Withdrawal",
]
__all__ += ["Alert", "Schedule", "ScheduleFire", "Series", "SeriesRun"]  # series
# decisions
__all__ += ["Decision", "DecisionAnswer", "DecisionEvidence", "DecisionReport", "WebhookDelivery"]
