"""Permission-checking getters for the browsing pages: what a user may not see is 'not found' (404).

Roles (registry.roles): any signed-in user may browse, compare and request reports (viewer); submitters
also manage their API tokens; admins see agents and jobs and withdraw runs. A getter either returns the
object the user may see or raises Http404 — the same answer as for an object that does not exist, so pages
never reveal what exists behind a role.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404

from registry.exceptions import NotFound
from registry.models import Agent, ApiToken, Comparison, Job, Report, Submission
from registry.roles import ADMIN, SUBMITTER, VIEWER, user_roles, user_scopes
from registry.selectors.agents import agent_get, job_get
from registry.selectors.comparisons import comparison_get
from registry.selectors.submissions import submission_get
from registry.selectors.tokens import token_get_for

User = AbstractBaseUser | AnonymousUser


IMPLIED = {ADMIN: {ADMIN, SUBMITTER, VIEWER}, SUBMITTER: {SUBMITTER, VIEWER}, VIEWER: {VIEWER}}


def roles_of(user: User) -> set[str]:
    """The user's roles with what they imply: an admin is also a submitter and a viewer."""
    return {implied for role in user_roles(user) for implied in IMPLIED[role]}  # type: ignore[arg-type]


def can(user: User, role: str) -> bool:
    return role in roles_of(user)


def require_role(user: User, role: str) -> None:
    """404 unless the user holds `role` (admins hold every role)."""
    if not can(user, role):
        raise Http404(f"no such page for role {role}")


def require_read(user: User) -> None:
    if "read" not in user_scopes(user):  # type: ignore[arg-type]
        raise Http404("nothing here")


def run_for_user(user: User, run_id: int) -> Submission:
    """A run the user may read (every signed-in user may: runs are public evidence inside the registry)."""
    require_read(user)
    try:
        return submission_get(run_id=run_id)
    except NotFound:
        raise Http404(f"no run {run_id}") from None


def comparison_for_user(user: User, comparison_id: int) -> Comparison:
    require_read(user)
    try:
        return comparison_get(comparison_id=comparison_id)
    except NotFound:
        raise Http404(f"no comparison {comparison_id}") from None


def report_for_user(user: User, report_id: int) -> Report:
    """A decision report the user requested; admins see every report. Anyone else's is 'not found'."""
    require_read(user)
    reports = Report.objects.select_related("comparison")
    if not can(user, ADMIN):
        reports = reports.filter(requested_by=user)
    report = reports.filter(pk=report_id).first()
    if report is None:
        raise Http404(f"no report {report_id}")
    return report


def reports_for_user(user: User, comparison: Comparison, limit: int = 10) -> list[Report]:
    """The latest reports on a comparison that the user may see (their own; an admin's: everyone's)."""
    require_read(user)
    reports = Report.objects.filter(comparison=comparison).order_by("-id")
    if not can(user, ADMIN):
        reports = reports.filter(requested_by=user)
    return list(reports[:limit])


def token_for_user(user: User, token_id: int) -> ApiToken:
    """One of the submitter's own API tokens."""
    require_role(user, SUBMITTER)
    try:
        return token_get_for(user=user, token_id=token_id)  # type: ignore[arg-type]
    except NotFound:
        raise Http404(f"no token {token_id}") from None


def agent_for_admin(user: User, agent_id: int) -> Agent:
    require_role(user, ADMIN)
    try:
        return agent_get(agent_id=agent_id)
    except NotFound:
        raise Http404(f"no agent {agent_id}") from None


def job_for_admin(user: User, job_id: int) -> Job:
    require_role(user, ADMIN)
    try:
        return job_get(job_id=job_id)
    except NotFound:
        raise Http404(f"no job {job_id}") from None
