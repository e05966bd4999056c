"""The registry's tables. Evidence tables (submissions, audit entries) are append-only."""

from .agents import Agent, EnrolmentToken, Job, Plan
from .audit import AuditEntry, AuditHead
from .catalogue import CatalogueCell
from .checkpoints import Checkpoint
from .comparisons import Comparison, ComparisonRun
from .reports import Report
from .submissions import Submission, Withdrawal
from .tokens import ApiToken

__all__ = ["Agent", "ApiToken", "AuditEntry", "AuditHead", "CatalogueCell", "Checkpoint", "Comparison",
           "ComparisonRun", "EnrolmentToken", "Job", "Plan", "Report", "Submission", "Withdrawal"]
