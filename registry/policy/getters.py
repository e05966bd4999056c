"""What a principal may see: querysets narrowed to it, and getters that fetch one object through the selectors and
return it only if the principal may act on it. Otherwise they raise Hidden (a 404, both as a registry NotFound for
the API and as Http404 for pages), the same as for an object that does not exist, so nobody learns what exists
behind a rule.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.db.models import Q, QuerySet

from registry.exceptions import NotFound
from registry.models import Schedule, Series
from registry.policy.actions import (
    AGENT_READ,
    COMPARISON_READ,
    DECISION_READ,
    JOB_READ,
    PLAN_READ,
    REPORT_READ,
    RUN_READ,
    SCHEDULE_READ,
    SERIES_READ,
    TOKEN_MANAGE,
    TOKEN_READ,
)
from registry.policy.rules import ADMIN, AGENT, READ, Hidden, Principal, can, require
from registry.selectors.agents import agent_get as select_agent
from registry.selectors.agents import job_get as select_job
from registry.selectors.agents import plan_get as select_plan
from registry.selectors.comparisons import comparison_get as select_comparison
from registry.selectors.decisions import decision_get as select_decision
from registry.selectors.reports import report_get as select_report
from registry.selectors.series import alert_list
from registry.selectors.submissions import submission_get
from registry.selectors.tokens import token_get_for

# --- querysets ----------------------------------------------------------------------------------------------


def visible_reports(principal: Principal, reports: QuerySet[Any]) -> QuerySet[Any]:
    if not principal.has(READ):
        return reports.none()
    return reports if principal.has(ADMIN) else reports.filter(requested_by_id=principal.user_id)


def visible_plans(principal: Principal, plans: QuerySet[Any]) -> QuerySet[Any]:
    if principal.is_person and principal.has(ADMIN):
        return plans
    if principal.is_person and principal.has(READ):
        return plans.filter(created_by_id=principal.user_id)
    return plans.none()


def visible_jobs(principal: Principal, jobs: QuerySet[Any]) -> QuerySet[Any]:
    if principal.agent is not None:
        return jobs.filter(agent_id=principal.agent.pk) if principal.has(AGENT) else jobs.none()
    if principal.is_person and principal.has(ADMIN):
        return jobs
    if principal.is_person and principal.has(READ):
        return jobs.filter(Q(plan__created_by_id=principal.user_id))
    return jobs.none()


def visible_decisions(principal: Principal, decisions: QuerySet[Any]) -> QuerySet[Any]:
    if not principal.has(READ):
        return decisions.none()
    return decisions if principal.has(ADMIN) else decisions.filter(owner_id=principal.user_id)


def visible_schedules(principal: Principal, schedules: QuerySet[Any]) -> QuerySet[Any]:
    if principal.is_person and principal.has(ADMIN):
        return schedules
    if principal.is_person and principal.has(READ):
        return schedules.filter(created_by_id=principal.user_id)
    return schedules.none()


# --- getters ------------------------------------------------------------------------------------------------


def _get(principal: Principal, action: str, fetch: Callable[[], Any], what: str) -> Any:
    """The object if it exists and the principal may `action` it; otherwise Hidden, the same either way."""
    try:
        obj = fetch()
    except NotFound:
        raise Hidden(f"no {what}") from None
    if not can(principal, action, obj):
        raise Hidden(f"no {what}")
    return obj


def _first(queryset: QuerySet[Any], what: str) -> Any:
    """The queryset's first row, or NotFound naming `what`."""
    found = queryset.first()
    if found is None:
        raise NotFound(f"no {what}")
    return found


def run_get(principal: Principal, run_id: int, action: str = RUN_READ) -> Any:
    """A run the principal may `action` (read, by default; an admin token without `read` may still withdraw)."""
    return _get(principal, action, partial(submission_get, run_id=run_id), f"run {run_id}")


def comparison_get(principal: Principal, comparison_id: int) -> Any:
    fetch = partial(select_comparison, comparison_id=comparison_id)
    return _get(principal, COMPARISON_READ, fetch, f"comparison {comparison_id}")


def decision_get(principal: Principal, decision_id: int) -> Any:
    return _get(principal, DECISION_READ, partial(select_decision, decision_id=decision_id), f"decision {decision_id}")


def report_get(principal: Principal, report_id: int) -> Any:
    return _get(principal, REPORT_READ, partial(select_report, report_id=report_id), f"report {report_id}")


def token_get(principal: Principal, token_id: int) -> Any:
    require(principal, TOKEN_MANAGE)
    fetch = partial(token_get_for, user=principal.user, token_id=token_id)
    return _get(principal, TOKEN_READ, fetch, f"token {token_id}")


def agent_get(principal: Principal, agent_id: int, action: str = AGENT_READ) -> Any:
    return _get(principal, action, partial(select_agent, agent_id=agent_id), f"agent {agent_id}")


def plan_get(principal: Principal, plan_id: int) -> Any:
    return _get(principal, PLAN_READ, partial(select_plan, plan_id=plan_id), f"plan {plan_id}")


def job_get(principal: Principal, job_id: int, action: str = JOB_READ) -> Any:
    """A job the principal may `action`; one it may read but not act on is 403, anything else 404."""
    job = _get(principal, JOB_READ, partial(select_job, job_id=job_id), f"job {job_id}")
    if action != JOB_READ:
        require(principal, action, job, hidden=False)
    return job


def schedule_get(principal: Principal, schedule_id: int, action: str = SCHEDULE_READ) -> Any:
    """A schedule the principal may `action`: one it may read but not change is 403, anything else 404."""
    what = f"schedule {schedule_id}"
    fetch = partial(_first, Schedule.objects.select_related("plan").filter(pk=schedule_id), what)
    schedule = _get(principal, SCHEDULE_READ, fetch, what)
    if action != SCHEDULE_READ:
        require(principal, action, schedule, hidden=False)
    return schedule


def series_get(principal: Principal, series_id: int) -> Any:
    what = f"series {series_id}"
    fetch = partial(_first, Series.objects.select_related("agent", "schedule").filter(pk=series_id), what)
    return _get(principal, SERIES_READ, fetch, what)


def alert_get(principal: Principal, alert_id: int) -> Any:
    what = f"alert {alert_id}"
    return _get(principal, SERIES_READ, partial(_first, alert_list().filter(pk=alert_id), what), what)
