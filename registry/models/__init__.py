"""The registry's tables. Evidence tables (submissions, audit entries) are append-only."""

from .audit import AuditEntry, AuditHead
from .submissions import Submission, Withdrawal
from .tokens import ApiToken

__all__ = ["ApiToken", "AuditEntry", "AuditHead", "Submission", "Withdrawal"]
