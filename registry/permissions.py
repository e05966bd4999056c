"""Permission-checking getters for the browsing pages, as thin calls to registry.policy.

A getter either returns the object the user may see or raises Http404 (policy.Hidden is an Http404) — the same
answer as for an object that does not exist, so pages never reveal what exists behind a role.
"""

from __future__ import annotations

from typing import Any

from registry import policy
from registry.models import Agent, ApiToken, Comparison, Job, Report, Submission
from registry.policy import ADMIN, READ


def roles_of(user: Any) -> set[str]:
    """The user's roles with what they imply: an admin is also a submitter and a viewer."""
    return set(policy.user_roles(user))


def require_read(user: Any) -> None:
    if not policy.for_user(user).has(READ):
        raise policy.Hidden("nothing here")


def run_for_user(user: Any, run_id: int) -> Submission:
    return policy.run_get(policy.for_user(user), run_id)  # type: ignore[no-any-return]


def comparison_for_user(user: Any, comparison_id: int) -> Comparison:
    return policy.comparison_get(policy.for_user(user), comparison_id)  # type: ignore[no-any-return]


def report_for_user(user: Any, report_id: int) -> Report:
    """A decision report the user requested; admins see every report."""
    return policy.report_get(policy.for_user(user), report_id)  # type: ignore[no-any-return]


def reports_for_user(user: Any, comparison: Comparison, limit: int = 10) -> list[Report]:
    """The latest reports on a comparison that the user may see (their own; an admin's: everyone's)."""
    require_read(user)
    reports = Report.objects.filter(comparison=comparison).order_by("-id")
    return list(policy.visible_reports(policy.for_user(user), reports)[:limit])


def token_for_user(user: Any, token_id: int) -> ApiToken:
    """One of the user's own API tokens."""
    return policy.token_get(policy.for_user(user), token_id)  # type: ignore[no-any-return]


def agent_for_admin(user: Any, agent_id: int) -> Agent:
    return policy.agent_get(policy.for_user(user), agent_id)  # type: ignore[no-any-return]


def job_for_admin(user: Any, job_id: int) -> Job:
    return policy.job_get(policy.for_user(user), job_id)  # type: ignore[no-any-return]


__all__ = [
    "ADMIN",
    "agent_for_admin",
    "comparison_for_user",
    "job_for_admin",
    "report_for_user",
    "reports_for_user",
    "require_read",
    "roles_of",
    "run_for_user",
    "token_for_user",
]
